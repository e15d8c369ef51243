// The time of an event: CLOCK_MONOTONIC in ns, read from the CPU's time-stamp counter where the
// kernel's own clock is that counter (one rdtsc instead of the vDSO's ordered read: ~30 of the
// ~100 ns an event cost on the EPYC VM, issue 14).
#pragma once

#include <cstdint>

#include "event_globals.h"

namespace gmemhook {

// Decides at start-up whether event times may come from the TSC: only when `allowed`
// (GMEMHOOK_TSC is not 0) and the kernel keeps CLOCK_MONOTONIC on it (clocksource "tsc": the
// counters are in step on every CPU and tick at a fixed rate, or the kernel would not use them).
void init_event_time(bool allowed);

// CLOCK_MONOTONIC now, in ns. From the TSC: this thread's last reading of the real clock (at most
// ~100 µs ago) plus the ticks since then at the rate the real clock advanced over the last
// ~0.1 s, both measured here: within a few ns of clock_gettime's value. Until that rate is known
// (the process's first ~30 ms), and without the TSC, clock_gettime itself. Not ordered
// against the instructions around it, as clock_gettime's read is: a time may be taken up to the
// few dozen ns a core runs ahead early, finer than the log's 32 ns units mostly. The writer keeps
// a thread's times non-decreasing (recorder.cpp); across threads the sequence number orders.
inline uint64_t event_time_ns();

// Whether event_time_ns() reads the TSC now (tests).
bool event_time_from_tsc();

namespace event_time_detail {

// A thread reads the real clock again after this many ticks (65–130 µs at 2–4 GHz): the rate's
// error grows no further than that, and dt * mult stays inside 64 bits.
inline constexpr uint64_t kAnchorTicks = uint64_t{1} << 18;

// This thread's last reading of the real clock, and the rate (ns per tick, times 2^32) known
// then: what the usual event needs, in one place of the thread's own. tsc is set so that no
// tick is near it while there is no reading or no rate yet.
struct Anchor {
  uint64_t tsc = 0, ns = 0, mult = 0;
};
// initial-exec: a preloaded library's TLS is static, and the dynamic model could call malloc.
inline thread_local Anchor t_anchor __attribute__((tls_model("initial-exec")));
inline bool& g_use_tsc = g_event_globals.use_tsc;  // event_globals.h

// The real clock, or a new anchor read from it (event_time.cpp).
uint64_t event_time_slow();

}  // namespace event_time_detail

// Inline, as every event takes one: the usual reading is a counter read, a subtraction and a
// compare, a multiply. rdtsc, not rdtscp or a fence: nothing is serialised (see above).
inline uint64_t event_time_ns() {
  using namespace event_time_detail;
  if (g_use_tsc) [[likely]] {
    const Anchor& a = t_anchor;
    const uint64_t dt = __builtin_ia32_rdtsc() - a.tsc;
    if (dt < kAnchorTicks) [[likely]]
      return a.ns + ((dt * a.mult) >> 32);
  }
  return event_time_slow();
}

}  // namespace gmemhook

// The time of an event: CLOCK_MONOTONIC in ns, by default as of the kernel's last tick (the
// coarse clock), with GMEMHOOK_TIME=precise read from the CPU's time-stamp counter where the
// kernel's own clock is that counter (one rdtsc instead of the vDSO's ordered read: ~30 of the
// ~100 ns an event cost on the EPYC VM).
#pragma once

#include <time.h>

#include <cstdint>

#include "interposer/base/event_globals.h"

namespace gmemhook {

// Where event times come from (event_globals.h holds it): the coarse clock or the precise one
// (precise_time_ns below: the time-stamp counter where usable, else clock_gettime of
// CLOCK_MONOTONIC). The coarse clock (the default; GMEMHOOK_TIME=precise for the other) is
// CLOCK_MONOTONIC_COARSE, the kernel's clock as of its last tick (1–4 ms ago: its resolution,
// clock_getres), read from the vDSO's data page with no counter read. On the GPU machine's Xeon
// host the counter read alone was ~20 ns, the coarse read ~7 ns, and an event cost ~27 ns less
// with coarse times: 44.6 against 71.2 ns at 32 frames; heaptrack's own times are 10 ms steps.

// Decides at start-up where event times come from: the coarse clock when `coarse`, else the
// precise clock. That one (precise_time_ns, also what GMEMHOOK_STACK_STATS times events with)
// reads the TSC when `tsc_allowed` (GMEMHOOK_TSC is not 0) and the kernel keeps CLOCK_MONOTONIC
// on it (clocksource "tsc": the counters are in step on every CPU and tick at a fixed rate, or
// the kernel would not use them); else clock_gettime.
void init_event_time(bool tsc_allowed, bool coarse);

// The process's start on the events' clock: with coarse times the coarse clock too, so that no
// event of the process is timed before its start.
uint64_t event_clock_start_ns();

// The step of event times in ns, for the files' headers (format.h, FileHeader::time_step_ns):
// the coarse clock's resolution with coarse times, 1 with precise ones, 0 before
// init_event_time.
uint64_t event_time_step_ns();

// An event's time: the coarse clock's (the kernel's last tick) or the precise clock's.
inline uint64_t event_time_ns();

// CLOCK_MONOTONIC now, in ns. From the TSC: this thread's last reading of the real clock (at
// most ~100 µs ago) plus the ticks since then at the rate the real clock advanced over the last
// ~0.1 s, both measured here: within a few ns of clock_gettime's value. Until that rate is known
// (the process's first ~30 ms), and without the TSC, clock_gettime itself. Not ordered
// against the instructions around it, as clock_gettime's read is: a time may be taken up to the
// few dozen ns a core runs ahead early, finer than the log's 32 ns units mostly. The writer keeps
// a thread's times non-decreasing (recorder.cpp); across threads the sequence number orders.
inline uint64_t precise_time_ns();

// Whether event_time_ns() reads the TSC now (tests).
bool event_time_from_tsc();

// CLOCK_MONOTONIC now, in ns, from clock_gettime: the real clock itself, for what is timed apart
// from events (waits, NVML samples, the end record, GMEMHOOK_STACK_STATS's capture timing).
uint64_t monotonic_ns();

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

// The real clock, or a new anchor read from it (event_time.cpp).
uint64_t precise_time_slow();

inline uint64_t coarse_ns() {
  timespec ts{};
  g_event_globals.coarse_clock(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace event_time_detail

// Inline, as every event takes one. The coarse clock: the vDSO's read of the kernel's last
// tick, called straight, not through glibc's clock_gettime (16.5 against 24.2 TSC ticks a read
// on the development VM, vdso_clock.h). The precise one: a counter read,
// a subtraction and a compare, a multiply; rdtsc, not rdtscp or a fence: nothing is serialised
// (see above).
inline uint64_t event_time_ns() {
  if (g_event_globals.coarse_time) [[likely]]
    return event_time_detail::coarse_ns();
  return precise_time_ns();
}

inline uint64_t precise_time_ns() {
  using namespace event_time_detail;
  if (g_event_globals.tsc_usable) [[likely]] {
    const Anchor& a = t_anchor;
    const uint64_t dt = __builtin_ia32_rdtsc() - a.tsc;
    if (dt < kAnchorTicks) [[likely]]
      return a.ns + ((dt * a.mult) >> 32);
  }
  return precise_time_slow();
}

}  // namespace gmemhook

// The time of an event: CLOCK_MONOTONIC in ns, read from the CPU's time-stamp counter where the
// kernel's own clock is that counter (one rdtsc instead of the vDSO's ordered read: ~30 of the
// ~100 ns an event cost on the EPYC VM, issue 14).
#pragma once

#include <cstdint>

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
uint64_t event_time_ns();

// Whether event_time_ns() reads the TSC now (tests).
bool event_time_from_tsc();

}  // namespace gmemhook

// The clocks the writer stamps its logs with, read the same way here: `gmemhook top` places
// "now" on the log's time axis (CLOCK_MONOTONIC) and a process's start on the wall clock.
#pragma once

#include <time.h>

#include <cstdint>

namespace gmemhook::analysis {

inline uint64_t clock_now_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}
inline uint64_t monotonic_now_ns() { return clock_now_ns(CLOCK_MONOTONIC); }
inline uint64_t realtime_now_ns() { return clock_now_ns(CLOCK_REALTIME); }

}  // namespace gmemhook::analysis

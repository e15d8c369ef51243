// What every recorded event reads of the process's own state, on one cache line: whether
// recording is on (and not paused), whether the exit is sealing the threads' logs, the fork
// generation, whether there is an interpreter to walk,
// where times come from, the driver's cuCtxGetDevice, the unload generation, and what the NVML
// sampler's test after an event reads (nvml_sampler.h). Kept with the modules that own them these
// words would lie on several lines, and in a program whose own work evicts the hook's lines
// between two events each line is a cache miss an event. Each field is written by the module
// named beside it only; every module reads and writes its own here, as g_event_globals.<field>.
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>

namespace gmemhook {

struct alignas(64) EventGlobals {
  std::atomic<uint8_t> recording{0};              // recorder.h: kRecordingOn, kRecordingPaused
  std::atomic<bool> python_walk{false};           // python_frames.h
  bool coarse_time = false;                       // event_time.h
  bool tsc_usable = false;                        // event_time.h
  std::atomic<bool> nvml_first_call_done{false};  // nvml_sampler.h
  std::atomic<bool> nvml_first_allocation_done{false};  // nvml_sampler.cpp
  std::atomic<bool> sealing_logs{false};                // recorder.h, seal_thread_logs
  // Moves each time the dlclose wrapper or a rule lookup sees that the loader unloaded objects
  // (unload_watch.h): a thread whose walks were learnt at another value drops them before its
  // next walk.
  std::atomic<uint64_t> unload_generation{0};
  std::atomic<uint64_t> fork_generation{0};    // process_log.h
  std::atomic<void*> ctx_get_device{nullptr};  // recorder.cpp (its type needs cuda.h)
  // nvml_sampler.cpp: the CUDA ordinals the process used (bits) and when an allocation last
  // asked the sampler for a peak check. Written by allocations only, a few times a second at
  // most (a new device, a quarter interval gone): the sampler thread's own words stay elsewhere.
  std::atomic<uint64_t> nvml_devices{0};
  std::atomic<uint64_t> nvml_last_peak_request_ns{0};
  // event_time.h: what reads the coarse clock, the vDSO's own clock_gettime once found
  // (vdso_clock.h), glibc's until then and where there is none.
  int (*coarse_clock)(clockid_t, timespec*) = ::clock_gettime;
};
static_assert(sizeof(EventGlobals) == 64);

inline constinit EventGlobals g_event_globals;

}  // namespace gmemhook

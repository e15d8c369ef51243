// What every recorded event reads of the process's own state, on one cache line: whether
// recording is on (and not paused), the fork generation, whether there is an interpreter to walk,
// where times come from, the driver's cuCtxGetDevice, and the unload generation. Spread
// over the modules that own them they lay on five lines (one of them the sequence number's, which
// every event writes): in a program whose own work evicts the hook's lines between two events, each
// was a miss (issue 14). Each module still names its own under its old name (a reference to the
// field here).
#pragma once

#include <atomic>
#include <cstdint>

namespace gmemhook {

struct alignas(64) EventGlobals {
  std::atomic<uint8_t> recording{0};     // recorder.h: kRecordingOn, kRecordingPaused
  std::atomic<bool> python_walk{false};  // python_frames.h
  uint8_t time_source = 0;               // event_time.h: TimeSource
  bool tsc_usable = false;               // event_time.h
  // Moves each time the dlclose wrapper or a rule lookup sees that the loader unloaded objects
  // (unload_watch.h): a thread whose walks were learnt at another value drops them before its
  // next walk.
  std::atomic<uint64_t> unload_generation{0};
  std::atomic<uint64_t> fork_generation{0};    // process_log.h
  std::atomic<void*> ctx_get_device{nullptr};  // recorder.cpp (its type needs cuda.h)
};
static_assert(sizeof(EventGlobals) == 64);

inline EventGlobals g_event_globals;

}  // namespace gmemhook

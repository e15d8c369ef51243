// Which thread is inside the recorder's non-reentrant parts: a log append, the process-file or
// registry lock. A signal handler that calls CUDA on that thread must not record (it would
// interleave two appends to one chunk, or spin forever on a lock its own thread holds); its call
// passes through and is counted as not recorded instead.
#pragma once

#include "interposer/base/thread_state.h"

namespace gmemhook {

// Set before a lock is tried (a handler that runs while this thread spins must not spin too).
class BusyScope {
 public:
  BusyScope() { ++t_state.busy; }
  ~BusyScope() { --t_state.busy; }
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;
};

inline bool thread_busy() { return t_state.busy != 0; }

}  // namespace gmemhook

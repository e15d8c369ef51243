// What every hooked call reads and writes of its own thread, in one thread-local struct: each
// initial-exec variable of a shared library costs a load of its own TLS offset from the GOT, and
// a recorded pair of calls touches these ~20 times.
#pragma once

#include <cstdint>

namespace gmemhook {

struct ThreadLog;  // thread_log.h

struct ThreadState {
  // How deep the thread is inside the recorder's non-reentrant parts (busy.h).
  int busy = 0;
  // How deep the thread is in hooked calls, and the depth of a signal handler's call counted as
  // skipped, 0 when none (recorder.h, CallScope).
  int call_depth = 0;
  int skipped_depth = 0;
  // Where this thread's errno lives, once asked of libc (recorder.h, errno_at).
  int* errno_at = nullptr;
  // The thread's log (thread_log.h, thread_log()): here rather than a thread_local of its own, so
  // that a recorded event finds it through the TLS offset it already loaded for the above.
  ThreadLog* log = nullptr;
  // In a fork child, the log the forking thread had in its parent (recorder.cpp,
  // recorder_fork_child), dropped at the thread's next event.
  ThreadLog* parents_log = nullptr;
  // Stacks the thread captured, counted up to unwinder.h's kStepCaptures (capture_stack).
  uint32_t captures = 0;
};

// initial-exec: a preloaded library's TLS is static, and the dynamic model could call malloc
// on first access.
inline thread_local ThreadState t_state __attribute__((tls_model("initial-exec")));

}  // namespace gmemhook

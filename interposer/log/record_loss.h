// What the recorder could not write: once a log write fails (disk full, quota, file limit) the
// failure latches, the program runs on untouched, and the events that follow are only counted,
// so the end record and the exit line can say how much of the log is missing.
#pragma once

#include <cstdint>

namespace gmemhook {

struct LossReport {
  uint64_t not_recorded = 0;  // events that took a sequence number but were not written
  uint64_t first_seq = 0;     // the first of them (0 when none)
  int error = 0;              // errno of the first write failure
};

// Counts one event (sequence number `seq`) that could not be written because of `error`, and
// prints the process's one warning the first time, naming `path`. Lock-free and malloc-free.
void note_not_recorded(uint64_t seq, const char* path, int error);
// Counts one event (sequence number `seq`) that was passed through unrecorded while the log is
// fine: a CUDA call from a signal handler that interrupted the recorder on the same thread, or
// a first call that could not wait for another thread to open the log. No latch, no warning:
// the end record and the exit line count it. Async-signal-safe.
void note_skipped(uint64_t seq);
// Whether a write failed in this process: then no new log file is even attempted.
bool recording_broken();
LossReport loss_report();
void loss_fork_child();

}  // namespace gmemhook

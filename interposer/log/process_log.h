// The traced process's log directory and its process.gmh file: process header, module-map
// snapshots, notes and the end record. Everything thread-specific lives in recorder.cpp.
#pragma once

#include <atomic>
#include <cstdint>

#include "gmemhook/codec.h"
#include "interposer/base/event_globals.h"
#include "interposer/log/record_loss.h"

namespace gmemhook {

// Creates <out>/<exe>.<pid>/ (or ./gmemhook.<exe>.<pid>/) and process.gmh, writes ProcessInfo
// and the first module snapshot. On failure prints one warning (if `warn`) and returns false:
// the program then runs on untouched and nothing is recorded. Malloc-free (fork children).
bool open_process_log(bool warn);

// Opens the log at the process's first CUDA call (a process that never uses CUDA leaves no
// directory), once: concurrent first calls wait for the one opening it, a failure is warned
// about once and never retried. True when the log is usable.
bool ensure_process_log();

// Whether opening the log failed (warned once, never retried).
bool process_log_failed();
// Whether this process (this pid) has a usable log; false before open or after failure.
bool process_log_ready();
// Whether the calling process is the one that opened the log (false in a vfork child).
bool owns_process_log();
const char* process_dir();
// The process directory, open (O_DIRECTORY | O_NOFOLLOW): create log files relative to it.
int process_dir_fd();
const char* process_dir_for_display();

// Process-wide sequence numbers, giving a total order of events across threads. Inline: every
// event takes one. The one variable every recording thread writes on every event: its line moves
// between their cores, so it has that line to itself. Left to the linker it would share one with
// whatever comes next in .bss, and a variable read on the event path landing there would cost
// every other thread a miss an event.
struct alignas(64) SeqLine {
  std::atomic<uint64_t> next{0};
};
static_assert(sizeof(SeqLine) == 64);
inline constinit SeqLine g_seq_line;
inline uint64_t next_seq() { return g_seq_line.next.fetch_add(1, std::memory_order_relaxed) + 1; }
inline uint64_t last_seq() { return g_seq_line.next.load(std::memory_order_relaxed); }

// Bumped in every fork child (event_globals.h): per-thread logs inherited from the parent must not
// be reused. Inline: every recorded event checks its thread's log against it.
inline uint64_t fork_generation() {
  return g_event_globals.fork_generation.load(std::memory_order_relaxed);
}
void on_fork_child();

// Writes a new module snapshot if objects were loaded or unloaded since the last one.
void refresh_modules_if_changed();

void write_process_note(const char* text);
// `sample` with its time_delta set from `now_ns` (CLOCK_MONOTONIC).
void write_nvml_sample(format::NvmlSamplePayload sample, uint64_t now_ns);
void write_end_record(format::EndHow how, int status, bool cuda_used, const LossReport& loss);

}  // namespace gmemhook

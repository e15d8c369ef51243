// A thread's log as the event path sees it: the ThreadLog (its file, deltas, tables and counters)
// and how the calling thread finds its own. Shared by recorder.cpp, which makes and retires logs,
// and event_body.h, which records into them inline in each wrapper.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "gmemhook/codec.h"
#include "interposer/base/thread_state.h"
#include "interposer/capture/fast_unwinder.h"
#include "interposer/capture/python_frames.h"
#include "interposer/capture/stack_table.h"
#include "interposer/log/log_file.h"
#include "interposer/log/process_log.h"

namespace gmemhook {

// A walk has one note, but several Python stacks may share one native walk (the same C++ path
// under `Linear.forward` for each layer of a model: its innermost Python frames, which tell walks
// apart, are alike): their ids are kept here too, by the walk's frame hash and the note's key.
// Direct-mapped; a wrong match needs two stacks to collide in 64 bits, as StackTable's own ids
// already do. The key holds the stack table's epoch: a reset table leaves no usable slot.
struct StackMemo {
  static constexpr size_t kSlots = 512;
  struct Slot {
    uint64_t key;  // 0: empty
    uint32_t id;
  };
  Slot slots[kSlots];
  static uint64_t key(uint64_t walk_hash, uint64_t note_key) {
    return (walk_hash * 0x9e3779b97f4a7c15ull ^ note_key) | 1;
  }
  Slot& at(uint64_t key) { return slots[(key * 0xff51afd7ed558ccdull) >> 55]; }
};

// What every event reads and writes comes first: the fork check, the walks' unload generation,
// the two usual counters and the file's own event fields (log_file.h) share the first cache line
// of the log's page, and the encoder's deltas start on a line of their own after the file, not
// 28 KiB further on behind the tables (in a program whose own work evicts them between two
// events, each line is a miss).
struct ThreadLog {
  uint64_t fork_generation = 0;
  uint64_t unload_generation = 0;  // the one its walks were learnt at (unload_watch.h)
  std::atomic<uint64_t> allocations{0}, frees{0};
  LogFile file;
  std::atomic<uint64_t> failed{0}, blocks{0};
  alignas(64) format::EventDeltas deltas;
  StackTable stacks;
  // The fast unwinder's rules: valid for any thread of the process. Aligned: wherever the lines
  // above end, its event fields straddle no more lines than they must (each one more is a miss
  // more).
  alignas(64) FrameRuleCache frame_rules;
  StackMemo stack_memo;  // ids of `stacks` by walk and Python frames
  PyCodeTable py_codes;
  // Scratch for the stack being recorded: too large for the stacks of some threads that call CUDA.
  uint64_t py_frames[kMaxPyDepth];
  // The registry of live threads' logs, for the exit totals and seals (guarded by RegistryLock).
  ThreadLog* prev = nullptr;
  ThreadLog* next = nullptr;
  // The writing thread's state: whether it is inside its log (busy) is read by the exit seal.
  ThreadState* owner = nullptr;
};

// A ThreadLog is mmapped (page-aligned): its first line is the one above.
static_assert(offsetof(ThreadLog, file) + LogFile::kEventFieldsBytes <= 64);

// How the calling thread's log is being made (recorder.cpp).
struct ThreadLogStart {
  // Why the thread has no log, for the loss warning: its file could not be created.
  int create_error = 0;
  // The thread is making its log: a call that asks for it meanwhile (from a signal handler) finds
  // none, rather than making a second.
  bool creating = false;
};
// initial-exec: a preloaded library's TLS is static, and the dynamic model could call malloc on
// first access.
inline thread_local ThreadLogStart t_log_start __attribute__((tls_model("initial-exec")));

// Set by a thread's first event: when its log is made (every later event of the thread finds
// the log made), or when there is none to record it in. Not tested on every event.
void note_cuda_used();

// thread_log() when the thread has no log of this process yet (recorder.cpp).
ThreadLog* new_or_forked_thread_log();

// Inline: every event asks. A log inherited across fork is never here: the fork child's handler
// moves it aside (recorder_fork_child), so the event path asks whether there is a log, not whose.
__attribute__((always_inline)) inline ThreadLog* thread_log() {
  ThreadLog* log = t_state.log;
  if (log) [[likely]]
    return log;
  return new_or_forked_thread_log();
}

// A thread's counters are written by that thread only (totals() reads them from any): a plain
// increment, not a locked read-modify-write on every event.
inline void bump(std::atomic<uint64_t>& counter) {
  counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

}  // namespace gmemhook

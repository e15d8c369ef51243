// Turns one completed CUDA call into a log record: sequence number, time, device, stack.
// Called by the generated wrappers in hooks.cpp (through event_body.h); per-thread state, no locks
// on this path.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <initializer_list>

#include "gmemhook/api_table.h"
#include "gmemhook/codec.h"
#include "interposer/base/busy.h"
#include "interposer/base/event_globals.h"
#include "interposer/base/event_time.h"
#include "interposer/log/process_log.h"

namespace gmemhook {

// kRecordingOn is set by the library constructor (lifecycle.cpp) once it is ready;
// kRecordingPaused by gmemhook_pause_events() (include/gmemhook/control.h), for benchmarks.
// One byte for both (event_globals.h, recording), so that the event path still asks one
// question.
inline constexpr uint8_t kRecordingOn = 1, kRecordingPaused = 2;
// The hook is set up: lookups hand out wrappers and exit seals the log, paused or not.
inline bool recording_enabled() {
  return g_event_globals.recording.load(std::memory_order_relaxed) & kRecordingOn;
}
// Events are recorded: set up and not paused. Inline: every wrapper asks.
inline bool recording_events() {
  return g_event_globals.recording.load(std::memory_order_relaxed) == kRecordingOn;
}

// Marks the current thread as inside a hooked call. A runtime call that reaches the driver
// through our wrappers (cudaMalloc → cuMemAlloc_v2) is nested: only the outermost records.
// Inline: every wrapper makes one, nested driver calls included.
class CallScope {
 public:
  CallScope() : records_(t_state.call_depth++ == 0 && recording_events()) {
    if (thread_busy()) [[unlikely]] {
      inside_recorder();
      records_ = false;
    }
  }
  ~CallScope() {
    ThreadState& t = t_state;
    if (t.call_depth == t.skipped_depth) t.skipped_depth = 0;
    --t.call_depth;
  }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;
  // True for the outermost hooked call of a thread while recording is on.
  bool records() const { return records_; }

 private:
  // A call made while the thread is inside the recorder (busy.h): it passes through. Static, so
  // that `records_` never has its address taken: it stays in a register.
  static void inside_recorder();
  bool records_;
};

// Whether a hooked call may go straight to the real function, with no CallScope: it is nested in
// another hooked call of this thread, which CallScope would not let record either. Not counting
// its depth changes nothing: the outer call's depth is what every nested check reads, and
// the skipped depth is set only while the thread is busy. A call while the thread is inside the
// recorder (a signal handler's) takes a CallScope, which counts it as skipped.
inline bool passes_through() {
  const ThreadState& t = t_state;
  return t.call_depth != 0 && t.busy == 0;
}

// Where this thread's errno lives, asked of libc once per thread: errno is a call to
// __errno_location through the PLT, which every recorded event made (~1 % of the hooked loop).
// The address is the thread's for its life, and a fork child's thread keeps its parent's.
inline int* errno_at() {
  int* at = t_state.errno_at;
  if (!at) [[unlikely]]
    at = t_state.errno_at = &errno;
  return at;
}

// Keeps the traced program's errno exactly as the CUDA call left it.
class ErrnoGuard {
 public:
  ErrnoGuard() : at_(errno_at()), saved_(*at_) {}
  ~ErrnoGuard() { *at_ = saved_; }

 private:
  int* at_;
  int saved_;
};

// Sequence number and time of an event. Frees take theirs *before* the real call, allocations
// after it: then a pointer freed by one thread and handed out again to another is always seen
// freed before it is seen allocated again.
struct EventClock {
  uint64_t seq = 0;
  uint64_t time_ns = 0;
};
// The sequence number and time of an event now. Inline: every event takes one.
inline EventClock clock_now() { return {next_seq(), event_time_ns()}; }
// Kinds as bits, so that what the recorder asks of an event's kind is one bit test.
constexpr uint32_t kinds(std::initializer_list<format::EventKind> ks) {
  uint32_t bits = 0;
  for (format::EventKind k : ks) bits |= uint32_t{1} << static_cast<unsigned>(k);
  return bits;
}
constexpr bool is_one_of(format::EventKind k, uint32_t bits) {
  return (bits >> static_cast<unsigned>(k)) & 1;
}
static_assert(static_cast<unsigned>(format::EventKind::GraphUpload) < 32);  // the last kind
// Kinds that give memory back (their clock is taken before the call).
constexpr bool is_release_kind(format::EventKind k) {
  using K = format::EventKind;
  return is_one_of(
      k, kinds({K::Free, K::Release, K::AddressFree, K::Unmap, K::BlockFree, K::ImportClose}));
}
// Inline: a wrapper's kind is a constant, and for allocations this is nothing at all.
inline EventClock clock_before_call(format::EventKind kind) {
  return is_release_kind(kind) ? clock_now() : EventClock{};
}

// The memory type is not passed: it follows from the api id (overrides travel in `fields`).
// The clock comes as its two numbers (seq 0: none taken yet), not as an EventClock: GCC stores a
// struct argument to the stack and reads it back with one 16-byte load, which the two 8-byte
// stores cannot forward (a store-forwarding stall at the top of every release: a third of
// record_release's perf samples).
// Any kind, with the event's device and stack.
void record_event_with_stack(format::ApiId api, format::EventKind kind, uint32_t result,
                             format::EventFields& fields, uint64_t seq, uint64_t time_ns);
// A kind that gives memory back (is_release_kind): no device, no stack unless asked for.
void record_release(format::ApiId api, format::EventKind kind, uint32_t result,
                    format::EventFields& fields, uint64_t seq, uint64_t time_ns);
// The usual events, whose kind is a constant in the recorder: an EventKind::Alloc (its clock is
// taken inside, after the call) and an EventKind::Free. The wrappers record these inline
// (event_body.h, record_event) and call these two only when a setting asks more of the event.
void record_allocation(format::ApiId api, uint32_t result, format::EventFields& fields);
void record_free(format::ApiId api, uint32_t result, format::EventFields& fields, uint64_t seq,
                 uint64_t time_ns);
// The driver's figures for the graph memory pool of `device` (-1: the current context's, and
// `device` is set to it):
// bytes the allocation nodes hold (CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) and physical memory the
// pool keeps (RESERVED_MEM_CURRENT). False when the driver cannot say. The pool reserves memory
// inside cuGraphLaunch, out of sight of every hook (CUPTI shows it as device records at address
// 0), so these figures are the only way a log learns of it.
bool graph_pool_bytes(int& device, uint64_t* used, uint64_t* reserved);

// Bytes of the allocation that contains `address` (cuMemGetAddressRange), 0 when unknown.
uint64_t mapped_size_at(uint64_t address);

// Totals over every thread of this process, for the exit summary.
struct Totals {
  uint64_t allocations = 0, frees = 0, failed = 0;
  uint64_t blocks = 0;  // PyTorch blocks handed out (inside the allocations' segments)
  bool cuda_used = false;
};
Totals totals();

// At exit: seals the current chunk (format.h, "Chunk seals") of the calling thread's log and of
// every other thread's that is not inside its log at that moment; a thread inside its log (busy.h)
// is mid-append, and its last chunk stays unsealed, read unchecked. The threads go on: a later
// event of theirs starts a new chunk. For its while, sealing_logs (event_globals.h) is set; a
// thread about to use its log (wait_while_logs_sealed) waits for it to end, so the seal and the
// thread's writes never meet. The pair is a Dekker handshake: the thread stores `busy` and then
// reads the flag, the sealer stores the flag and then reads `busy`, and membarrier(2) puts the
// fence into the threads' side only when the exit needs it, not on every event.
void seal_thread_logs();

// Called after a BusyScope is made and before the thread's log is touched.
void wait_for_log_seals();
__attribute__((always_inline)) inline void wait_while_logs_sealed() {
  std::atomic_signal_fence(std::memory_order_seq_cst);  // `busy` stored before the flag is read
  if (g_event_globals.sealing_logs.load(std::memory_order_acquire)) [[unlikely]]
    wait_for_log_seals();
}

// Library lifecycle (lifecycle.cpp).
void init_recorder();
void recorder_fork_child();

}  // namespace gmemhook

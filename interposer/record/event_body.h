// The hot path of a recorded event: the thread's log, the device, the stack, the encoding and
// the append. In a header so that each generated wrapper in hooks.cpp records its usual events
// (EventKind::Alloc, EventKind::Free) in its own frame, with no call and second prologue between
// the wrapper and the body; recorder.cpp instantiates the same body for every other
// kind and for the settings that ask more of an event.
#pragma once

#include <cuda.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "interposer/base/busy.h"
#include "interposer/base/config.h"
#include "interposer/base/event_time.h"
#include "interposer/base/real_symbols.h"
#include "interposer/capture/capture_stats.h"
#include "interposer/capture/unload_watch.h"
#include "interposer/capture/unwinder.h"
#include "interposer/log/process_log.h"
#include "interposer/log/record_loss.h"
#include "interposer/record/nvml_sampler.h"
#include "interposer/record/recorder.h"
#include "interposer/record/thread_log.h"

namespace gmemhook {

using format::EventKind;

// What a stack id noted on a recent walk (fast_unwinder.h, WalkNote) depends on besides the
// walk's native frames: the Python frames, and the stack table that gave the id (reset when the
// log passes to another thread). A stack the thread recorded before is then known without
// hashing and looking up its frames (in a training loop, consecutive events come from different
// places, so StackTable's "same as the last one" rarely holds). Python frames are told apart by
// a 64-bit hash, as StackTable's own ids already are.
inline uint64_t stack_note_key(uint32_t table_epoch, const uint64_t* py, size_t npy) {
  uint64_t h = (table_epoch + uint64_t{1}) * 0x9e3779b97f4a7c15ull ^ npy;
  for (size_t i = 0; i < npy; ++i) h = (h ^ py[i]) * 0x100000001b3ull;
  return h | 1;
}
// Driver queries the recorder makes itself: the device of an allocation, the extent of imported
// memory, the graph pool's figures. Resolved lazily: libcuda is loaded by the time the first
// allocation returns. cuCtxGetDevice, asked on every allocation, lies with the rest of an
// event's globals (event_globals.h), untyped there (its type needs cuda.h).
using CtxGetDeviceFn = CUresult (*)(CUdevice*);
using PointerGetAttributeFn = CUresult (*)(void*, CUpointer_attribute, CUdeviceptr);
using GetAddressRangeFn = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);
using GetGraphMemAttributeFn = CUresult (*)(CUdevice, CUgraphMem_attribute, void*);
struct DriverQueries {
  std::atomic<PointerGetAttributeFn> pointer_get_attribute{nullptr};
  std::atomic<GetAddressRangeFn> get_address_range{nullptr};
  std::atomic<GetGraphMemAttributeFn> get_graph_mem_attribute{nullptr};
};
inline constinit DriverQueries g_driver;

// Inline: cuCtxGetDevice's is asked on every allocation.
template <typename Fn>
__attribute__((always_inline)) inline Fn driver_fn(std::atomic<Fn>& slot, const char* name) {
  Fn f = slot.load(std::memory_order_acquire);
  if (!f) [[unlikely]] {
    f = reinterpret_cast<Fn>(find_real_symbol(name, format::Layer::Driver));
    if (f) slot.store(f, std::memory_order_release);
  }
  return f;
}

// cuCtxGetDevice, from the event's line.
__attribute__((always_inline)) inline CtxGetDeviceFn ctx_get_device() {
  return reinterpret_cast<CtxGetDeviceFn>(
      driver_fn(g_event_globals.ctx_get_device, "cuCtxGetDevice"));
}

// The device of an allocation: the calling thread's current context, else (no context, e.g. a
// driver call on a fresh thread) the pointer's own attributes. Never fails the hook.
__attribute__((always_inline)) inline void fill_device(format::EventFields& f) {
  if (f.has(format::kHasDevice)) return;
  if (auto get = ctx_get_device()) {
    CUdevice dev = -1;
    if (get(&dev) == CUDA_SUCCESS) {
      f.set_device(dev);
      return;
    }
  }
  if (f.has(format::kHasAddress) && f.address) {
    if (auto attr = driver_fn(g_driver.pointer_get_attribute, "cuPointerGetAttribute")) {
      int ordinal = -1;
      if (attr(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, f.address) == CUDA_SUCCESS)
        f.set_device(ordinal);
    }
  }
}

// Graph bookkeeping and exports mark moments; they own no memory and need no device. (A launch
// keeps its stack: graph memory comes into being there.)
constexpr uint32_t kGraphKinds =
    kinds({EventKind::CaptureBegin, EventKind::CaptureEnd, EventKind::GraphLaunch,
           EventKind::GraphUpload, EventKind::GraphFreeNode, EventKind::GraphInstantiate,
           EventKind::GraphExecDestroy, EventKind::GraphDestroy, EventKind::GraphChild,
           EventKind::GraphClone, EventKind::GraphMemTrim, EventKind::Export});
// What the exit summary counts as allocations and frees.
constexpr uint32_t kCountedAllocations =
    kinds({EventKind::Alloc, EventKind::Create, EventKind::GraphAllocNode});
constexpr uint32_t kCountedFrees = kinds({EventKind::Free, EventKind::Release});

// Objects were unloaded since `log`'s walks were learnt (recorder.cpp).
void forget_unloaded_code(ThreadLog* log, uint64_t generation);

// The stack of an event, interned: its id. `kStats`: GMEMHOOK_STACK_STATS=1, every capture timed
// and counted (capture_and_intern below picks; the usual case tests nothing of it). `kPlain`:
// the fast unwinder is known to be on (Config::plain_allocations).
template <bool kStats, bool kPlain = false>
__attribute__((always_inline)) inline uint32_t capture_and_intern_with(ThreadLog* log) {
  uint64_t scratch[kCaptureScratch];
  const uint64_t* frames = scratch;
  if (const uint64_t generation = unload_generation(); generation != log->unload_generation)
      [[unlikely]]
    forget_unloaded_code(log, generation);
  const uint64_t start = kStats ? monotonic_ns() : 0;
  // Python first: whether the event has Python frames decides where the native walk ends. PyCode
  // records of code objects new to this file are written here, before the Stack record.
  size_t npy = capture_python_frames(log->py_codes, log->file, log->py_frames, kMaxPyDepth);
  StopRange stop;
  if (npy > 0 && !g_config.full_native_stacks) interpreter_loop_range(&stop.lo, &stop.hi);
  const uint64_t python_done = kStats ? monotonic_ns() : 0;
  // The innermost Python frames (code and instruction) tell call paths apart that enter the
  // recorder at the same depth: the native walk finds its recent twin by them.
  const uint64_t salt = npy == 0 ? 0 : log->py_frames[0] ^ (npy > 1 ? log->py_frames[1] << 17 : 0);
  const uint64_t note_key = stack_note_key(log->stacks.epoch(), log->py_frames, npy);
  WalkNote* note = nullptr;
  const size_t depth = static_cast<size_t>(g_config.depth);
  size_t n = 0;
  if constexpr (kStats) {
    // Every capture returns its frames (they are counted).
    n = capture_stack_apart(&log->frame_rules, scratch, &frames, depth, stop, salt, 0, &note,
                            false);
    note_capture(monotonic_ns() - python_done, n, python_done - start, npy);
  } else {
    n = capture_stack(&log->frame_rules, scratch, &frames, depth, stop, salt, note_key, &note,
                      kPlain || g_config.fast_unwind);
  }
  if (note && note->key == note_key) {
    if constexpr (kStats) note_stack_id(StackIdFrom::kNote);
    return note->id;
  }
  StackMemo::Slot* memo = nullptr;
  uint64_t memo_key = 0;
  if (note) {
    memo_key = StackMemo::key(log->frame_rules.last_walk_hash(), note_key);
    memo = &log->stack_memo.at(memo_key);
    if (memo->key == memo_key) {
      if constexpr (kStats) note_stack_id(StackIdFrom::kMemo);
      *note = WalkNote{note_key, memo->id};
      return memo->id;
    }
  }
  if (n == 0 && npy == 0) return 0;
  bool is_new = false;
  uint32_t id = log->stacks.intern(frames, n, log->py_frames, npy, &is_new);
  if constexpr (kStats) note_stack_id(is_new ? StackIdFrom::kNew : StackIdFrom::kTable);
  if (id && (is_new || log->unload_generation != 0)) {
    // A stack never seen before may run through a newly loaded object: make sure the module
    // map in the log covers it before anyone needs to symbolize it. After an unload, a stack seen
    // before may too (its addresses now in the object loaded in the unloaded one's place): the
    // memo was dropped, so each comes here once more (and later only on memo misses).
    refresh_modules_if_changed();
  }
  if (id && is_new) {
    retry_python_detection();
    if (!log->file.append(format::StackPayload{id, {frames, n}, {log->py_frames, npy}})) return 0;
  }
  // Nothing above walked again: the note is still the walk's.
  if (note && id) {
    *note = WalkNote{note_key, id};
    *memo = StackMemo::Slot{memo_key, id};
  }
  return id;
}

// capture_and_intern_with<true> (GMEMHOOK_STACK_STATS), apart (recorder.cpp).
uint32_t capture_and_intern_counted(ThreadLog* log);

// Inline in record_event, its one caller. `kPlain`: the settings are known to ask for no counts
// (Config::plain_allocations).
template <bool kPlain>
__attribute__((always_inline)) inline uint32_t capture_and_intern(ThreadLog* log) {
  if (!kPlain && g_config.stack_stats) [[unlikely]]
    return capture_and_intern_counted(log);
  return capture_and_intern_with<false, kPlain>(log);
}

// An event the usual encoder declined (recorder.cpp).
format::EncodedEvent encode_unusual_event(uint8_t* out, uint8_t api, uint64_t seq, uint64_t time_ns,
                                          uint32_t result, uint32_t stack_id,
                                          const format::EventFields& f, format::EventDeltas& d);

// Which events a body records. kRelease: memory given back (a free, an unmap, a release), which
// has no device and no stack unless GMEMHOOK_FREE_STACKS asks for one: then
// record_event_with_stack makes it. A release has a body of its own without the capture inlined
// in it: in one function with it a free would pay for what an allocation's capture keeps in
// registers (saved registers, spilled arguments) on every call. kAlloc and kFree: an
// EventKind::Alloc (cudaMalloc, cuMemAlloc_v2, cudaMallocAsync, ...) or EventKind::Free (cudaFree,
// cuMemFree_v2,
// ...), the usual events: their kind is a constant, so its tests fold away and it is neither
// passed nor spilled, and an allocation's clock, taken here, is not passed either.
// kAny: every other kind.
// kPlain: the settings ask for nothing more than the event (Config::plain_allocations and
// plain_frees, tested once by record_event below or recorder.cpp's record_event_entry), so the
// body tests none of them.
enum class Body { kAny, kRelease, kAlloc, kFree };

template <Body kBody, bool kPlain>
__attribute__((always_inline)) inline void record_event_body(format::ApiId api, EventKind kind,
                                                             uint32_t result,
                                                             format::EventFields& f, uint64_t seq,
                                                             uint64_t time_ns) {
  constexpr bool kRelease = kBody == Body::kRelease || kBody == Body::kFree;
  if constexpr (kBody == Body::kAlloc) {
    kind = EventKind::Alloc;
    seq = 0;  // allocations take their clock after the call: here, below
  }
  if constexpr (kBody == Body::kFree) kind = EventKind::Free;
  if constexpr (kRelease && !kPlain) {
    if (g_config.free_stacks && g_config.depth > 0) [[unlikely]]
      return record_event_with_stack(api, kind, result, f, seq, time_ns);
  }
  BusyScope busy;
  wait_while_logs_sealed();
  if (!kPlain && g_config.test_delay_record_us > 0)
    usleep(static_cast<useconds_t>(g_config.test_delay_record_us));
  ThreadLog* log = thread_log();
  if (!log || !log->file.alive()) {
    note_cuda_used();
    // Still take a sequence number: the gap it leaves is what tells a reader events are missing.
    if (seq == 0) seq = next_seq();
    // The log is still being opened by another thread that did not finish in time: counted, not
    // latched (process_log.h, ensure_process_log).
    if (!log && t_log_start.create_error == 0 && !recording_broken()) return note_skipped(seq);
    // Without a process log there is nowhere to say it: opening it already warned.
    if (process_log_ready())
      note_not_recorded(seq, log ? log->file.path() : process_dir(),
                        log ? log->file.error() : t_log_start.create_error);
    return;
  }

  const bool releases = kRelease || is_release_kind(kind);
  const bool graph = !kRelease && is_one_of(kind, kGraphKinds);
  uint32_t stack_id = 0;
  if constexpr (!kRelease) {
    if (!releases && !graph) fill_device(f);
    if ((kPlain || g_config.depth > 0) && (!releases || g_config.free_stacks))
      stack_id = capture_and_intern<kPlain>(log);
  }

  // A release took its clock before the call (clock_before_call; record_event_with_stack is
  // handed it too): a sequence number is never 0, so only the other kinds test.
  if (!kRelease && seq == 0) {
    seq = next_seq();
    time_ns = event_time_ns();
  }
  format::EventCore ev;
  ev.api = static_cast<uint8_t>(api);
  ev.seq = seq;
  ev.time_ns = time_ns < log->deltas.last_time_ns ? log->deltas.last_time_ns : time_ns;
  ev.result = result;
  ev.stack_id = stack_id;
  // Inline (GCC made the lambda a function of its own, with its own prologue, ~28 instructions).
  // Any other event than the usual one is encoded apart, from its parts: `ev` itself never has
  // its address taken, so GCC keeps its parts in registers instead of storing and reloading them.
  const auto encode = [&](uint8_t * out) __attribute__((always_inline)) {
    format::EncodedEvent usual;
    if (format::encode_usual_event(out, ev, f, log->deltas, &usual)) [[likely]]
      return usual;
    return encode_unusual_event(out, ev.api, ev.seq, ev.time_ns, ev.result, ev.stack_id, f,
                                log->deltas);
  };
  if (!log->file.append_event(encode)) {
    note_not_recorded(ev.seq, log->file.path(), log->file.error());
    return;
  }

  if (result != 0 && !releases && !graph)
    bump(log->failed);
  else if (is_one_of(kind, kCountedAllocations))
    bump(log->allocations);
  else if (is_one_of(kind, kCountedFrees))
    bump(log->frees);
  else if (kind == EventKind::BlockAlloc)
    bump(log->blocks);
  nvml_after_event(api, kind, result, f, ev.time_ns);
}

// The generated wrappers' way in (hooks.cpp). An allocation or a free is recorded here, in the
// wrapper's own frame, while the settings ask nothing more of it (Config::plain_allocations,
// plain_frees): no call, prologue and epilogue of a second function between the CUDA call and
// its record. A setting that asks more, and every other kind, goes to recorder.cpp's
// entry points. Inline: a wrapper's kind is a constant, and it keeps only the branch it needs.
__attribute__((always_inline)) inline void record_event(format::ApiId api, EventKind kind,
                                                        uint32_t result,
                                                        format::EventFields& fields,
                                                        EventClock clock) {
  if (kind == EventKind::Alloc) {
    if (g_config.plain_allocations) [[likely]]
      return record_event_body<Body::kAlloc, true>(api, kind, result, fields, 0, 0);
    return record_allocation(api, result, fields);
  }
  if (kind == EventKind::Free) {
    if (g_config.plain_frees) [[likely]]
      return record_event_body<Body::kFree, true>(api, kind, result, fields, clock.seq,
                                                  clock.time_ns);
    return record_free(api, result, fields, clock.seq, clock.time_ns);
  }
  if (is_release_kind(kind))
    record_release(api, kind, result, fields, clock.seq, clock.time_ns);
  else
    record_event_with_stack(api, kind, result, fields, clock.seq, clock.time_ns);
}

}  // namespace gmemhook

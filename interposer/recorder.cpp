// Per-thread logs and the hot path of every recorded event (see recorder.h).
#include "recorder.h"

#include <cuda.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstring>

#include "busy.h"
#include "capture_stats.h"
#include "config.h"
#include "event_time.h"
#include "log_file.h"
#include "nvml_sampler.h"
#include "process_log.h"
#include "python_frames.h"
#include "real_symbols.h"
#include "record_loss.h"
#include "stack_table.h"
#include "text.h"
#include "unload_watch.h"
#include "unwinder.h"

namespace gmemhook {

namespace fmt = gmemhook::format;
using fmt::EventKind;

namespace {
// A thread's file starts with one small chunk and grows by doubling (format.h, ChunkGeometry):
// a thread that records one event costs one page.
constexpr LogFile::Chunks kThreadChunks{4u << 10, 1u << 20};

// What a stack id noted on a recent walk (fast_unwinder.h, WalkNote) depends on besides the
// walk's native frames: the Python frames, and the stack table that gave the id (reset when the
// log passes to another thread). A stack the thread recorded before is then known without
// hashing and looking up its frames (in a training loop, consecutive events come from different
// places, so StackTable's "same as the last one" rarely holds). Python frames are told apart by
// a 64-bit hash, as StackTable's own ids already are.
uint64_t stack_note_key(uint32_t table_epoch, const uint64_t* py, size_t npy) {
  uint64_t h = (table_epoch + uint64_t{1}) * 0x9e3779b97f4a7c15ull ^ npy;
  for (size_t i = 0; i < npy; ++i) h = (h ^ py[i]) * 0x100000001b3ull;
  return h | 1;
}

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
// events, each line is a miss, issue 14).
struct ThreadLog {
  uint64_t fork_generation = 0;
  uint64_t unload_generation = 0;  // the one its walks were learnt at (unload_watch.h)
  std::atomic<uint64_t> allocations{0}, frees{0};
  LogFile file;
  std::atomic<uint64_t> failed{0}, blocks{0};
  alignas(64) fmt::EventDeltas deltas;
  StackTable stacks;
  // The fast unwinder's rules: valid for any thread of the process. Aligned: moved by the lines
  // above, its event fields had come to straddle one line more (a miss more, issue 14).
  alignas(64) FrameRuleCache frame_rules;
  StackMemo stack_memo;  // ids of `stacks` by walk and Python frames
  PyCodeTable py_codes;
  // Scratch for the stack being recorded: too large for the stacks of some threads that call CUDA.
  uint64_t py_frames[kMaxPyDepth];
  // The registry of live threads' logs, for the exit totals (guarded by RegistryLock).
  ThreadLog* prev = nullptr;
  ThreadLog* next = nullptr;
};

// A ThreadLog is mmapped (page-aligned): its first line is the one above.
static_assert(offsetof(ThreadLog, file) + LogFile::kEventFieldsBytes <= 64);

// initial-exec: a preloaded library's TLS is static, and the dynamic model could call malloc
// on first access.
__attribute__((tls_model("initial-exec"))) thread_local ThreadLog* t_log = nullptr;
__attribute__((tls_model("initial-exec"))) thread_local bool t_creating = false;

ThreadLog* g_registry = nullptr;
// What exited threads recorded: their logs are gone, their counts stay for the exit summary.
std::atomic<uint64_t> g_done_allocations{0}, g_done_frees{0}, g_done_failed{0}, g_done_blocks{0};
std::atomic<bool> g_cuda_used{false};
pthread_key_t g_thread_key;
bool g_key_ok = false;

// Guards the registry. A spinlock rather than a mutex: a fork child simply resets it, and it is
// held for a few pointer stores, once when a thread starts recording and once when it exits.
// A signal handler calling CUDA on the thread that holds it passes through (busy.h).
std::atomic_flag g_registry_lock = ATOMIC_FLAG_INIT;
struct RegistryLock {
  RegistryLock() {
    while (g_registry_lock.test_and_set(std::memory_order_acquire)) {
    }
  }
  ~RegistryLock() { g_registry_lock.clear(std::memory_order_release); }
  BusyScope busy;  // constructed first: set before the lock is tried
};

void drop_tables(ThreadLog* log) {
  log->stacks.release();
  log->py_codes.release();
  log->frame_rules.release();
}

// A few logs of exited threads, kept for the next threads: every munmap in a multi-threaded
// process interrupts every other CPU to flush its TLB, and with threads that live for one
// allocation that flush was most of what recording cost. Guarded by RegistryLock.
constexpr int kSpareLogs = 8;
ThreadLog* g_spare[kSpareLogs];
int g_spares = 0;

ThreadLog* new_thread_log() {
  {
    RegistryLock lock;
    if (g_spares > 0) return g_spare[--g_spares];
  }
  void* m =
      mmap(nullptr, sizeof(ThreadLog), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  auto* log = new (m) ThreadLog();
  log->unload_generation = unload_generation();  // nothing learnt yet: no unload to forget
  return log;
}

// Hands `log` (finished, out of the registry) to the spares, or its memory back to the system.
void retire_thread_log(ThreadLog* log) {
  log->stacks.reset();
  log->py_codes.reset();
  log->frame_rules.forget_stack();
  log->file = LogFile{};
  log->deltas = {};
  for (auto* c : {&log->allocations, &log->frees, &log->failed, &log->blocks})
    c->store(0, std::memory_order_relaxed);
  log->prev = log->next = nullptr;
  {
    RegistryLock lock;
    if (g_spares < kSpareLogs) {
      g_spare[g_spares++] = log;
      return;
    }
  }
  drop_tables(log);
  log->~ThreadLog();
  munmap(log, sizeof(ThreadLog));
}

// The pthread key's destructor: the thread is exiting (C++ thread_local destructors, which may
// still free GPU memory, have already run). Its log is finished and cut to what it holds, its
// counts move to the process totals and its memory goes back (issue 15: 2000 short-lived threads
// used to keep 2 GiB of logs and ~25 KB of memory each). A CUDA call after this point, from a
// later key destructor, simply starts a new log.
void thread_finished(void* p) {
  auto* log = static_cast<ThreadLog*>(p);
  if (t_log == log) t_log = nullptr;
  if (!log || log->fork_generation != fork_generation()) return;
  log->file.finish();
  {
    RegistryLock lock;
    g_done_allocations.fetch_add(log->allocations.load(std::memory_order_relaxed));
    g_done_frees.fetch_add(log->frees.load(std::memory_order_relaxed));
    g_done_failed.fetch_add(log->failed.load(std::memory_order_relaxed));
    g_done_blocks.fetch_add(log->blocks.load(std::memory_order_relaxed));
    (log->prev ? log->prev->next : g_registry) = log->next;
    if (log->next) log->next->prev = log->prev;
  }
  retire_thread_log(log);
}

// Why the calling thread has no log, for the loss warning: its file could not be created.
__attribute__((tls_model("initial-exec"))) thread_local int t_create_error = 0;

// Set by a thread's first event: when its log is made (every later event of the thread finds
// the log made), or when there is none to record it in. Not tested on every event.
void note_cuda_used() {
  if (!g_cuda_used.load(std::memory_order_relaxed))
    g_cuda_used.store(true, std::memory_order_relaxed);
}

ThreadLog* create_thread_log() {
  note_cuda_used();
  // After a failed write the disk is full or the directory unusable: trying again on every CUDA
  // call is what made a full disk cost seconds (issue 15).
  if (recording_broken()) return nullptr;
  if (!ensure_process_log()) {
    // Failed (and warned once), or another thread is still opening it: not an error (0).
    t_create_error = process_log_failed() ? EIO : 0;
    return nullptr;
  }
  ThreadLog* log = new_thread_log();
  if (!log) {
    t_create_error = ENOMEM;
    return nullptr;
  }
  log->fork_generation = fork_generation();
  uint64_t tid = static_cast<uint64_t>(syscall(SYS_gettid));
  uint64_t start = event_clock_start_ns();  // its events' times start from it
  log->deltas.last_time_ns = start;
  // A thread id can be reused by a later thread of the same process: never overwrite.
  for (int attempt = 0; attempt < 100; ++attempt) {
    FixedString<64> name;
    name.append(fmt::kThreadFilePrefix).append_uint(tid);
    if (attempt) name.append(".").append_uint(static_cast<uint64_t>(attempt));
    name.append(fmt::kFileSuffix);
    if (log->file.create(process_dir_fd(), process_dir(), name.c_str(), fmt::FileKind::Thread, tid,
                         kThreadChunks, start))
      break;
    if (log->file.error() != EEXIST) break;
    log->file = LogFile{};
  }
  if (!log->file.alive()) {
    t_create_error = log->file.error();
    retire_thread_log(log);
    return nullptr;
  }
  {
    RegistryLock lock;
    log->next = g_registry;
    if (g_registry) g_registry->prev = log;
    g_registry = log;
  }
  if (g_key_ok) pthread_setspecific(g_thread_key, log);
  return log;
}

// thread_log() when the thread has no log of this process yet.
__attribute__((noinline)) ThreadLog* new_or_forked_thread_log(ThreadLog* log) {
  if (log) {
    // Inherited across fork: the chunk mapping is shared with the parent's file. Drop it; the
    // copy of the ThreadLog is this process's own memory (the registry was reset at fork).
    log->file.close();
    drop_tables(log);
    log->~ThreadLog();
    munmap(log, sizeof(ThreadLog));
    t_log = nullptr;
    // Else the key's destructor would meet the unmapped copy. Clearing a value never allocates.
    if (g_key_ok) pthread_setspecific(g_thread_key, nullptr);
  }
  if (t_creating) return nullptr;
  t_creating = true;
  t_log = log = create_thread_log();
  t_creating = false;
  return log;
}

// Inline: every event asks.
__attribute__((always_inline)) inline ThreadLog* thread_log() {
  ThreadLog* log = t_log;
  if (log && log->fork_generation == fork_generation()) [[likely]]
    return log;
  return new_or_forked_thread_log(log);
}

// Driver queries used to learn the device of an allocation. Resolved lazily: libcuda is loaded
// by the time the first allocation returns.
using CtxGetDeviceFn = CUresult (*)(CUdevice*);
using PointerGetAttributeFn = CUresult (*)(void*, CUpointer_attribute, CUdeviceptr);
std::atomic<PointerGetAttributeFn> g_pointer_get_attribute{nullptr};

// Inline: cuCtxGetDevice's is asked on every allocation.
template <typename Fn>
__attribute__((always_inline)) inline Fn driver_fn(std::atomic<Fn>& slot, const char* name) {
  Fn f = slot.load(std::memory_order_acquire);
  if (!f) [[unlikely]] {
    f = reinterpret_cast<Fn>(find_real_symbol(name, fmt::Layer::Driver));
    if (f) slot.store(f, std::memory_order_release);
  }
  return f;
}

// cuCtxGetDevice: its pointer lies with the rest of an event's globals (event_globals.h),
// untyped there (its type needs cuda.h).
__attribute__((always_inline)) inline CtxGetDeviceFn ctx_get_device() {
  return reinterpret_cast<CtxGetDeviceFn>(
      driver_fn(g_event_globals.ctx_get_device, "cuCtxGetDevice"));
}

using GetAddressRangeFn = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);
std::atomic<GetAddressRangeFn> g_get_address_range{nullptr};

// The device of an allocation: the calling thread's current context, else (no context, e.g. a
// driver call on a fresh thread) the pointer's own attributes. Never fails the hook.
__attribute__((always_inline)) inline void fill_device(fmt::EventFields& f) {
  if (f.has(fmt::kHasDevice)) return;
  if (auto get = ctx_get_device()) {
    CUdevice dev = -1;
    if (get(&dev) == CUDA_SUCCESS) {
      f.set_device(dev);
      return;
    }
  }
  if (f.has(fmt::kHasAddress) && f.address) {
    if (auto attr = driver_fn(g_pointer_get_attribute, "cuPointerGetAttribute")) {
      int ordinal = -1;
      if (attr(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, f.address) == CUDA_SUCCESS)
        f.set_device(ordinal);
    }
  }
}

// Graph bookkeeping and exports mark moments; they own no memory and need no device. (A launch
// keeps its stack: graph memory comes into being there, issue 12.)
constexpr uint32_t kGraphKinds =
    kinds({EventKind::CaptureBegin, EventKind::CaptureEnd, EventKind::GraphLaunch,
           EventKind::GraphUpload, EventKind::GraphFreeNode, EventKind::GraphInstantiate,
           EventKind::GraphExecDestroy, EventKind::GraphDestroy, EventKind::GraphChild,
           EventKind::GraphClone, EventKind::GraphMemTrim, EventKind::Export});
// What the exit summary counts as allocations and frees.
constexpr uint32_t kCountedAllocations =
    kinds({EventKind::Alloc, EventKind::Create, EventKind::GraphAllocNode});
constexpr uint32_t kCountedFrees = kinds({EventKind::Free, EventKind::Release});

// A thread's counters are written by that thread only (totals() reads them from any): a plain
// increment, not a locked read-modify-write on every event.
void bump(std::atomic<uint64_t>& counter) {
  counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// Objects were unloaded since `log`'s walks were learnt: what it learnt from their code goes, and
// so do the stack ids kept by walk (a walk found again through code loaded in the unloaded one's
// place is another walk; the memo's ids are still right for their frames, but dropping it sends
// every stack through the table once more, which makes sure the module map shows the new object).
__attribute__((noinline, cold)) void forget_unloaded_code(ThreadLog* log, uint64_t generation) {
  log->unload_generation = generation;
  log->frame_rules.forget_code();
  forget_unloaded_code_in_libunwind();
  std::memset(log->stack_memo.slots, 0, sizeof(log->stack_memo.slots));
}

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
    if (!log->file.append(fmt::StackPayload{id, {frames, n}, {log->py_frames, npy}})) return 0;
  }
  // Nothing above walked again: the note is still the walk's.
  if (note && id) {
    *note = WalkNote{note_key, id};
    *memo = StackMemo::Slot{memo_key, id};
  }
  return id;
}

__attribute__((noinline, cold)) uint32_t capture_and_intern_counted(ThreadLog* log) {
  return capture_and_intern_with<true>(log);
}

// Inline in record_event, its one caller. `kPlain`: the settings are known to ask for no counts
// (Config::plain_allocations).
template <bool kPlain>
__attribute__((always_inline)) inline uint32_t capture_and_intern(ThreadLog* log) {
  if (!kPlain && g_config.stack_stats) [[unlikely]]
    return capture_and_intern_counted(log);
  return capture_and_intern_with<false, kPlain>(log);
}
}  // namespace

bool graph_pool_bytes(int& device, uint64_t* used, uint64_t* reserved) {
  using GetGraphMemAttributeFn = CUresult (*)(CUdevice, CUgraphMem_attribute, void*);
  static std::atomic<GetGraphMemAttributeFn> get_attribute{nullptr};
  auto get = driver_fn(get_attribute, "cuDeviceGetGraphMemAttribute");
  if (!get) return false;
  if (device < 0) {
    auto current = ctx_get_device();
    CUdevice dev = -1;
    if (!current || current(&dev) != CUDA_SUCCESS) return false;
    device = dev;
  }
  cuuint64_t u = 0, r = 0;
  if (get(device, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &u) != CUDA_SUCCESS ||
      get(device, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &r) != CUDA_SUCCESS)
    return false;
  *used = u;
  *reserved = r;
  return true;
}

uint64_t mapped_size_at(uint64_t address) {
  if (!address) return 0;
  auto range = driver_fn(g_get_address_range, "cuMemGetAddressRange_v2");
  CUdeviceptr base = 0;
  size_t size = 0;
  if (!range || range(&base, &size, address) != CUDA_SUCCESS) return 0;
  return size;
}

void CallScope::inside_recorder() {
  // A signal handler's call on a thread inside the recorder (or holding one of its locks): the
  // program's own call, which the log cannot take now. Its sequence number is the gap a reader
  // sees; the end record counts it. Once: the calls it makes itself (cudaMalloc reaching
  // cuMemAlloc_v2) are nested in it.
  if (!recording_events()) return;
  if (t_state.skipped_depth == 0) {
    t_state.skipped_depth = t_state.call_depth;
    note_skipped(next_seq());
  }
}

namespace {
// An event the usual encoder declined (record_event_body below), its core as numbers: passed as
// an EventCore by value (in memory), the copy was stored on every event before the usual
// encoder's test, ~5 instructions (issue 14). Encoded the general way straight away;
// fmt::encode_event would try the usual encoder a second time.
__attribute__((noinline)) fmt::EncodedEvent encode_unusual_event(uint8_t* out, uint8_t api,
                                                                 uint64_t seq, uint64_t time_ns,
                                                                 uint32_t result, uint32_t stack_id,
                                                                 const fmt::EventFields& f,
                                                                 fmt::EventDeltas& d) {
  fmt::EventCore ev;
  ev.api = api;
  ev.seq = seq;
  ev.time_ns = time_ns;
  ev.result = result;
  ev.stack_id = stack_id;
  return fmt::encode_general_event(out, ev, f, d);
}

// Which events a body records. kRelease: memory given back (a free, an unmap, a release), which
// has no device and no stack unless GMEMHOOK_FREE_STACKS asks for one: then
// record_event_with_stack makes it. A release has a body of its own without the capture inlined
// in it: in the one function a free paid for what an allocation's capture keeps in registers
// (saved registers, spilled arguments) on every call. kAlloc and kFree: an EventKind::Alloc
// (cudaMalloc, cuMemAlloc_v2, cudaMallocAsync, ...) or EventKind::Free (cudaFree, cuMemFree_v2,
// ...), the usual events: their kind is a constant, so its tests fold away and it is neither
// passed nor spilled, and an allocation's clock, taken here, is not passed either (issue 14).
// kAny: every other kind.
// kPlain: the settings ask for nothing more than the event (Config::plain_allocations and
// plain_frees, tested once by record_event_entry), so the body tests none of them.
enum class Body { kAny, kRelease, kAlloc, kFree };

template <Body kBody, bool kPlain>
__attribute__((always_inline)) inline void record_event_body(fmt::ApiId api, EventKind kind,
                                                             uint32_t result, fmt::EventFields& f,
                                                             uint64_t seq, uint64_t time_ns) {
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
  if (!kPlain && g_config.test_delay_record_us > 0)
    usleep(static_cast<useconds_t>(g_config.test_delay_record_us));
  ThreadLog* log = thread_log();
  if (!log || !log->file.alive()) {
    note_cuda_used();
    // Still take a sequence number: the gap it leaves is what tells a reader events are missing.
    if (seq == 0) seq = next_seq();
    // The log is still being opened by another thread that did not finish in time: counted, not
    // latched (process_log.h, ensure_process_log).
    if (!log && t_create_error == 0 && !recording_broken()) return note_skipped(seq);
    // Without a process log there is nowhere to say it: opening it already warned.
    if (process_log_ready())
      note_not_recorded(seq, log ? log->file.path() : process_dir(),
                        log ? log->file.error() : t_create_error);
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

  if (seq == 0) {
    seq = next_seq();
    time_ns = event_time_ns();
  }
  fmt::EventCore ev;
  ev.api = static_cast<uint8_t>(api);
  ev.seq = seq;
  ev.time_ns = time_ns < log->deltas.last_time_ns ? log->deltas.last_time_ns : time_ns;
  ev.result = result;
  ev.stack_id = stack_id;
  // Inline (GCC made the lambda a function of its own, with its own prologue, ~28 instructions).
  // Any other event than the usual one is encoded apart, from its parts: `ev` itself never has
  // its address taken, so GCC keeps its parts in registers instead of storing and reloading them.
  const auto encode = [&](uint8_t * out) __attribute__((always_inline)) {
    fmt::EncodedEvent usual;
    if (fmt::encode_usual_event(out, ev, f, log->deltas, &usual)) [[likely]]
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

// record_event_body timed for GMEMHOOK_STACK_STATS (capture_stats.h, note_event). Apart, so
// that the usual path only tests the setting. A release that takes a stack goes on to
// record_event_with_stack, which times it: not timed twice.
template <Body kBody>
__attribute__((noinline, cold)) void record_event_timed(fmt::ApiId api, EventKind kind,
                                                        uint32_t result, fmt::EventFields& f,
                                                        uint64_t seq, uint64_t time_ns) {
  constexpr bool kRelease = kBody == Body::kRelease || kBody == Body::kFree;
  if (kRelease && g_config.free_stacks && g_config.depth > 0)
    return record_event_with_stack(api, kind, result, f, seq, time_ns);
  // The precise event clock (event_time.h), whatever the events' own times come from: a counter
  // read where the TSC is used, cheaper than clock_gettime, so that the measuring adds as little
  // as may be to what it measures.
  const uint64_t start = precise_time_ns();
  record_event_body<kBody, false>(api, kind, result, f, seq, time_ns);
  note_event(precise_time_ns() - start);
}

// An event that a setting asks more of (timing, a test delay, counts, a free's stack): apart, so
// that the usual path tests one setting.
template <Body kBody>
__attribute__((noinline, cold)) void record_event_asked_more(fmt::ApiId api, EventKind kind,
                                                             uint32_t result, fmt::EventFields& f,
                                                             uint64_t seq, uint64_t time_ns) {
  if (g_config.event_stats) return record_event_timed<kBody>(api, kind, result, f, seq, time_ns);
  record_event_body<kBody, false>(api, kind, result, f, seq, time_ns);
}

// Each entry point below: the plain body inline, unless a setting asks for more.
template <Body kBody>
__attribute__((always_inline)) inline void record_event_entry(fmt::ApiId api, EventKind kind,
                                                              uint32_t result, fmt::EventFields& f,
                                                              uint64_t seq, uint64_t time_ns) {
  constexpr bool kRelease = kBody == Body::kRelease || kBody == Body::kFree;
  if (!(kRelease ? g_config.plain_frees : g_config.plain_allocations)) [[unlikely]]
    return record_event_asked_more<kBody>(api, kind, result, f, seq, time_ns);
  record_event_body<kBody, true>(api, kind, result, f, seq, time_ns);
}
}  // namespace

void record_event_with_stack(fmt::ApiId api, EventKind kind, uint32_t result, fmt::EventFields& f,
                             uint64_t seq, uint64_t time_ns) {
  record_event_entry<Body::kAny>(api, kind, result, f, seq, time_ns);
}

void record_release(fmt::ApiId api, EventKind kind, uint32_t result, fmt::EventFields& f,
                    uint64_t seq, uint64_t time_ns) {
  record_event_entry<Body::kRelease>(api, kind, result, f, seq, time_ns);
}

void record_allocation(fmt::ApiId api, uint32_t result, fmt::EventFields& f) {
  record_event_entry<Body::kAlloc>(api, EventKind::Alloc, result, f, 0, 0);
}

void record_free(fmt::ApiId api, uint32_t result, fmt::EventFields& f, uint64_t seq,
                 uint64_t time_ns) {
  record_event_entry<Body::kFree>(api, EventKind::Free, result, f, seq, time_ns);
}

Totals totals() {
  Totals t;
  RegistryLock lock;
  t.allocations = g_done_allocations.load(std::memory_order_relaxed);
  t.frees = g_done_frees.load(std::memory_order_relaxed);
  t.failed = g_done_failed.load(std::memory_order_relaxed);
  t.blocks = g_done_blocks.load(std::memory_order_relaxed);
  for (ThreadLog* l = g_registry; l; l = l->next) {
    if (l->fork_generation != fork_generation()) continue;
    t.allocations += l->allocations.load(std::memory_order_relaxed);
    t.frees += l->frees.load(std::memory_order_relaxed);
    t.failed += l->failed.load(std::memory_order_relaxed);
    t.blocks += l->blocks.load(std::memory_order_relaxed);
  }
  t.cuda_used = g_cuda_used.load(std::memory_order_relaxed);
  return t;
}

void seal_own_thread_log() {
  ThreadLog* log = t_log;
  // Inside a hook (exit from a signal handler that interrupted an append) the chunk is mid-write.
  if (!log || t_state.call_depth != 0 || thread_busy() || log->fork_generation != fork_generation())
    return;
  log->file.seal();
}

void init_recorder() { g_key_ok = pthread_key_create(&g_thread_key, thread_finished) == 0; }

void recorder_fork_child() {
  loss_fork_child();
  g_registry_lock.clear();
  g_registry = nullptr;
  g_spares = 0;  // the parent's spares are this process's memory now, but a few pages don't matter
  for (auto* c : {&g_done_allocations, &g_done_frees, &g_done_failed, &g_done_blocks})
    c->store(0, std::memory_order_relaxed);
  g_cuda_used.store(false, std::memory_order_relaxed);
}

}  // namespace gmemhook

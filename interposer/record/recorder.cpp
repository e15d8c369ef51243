// Per-thread logs: made, registered and retired; and the recorder's entry points for every kind
// of event and setting (see recorder.h). The usual event's path itself is event_body.h.
#include "interposer/record/recorder.h"

#include <cuda.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstring>

#include "interposer/base/busy.h"
#include "interposer/base/config.h"
#include "interposer/base/event_time.h"
#include "interposer/base/real_symbols.h"
#include "interposer/base/text.h"
#include "interposer/capture/capture_stats.h"
#include "interposer/capture/python_frames.h"
#include "interposer/capture/stack_table.h"
#include "interposer/capture/unload_watch.h"
#include "interposer/capture/unwinder.h"
#include "interposer/log/log_file.h"
#include "interposer/log/process_log.h"
#include "interposer/log/record_loss.h"
#include "interposer/record/event_body.h"
#include "interposer/record/nvml_sampler.h"

namespace gmemhook {

using format::EventKind;

namespace {
// A thread's file starts with one small chunk and grows by doubling (format.h, ChunkGeometry):
// a thread that records one event costs one page.
constexpr LogFile::Chunks kThreadChunks{4u << 10, 1u << 20};

// A few logs of exited threads, kept for the next threads: every munmap in a multi-threaded
// process interrupts every other CPU to flush its TLB, and with threads that live for one
// allocation that flush was most of what recording cost.
constexpr int kSpareLogs = 8;

// The process's thread logs: the live ones, the spares, and what exited threads recorded.
struct ThreadLogRegistry {
  // Guards `live` and the spares. A spinlock rather than a mutex: a fork child simply resets it,
  // and it is held for a few pointer stores, once when a thread starts recording and once when
  // it exits. A signal handler calling CUDA on the thread that holds it passes through (busy.h).
  std::atomic_flag lock = ATOMIC_FLAG_INIT;
  ThreadLog* live = nullptr;  // the first of the live threads' logs (ThreadLog::next)
  ThreadLog* spare[kSpareLogs] = {};
  int spares = 0;
  // What exited threads recorded: their logs are gone, their counts stay for the exit summary.
  std::atomic<uint64_t> done_allocations{0}, done_frees{0}, done_failed{0}, done_blocks{0};
  std::atomic<bool> cuda_used{false};
  // Its destructor finishes an exiting thread's log (thread_finished).
  pthread_key_t thread_key = 0;
  bool key_ok = false;
  // membarrier(2) is registered for the process: the exit seals other threads' logs too.
  bool barrier_ok = false;
};
constinit ThreadLogRegistry g_logs;

struct RegistryLock {
  RegistryLock() {
    while (g_logs.lock.test_and_set(std::memory_order_acquire)) {
    }
  }
  ~RegistryLock() { g_logs.lock.clear(std::memory_order_release); }
  BusyScope busy;  // constructed first: set before the lock is tried
};

void drop_tables(ThreadLog* log) {
  log->stacks.release();
  log->py_codes.release();
  log->frame_rules.release();
}

ThreadLog* new_thread_log() {
  {
    RegistryLock lock;
    if (g_logs.spares > 0) return g_logs.spare[--g_logs.spares];
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
    if (g_logs.spares < kSpareLogs) {
      g_logs.spare[g_logs.spares++] = log;
      return;
    }
  }
  drop_tables(log);
  log->~ThreadLog();
  munmap(log, sizeof(ThreadLog));
}

// The pthread key's destructor: the thread is exiting (C++ thread_local destructors, which may
// still free GPU memory, have already run). Its log is finished and cut to what it holds, its
// counts move to the process totals and its memory goes back (else 2000 short-lived threads
// would keep 2 GiB of logs and ~25 KB of memory each). A CUDA call after this point, from a
// later key destructor, simply starts a new log.
void thread_finished(void* p) {
  auto* log = static_cast<ThreadLog*>(p);
  if (t_state.log == log) t_state.log = nullptr;
  if (!log || log->fork_generation != fork_generation()) return;
  {
    BusyScope busy;
    wait_while_logs_sealed();
    log->file.finish();
  }
  {
    RegistryLock lock;
    g_logs.done_allocations.fetch_add(log->allocations.load(std::memory_order_relaxed));
    g_logs.done_frees.fetch_add(log->frees.load(std::memory_order_relaxed));
    g_logs.done_failed.fetch_add(log->failed.load(std::memory_order_relaxed));
    g_logs.done_blocks.fetch_add(log->blocks.load(std::memory_order_relaxed));
    (log->prev ? log->prev->next : g_logs.live) = log->next;
    if (log->next) log->next->prev = log->prev;
  }
  retire_thread_log(log);
}
}  // namespace

void note_cuda_used() {
  if (!g_logs.cuda_used.load(std::memory_order_relaxed))
    g_logs.cuda_used.store(true, std::memory_order_relaxed);
}

namespace {
ThreadLog* create_thread_log() {
  note_cuda_used();
  // After a failed write the disk is full or the directory unusable: trying again on every CUDA
  // call would make a full disk cost seconds.
  if (recording_broken()) return nullptr;
  if (!ensure_process_log()) {
    // Failed (and warned once), or another thread is still opening it: not an error (0).
    t_log_start.create_error = process_log_failed() ? EIO : 0;
    return nullptr;
  }
  ThreadLog* log = new_thread_log();
  if (!log) {
    t_log_start.create_error = ENOMEM;
    return nullptr;
  }
  log->fork_generation = fork_generation();
  uint64_t tid = static_cast<uint64_t>(syscall(SYS_gettid));
  uint64_t start = event_clock_start_ns();  // its events' times start from it
  log->deltas.last_time_ns = start;
  // A thread id can be reused by a later thread of the same process: never overwrite.
  for (int attempt = 0; attempt < 100; ++attempt) {
    FixedString<64> name;
    name.append(format::kThreadFilePrefix).append_uint(tid);
    if (attempt) name.append(".").append_uint(static_cast<uint64_t>(attempt));
    name.append(format::kFileSuffix);
    if (log->file.create(process_dir_fd(), process_dir(), name.c_str(), format::FileKind::Thread,
                         tid, kThreadChunks, start))
      break;
    if (log->file.error() != EEXIST) break;
    log->file = LogFile{};
  }
  if (!log->file.alive()) {
    t_log_start.create_error = log->file.error();
    retire_thread_log(log);
    return nullptr;
  }
  log->owner = &t_state;
  {
    RegistryLock lock;
    log->next = g_logs.live;
    if (g_logs.live) g_logs.live->prev = log;
    g_logs.live = log;
  }
  if (g_logs.key_ok) pthread_setspecific(g_logs.thread_key, log);
  return log;
}
}  // namespace

__attribute__((noinline)) ThreadLog* new_or_forked_thread_log() {
  if (ThreadLog* inherited = t_state.parents_log) {
    // Inherited across fork: the chunk mapping is shared with the parent's file. Drop it; the
    // copy of the ThreadLog is this process's own memory (the registry was reset at fork).
    // Dropped here rather than in the fork child's handler: a fork from a signal handler may have
    // interrupted an event of this thread, which goes on with the copy once the handler returns.
    t_state.parents_log = nullptr;
    inherited->file.close();
    drop_tables(inherited);
    inherited->~ThreadLog();
    munmap(inherited, sizeof(ThreadLog));
    // Else the key's destructor would meet the unmapped copy. Clearing a value never allocates.
    if (g_logs.key_ok) pthread_setspecific(g_logs.thread_key, nullptr);
  }
  if (t_log_start.creating) return nullptr;
  t_log_start.creating = true;
  ThreadLog* log = t_state.log = create_thread_log();
  t_log_start.creating = false;
  return log;
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

__attribute__((noinline, cold)) uint32_t capture_and_intern_counted(ThreadLog* log) {
  return capture_and_intern_with<true>(log);
}

bool graph_pool_bytes(int& device, uint64_t* used, uint64_t* reserved) {
  auto get = driver_fn(g_driver.get_graph_mem_attribute, "cuDeviceGetGraphMemAttribute");
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
  auto range = driver_fn(g_driver.get_address_range, "cuMemGetAddressRange_v2");
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

// An event the usual encoder declined (record_event_body, event_body.h), its core as numbers:
// passed as an EventCore by value (in memory), the copy would be stored on every event before the
// usual encoder's test, ~5 instructions. Encoded the general way straight away;
// format::encode_event would try the usual encoder a second time.
__attribute__((noinline)) format::EncodedEvent encode_unusual_event(
    uint8_t* out, uint8_t api, uint64_t seq, uint64_t time_ns, uint32_t result, uint32_t stack_id,
    const format::EventFields& f, format::EventDeltas& d) {
  format::EventCore ev;
  ev.api = api;
  ev.seq = seq;
  ev.time_ns = time_ns;
  ev.result = result;
  ev.stack_id = stack_id;
  return format::encode_general_event(out, ev, f, d);
}

namespace {
// record_event_body timed for GMEMHOOK_STACK_STATS (capture_stats.h, note_event). Apart, so
// that the usual path only tests the setting. A release that takes a stack goes on to
// record_event_with_stack, which times it: not timed twice.
template <Body kBody>
__attribute__((noinline, cold)) void record_event_timed(format::ApiId api, EventKind kind,
                                                        uint32_t result, format::EventFields& f,
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
__attribute__((noinline, cold)) void record_event_asked_more(format::ApiId api, EventKind kind,
                                                             uint32_t result,
                                                             format::EventFields& f, uint64_t seq,
                                                             uint64_t time_ns) {
  if (g_config.event_stats) return record_event_timed<kBody>(api, kind, result, f, seq, time_ns);
  record_event_body<kBody, false>(api, kind, result, f, seq, time_ns);
}

// Each entry point below: the plain body inline, unless a setting asks for more.
template <Body kBody>
__attribute__((always_inline)) inline void record_event_entry(format::ApiId api, EventKind kind,
                                                              uint32_t result,
                                                              format::EventFields& f, uint64_t seq,
                                                              uint64_t time_ns) {
  constexpr bool kRelease = kBody == Body::kRelease || kBody == Body::kFree;
  if (!(kRelease ? g_config.plain_frees : g_config.plain_allocations)) [[unlikely]]
    return record_event_asked_more<kBody>(api, kind, result, f, seq, time_ns);
  record_event_body<kBody, true>(api, kind, result, f, seq, time_ns);
}
}  // namespace

void record_event_with_stack(format::ApiId api, EventKind kind, uint32_t result,
                             format::EventFields& f, uint64_t seq, uint64_t time_ns) {
  record_event_entry<Body::kAny>(api, kind, result, f, seq, time_ns);
}

void record_release(format::ApiId api, EventKind kind, uint32_t result, format::EventFields& f,
                    uint64_t seq, uint64_t time_ns) {
  record_event_entry<Body::kRelease>(api, kind, result, f, seq, time_ns);
}

void record_allocation(format::ApiId api, uint32_t result, format::EventFields& f) {
  record_event_entry<Body::kAlloc>(api, EventKind::Alloc, result, f, 0, 0);
}

void record_free(format::ApiId api, uint32_t result, format::EventFields& f, uint64_t seq,
                 uint64_t time_ns) {
  record_event_entry<Body::kFree>(api, EventKind::Free, result, f, seq, time_ns);
}

Totals totals() {
  Totals t;
  RegistryLock lock;
  t.allocations = g_logs.done_allocations.load(std::memory_order_relaxed);
  t.frees = g_logs.done_frees.load(std::memory_order_relaxed);
  t.failed = g_logs.done_failed.load(std::memory_order_relaxed);
  t.blocks = g_logs.done_blocks.load(std::memory_order_relaxed);
  for (ThreadLog* l = g_logs.live; l; l = l->next) {
    if (l->fork_generation != fork_generation()) continue;
    t.allocations += l->allocations.load(std::memory_order_relaxed);
    t.frees += l->frees.load(std::memory_order_relaxed);
    t.failed += l->failed.load(std::memory_order_relaxed);
    t.blocks += l->blocks.load(std::memory_order_relaxed);
  }
  t.cuda_used = g_logs.cuda_used.load(std::memory_order_relaxed);
  return t;
}

void seal_thread_logs() {
  // Inside a hook (exit from a signal handler that interrupted an append) this thread's chunk is
  // mid-write, and the registry's lock may be its own.
  if (t_state.call_depth != 0 || thread_busy()) return;
  ErrnoGuard keep_errno;
  ThreadLog* own = t_state.log;
  if (own && own->fork_generation == fork_generation()) own->file.seal();
  // Without the thread-exit key a log's owner may be gone; its state with it.
  if (!g_logs.key_ok || !g_logs.barrier_ok) return;
  RegistryLock lock;  // no log leaves the registry meanwhile
  g_event_globals.sealing_logs.store(true, std::memory_order_relaxed);
  if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) {
    for (ThreadLog* l = g_logs.live; l; l = l->next)
      if (l != own && l->owner && l->fork_generation == fork_generation() &&
          __atomic_load_n(&l->owner->busy, __ATOMIC_ACQUIRE) == 0)
        l->file.seal();
  }
  g_event_globals.sealing_logs.store(false, std::memory_order_release);
}

__attribute__((noinline, cold)) void wait_for_log_seals() {
  // Out of the log while waiting: the sealer may seal it meanwhile. Then in again, and the flag
  // read once more after `busy` (a second seal, after a failed exec, may have begun).
  do {
    --t_state.busy;
    while (g_event_globals.sealing_logs.load(std::memory_order_acquire)) sched_yield();
    ++t_state.busy;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  } while (g_event_globals.sealing_logs.load(std::memory_order_acquire));
}

void init_recorder() {
  g_logs.key_ok = pthread_key_create(&g_logs.thread_key, thread_finished) == 0;
  // Registered at start, while the process has one thread: later the kernel waits for an RCU
  // grace period to register.
  g_logs.barrier_ok = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

void recorder_fork_child() {
  // The forking thread is the child's only one; its log is the parent's (thread_log).
  if (t_state.log) {
    t_state.parents_log = t_state.log;
    t_state.log = nullptr;
  }
  loss_fork_child();
  g_logs.lock.clear();
  g_logs.live = nullptr;
  g_logs.spares =
      0;  // the parent's spares are this process's memory now, but a few pages don't matter
  for (auto* c :
       {&g_logs.done_allocations, &g_logs.done_frees, &g_logs.done_failed, &g_logs.done_blocks})
    c->store(0, std::memory_order_relaxed);
  g_logs.cuda_used.store(false, std::memory_order_relaxed);
}

}  // namespace gmemhook

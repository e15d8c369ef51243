// A CUDA program for the interposer tests: it calls the allocation entry points through every
// path real programs use and prints each call it made ("<api> <address-or-handle> <result>"), so
// a test can compare the log against what really happened. Runs on the simulated device in CI.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#undef cuGetProcAddress

extern "C" {
cudaError_t cudaMallocAsync_ptsz(void**, size_t, cudaStream_t);
cudaError_t cudaFreeAsync_ptsz(void*, cudaStream_t);
cudaError_t cudaMallocFromPoolAsync_ptsz(void**, size_t, cudaMemPool_t, cudaStream_t);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr*, size_t, CUstream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr, CUstream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr*, size_t, CUmemoryPool, CUstream);
}

#include "scenario.h"

namespace {

// ------------------------------------------------------------------------------------------
// Driver entry points, reached through a resolver chosen on the command line.
struct DriverApi {
  decltype(&cuMemAlloc_v2) mem_alloc;
  decltype(&cuMemFree_v2) mem_free;
  decltype(&cuMemAllocPitch_v2) mem_alloc_pitch;
  decltype(&cuMemAllocManaged) mem_alloc_managed;
  decltype(&cuMemAllocAsync) mem_alloc_async;
  decltype(&cuMemAllocAsync_ptsz) mem_alloc_async_ptsz;
  decltype(&cuMemAllocFromPoolAsync) mem_alloc_from_pool_async;
  decltype(&cuMemAllocFromPoolAsync_ptsz) mem_alloc_from_pool_async_ptsz;
  decltype(&cuMemFreeAsync) mem_free_async;
  decltype(&cuMemFreeAsync_ptsz) mem_free_async_ptsz;
  decltype(&cuMemAllocHost_v2) mem_alloc_host;
  decltype(&cuMemHostAlloc) mem_host_alloc;
  decltype(&cuMemFreeHost) mem_free_host;
  decltype(&cuMemCreate) mem_create;
  decltype(&cuMemRelease) mem_release;
  decltype(&cuMemAddressReserve) mem_address_reserve;
  decltype(&cuMemAddressFree) mem_address_free;
  decltype(&cuMemMap) mem_map;
  decltype(&cuMemUnmap) mem_unmap;
};


void* by_symbol(const char* exported, const char*, bool) {
  // The program's own references, as a linker would bind them.
  static void* self = dlopen(nullptr, RTLD_NOW);
  return dlsym(self, exported);
}
void* by_dlsym(const char* exported, const char*, bool) {
  static void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  return dlsym(h, exported);
}
void* by_proc_address(const char*, const char* base, bool ptsz) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status;
  cuuint64_t flags = ptsz ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
  CHECK_DRV(cuGetProcAddress_v2(base, &fn, 13000, flags, &status));
  if (status != CU_GET_PROC_ADDRESS_SUCCESS) die("cuGetProcAddress status", status);
  return fn;
}
void* by_entry_point(const char*, const char* base, bool ptsz) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  CHECK_RT(cudaGetDriverEntryPoint(base, &fn, ptsz ? cudaEnablePerThreadDefaultStream : cudaEnableDefault, &status));
#pragma GCC diagnostic pop
  return fn;
}
void* by_entry_point_version(const char*, const char* base, bool ptsz) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status;
  CHECK_RT(cudaGetDriverEntryPointByVersion(base, &fn, 13000, ptsz ? cudaEnablePerThreadDefaultStream : cudaEnableDefault, &status));
  return fn;
}

DriverApi resolve_driver(Resolve r) {
  DriverApi d{};
  get(d.mem_alloc, r, "cuMemAlloc_v2", "cuMemAlloc");
  get(d.mem_free, r, "cuMemFree_v2", "cuMemFree");
  get(d.mem_alloc_pitch, r, "cuMemAllocPitch_v2", "cuMemAllocPitch");
  get(d.mem_alloc_managed, r, "cuMemAllocManaged", "cuMemAllocManaged");
  get(d.mem_alloc_async, r, "cuMemAllocAsync", "cuMemAllocAsync");
  get(d.mem_alloc_async_ptsz, r, "cuMemAllocAsync_ptsz", "cuMemAllocAsync", true);
  get(d.mem_alloc_from_pool_async, r, "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync");
  get(d.mem_alloc_from_pool_async_ptsz, r, "cuMemAllocFromPoolAsync_ptsz", "cuMemAllocFromPoolAsync", true);
  get(d.mem_free_async, r, "cuMemFreeAsync", "cuMemFreeAsync");
  get(d.mem_free_async_ptsz, r, "cuMemFreeAsync_ptsz", "cuMemFreeAsync", true);
  get(d.mem_alloc_host, r, "cuMemAllocHost_v2", "cuMemAllocHost");
  get(d.mem_host_alloc, r, "cuMemHostAlloc", "cuMemHostAlloc");
  get(d.mem_free_host, r, "cuMemFreeHost", "cuMemFreeHost");
  get(d.mem_create, r, "cuMemCreate", "cuMemCreate");
  get(d.mem_release, r, "cuMemRelease", "cuMemRelease");
  get(d.mem_address_reserve, r, "cuMemAddressReserve", "cuMemAddressReserve");
  get(d.mem_address_free, r, "cuMemAddressFree", "cuMemAddressFree");
  get(d.mem_map, r, "cuMemMap", "cuMemMap");
  get(d.mem_unmap, r, "cuMemUnmap", "cuMemUnmap");
  return d;
}

void driver_context() {
  CHECK_DRV(cuInit(0));
  CUdevice dev;
  CHECK_DRV(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CHECK_DRV(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK_DRV(cuCtxSetCurrent(ctx));
}

void exercise_driver(const DriverApi& d) {
  CUdeviceptr p = 0;
  size_t pitch = 0;
  CHECK_DRV(d.mem_alloc(&p, 1 << 20)); say("cuMemAlloc_v2", p, 0);
  say("cuMemFree_v2", p, 0); CHECK_DRV(d.mem_free(p));
  CHECK_DRV(d.mem_alloc_pitch(&p, &pitch, 1000, 100, 4)); say("cuMemAllocPitch_v2", p, 0);
  say("cuMemFree_v2", p, 0); CHECK_DRV(d.mem_free(p));
  CHECK_DRV(d.mem_alloc_managed(&p, 4096, CU_MEM_ATTACH_GLOBAL)); say("cuMemAllocManaged", p, 0);
  say("cuMemFree_v2", p, 0); CHECK_DRV(d.mem_free(p));
  CHECK_DRV(d.mem_alloc_async(&p, 8192, nullptr)); say("cuMemAllocAsync", p, 0);
  say("cuMemFreeAsync", p, 0); CHECK_DRV(d.mem_free_async(p, nullptr));
  CHECK_DRV(d.mem_alloc_async_ptsz(&p, 8192, nullptr)); say("cuMemAllocAsync_ptsz", p, 0);
  say("cuMemFreeAsync_ptsz", p, 0); CHECK_DRV(d.mem_free_async_ptsz(p, nullptr));
  CUmemoryPool pool;
  CHECK_DRV(cuDeviceGetDefaultMemPool(&pool, 0));
  CHECK_DRV(d.mem_alloc_from_pool_async(&p, 16384, pool, nullptr)); say("cuMemAllocFromPoolAsync", p, 0);
  say("cuMemFreeAsync", p, 0); CHECK_DRV(d.mem_free_async(p, nullptr));
  CHECK_DRV(d.mem_alloc_from_pool_async_ptsz(&p, 16384, pool, nullptr)); say("cuMemAllocFromPoolAsync_ptsz", p, 0);
  say("cuMemFreeAsync_ptsz", p, 0); CHECK_DRV(d.mem_free_async_ptsz(p, nullptr));
  void* h = nullptr;
  CHECK_DRV(d.mem_alloc_host(&h, 4096)); say("cuMemAllocHost_v2", reinterpret_cast<uint64_t>(h), 0);
  say("cuMemFreeHost", reinterpret_cast<uint64_t>(h), 0); CHECK_DRV(d.mem_free_host(h));
  CHECK_DRV(d.mem_host_alloc(&h, 4096, 0)); say("cuMemHostAlloc", reinterpret_cast<uint64_t>(h), 0);
  say("cuMemFreeHost", reinterpret_cast<uint64_t>(h), 0); CHECK_DRV(d.mem_free_host(h));

  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  int devices = 0;
  CHECK_DRV(cuDeviceGetCount(&devices));
  // Not the current device when there is another: the recorded device must come from here.
  prop.location.id = devices > 1 ? 1 : 0;
  say("vmm_device", static_cast<uint64_t>(prop.location.id), 0);
  size_t gran = 0;
  CHECK_DRV(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CUmemGenericAllocationHandle handle;
  CHECK_DRV(d.mem_create(&handle, 2 * gran, &prop, 0)); say("cuMemCreate", handle, 0);
  CUdeviceptr va;
  CHECK_DRV(d.mem_address_reserve(&va, 4 * gran, 0, 0, 0)); say("cuMemAddressReserve", va, 0);
  CHECK_DRV(d.mem_map(va, 2 * gran, 0, handle, 0)); say("cuMemMap", va, 0);
  say("cuMemUnmap", va, 0); CHECK_DRV(d.mem_unmap(va, 2 * gran));
  say("cuMemAddressFree", va, 0); CHECK_DRV(d.mem_address_free(va, 4 * gran));
  say("cuMemRelease", handle, 0); CHECK_DRV(d.mem_release(handle));

  // A failed allocation is recorded with its size.
  CUresult r = d.mem_alloc(&p, size_t{1} << 50);
  if (r == CUDA_SUCCESS) die("huge cuMemAlloc succeeded", 0);
  say("cuMemAlloc_v2", 0, r);
}

// ------------------------------------------------------------------------------------------
// Runtime entry points, through the linked symbols or through dlsym on libcudart.
struct RuntimeApi {
  decltype(&cudaMalloc) malloc_;
  decltype(&cudaFree) free_;
  decltype(&cudaMallocAsync) malloc_async;
  decltype(&cudaMallocAsync_ptsz) malloc_async_ptsz;
  decltype(&cudaFreeAsync) free_async;
  decltype(&cudaFreeAsync_ptsz) free_async_ptsz;
  decltype(&cudaMallocFromPoolAsync) malloc_from_pool_async;
  decltype(&cudaMallocFromPoolAsync_ptsz) malloc_from_pool_async_ptsz;
  cudaError_t (*malloc_managed)(void**, size_t, unsigned);
  decltype(&cudaMallocPitch) malloc_pitch;
  decltype(&cudaMalloc3D) malloc_3d;
  decltype(&cudaMallocHost) malloc_host;
  decltype(&cudaHostAlloc) host_alloc;
  decltype(&cudaFreeHost) free_host;
};

RuntimeApi resolve_runtime(void* handle) {
  RuntimeApi r{};
  auto g = [&](auto& slot, const char* name) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(dlsym(handle, name));
    if (!slot) die(name, -1);
  };
  g(r.malloc_, "cudaMalloc");
  g(r.free_, "cudaFree");
  g(r.malloc_async, "cudaMallocAsync");
  g(r.malloc_async_ptsz, "cudaMallocAsync_ptsz");
  g(r.free_async, "cudaFreeAsync");
  g(r.free_async_ptsz, "cudaFreeAsync_ptsz");
  g(r.malloc_from_pool_async, "cudaMallocFromPoolAsync");
  g(r.malloc_from_pool_async_ptsz, "cudaMallocFromPoolAsync_ptsz");
  g(r.malloc_managed, "cudaMallocManaged");
  g(r.malloc_pitch, "cudaMallocPitch");
  g(r.malloc_3d, "cudaMalloc3D");
  g(r.malloc_host, "cudaMallocHost");
  g(r.host_alloc, "cudaHostAlloc");
  g(r.free_host, "cudaFreeHost");
  return r;
}

void exercise_runtime(const RuntimeApi& r) {
  void* p = nullptr;
  auto u = [](void* q) { return reinterpret_cast<uint64_t>(q); };
  CHECK_RT(r.malloc_(&p, 1 << 20)); say("cudaMalloc", u(p), 0);
  say("cudaFree", u(p), 0); CHECK_RT(r.free_(p));
  CHECK_RT(r.malloc_async(&p, 4096, nullptr)); say("cudaMallocAsync", u(p), 0);
  say("cudaFreeAsync", u(p), 0); CHECK_RT(r.free_async(p, nullptr));
  CHECK_RT(r.malloc_async_ptsz(&p, 4096, nullptr)); say("cudaMallocAsync_ptsz", u(p), 0);
  say("cudaFreeAsync_ptsz", u(p), 0); CHECK_RT(r.free_async_ptsz(p, nullptr));
  cudaMemPool_t pool;
  CHECK_RT(cudaDeviceGetDefaultMemPool(&pool, 0));
  CHECK_RT(r.malloc_from_pool_async(&p, 8192, pool, nullptr)); say("cudaMallocFromPoolAsync", u(p), 0);
  say("cudaFreeAsync", u(p), 0); CHECK_RT(r.free_async(p, nullptr));
  CHECK_RT(r.malloc_from_pool_async_ptsz(&p, 8192, pool, nullptr)); say("cudaMallocFromPoolAsync_ptsz", u(p), 0);
  say("cudaFreeAsync_ptsz", u(p), 0); CHECK_RT(r.free_async_ptsz(p, nullptr));
  CHECK_RT(r.malloc_managed(&p, 4096, cudaMemAttachGlobal)); say("cudaMallocManaged", u(p), 0);
  say("cudaFree", u(p), 0); CHECK_RT(r.free_(p));
  size_t pitch;
  CHECK_RT(r.malloc_pitch(&p, &pitch, 1000, 10)); say("cudaMallocPitch", u(p), 0);
  say("cudaFree", u(p), 0); CHECK_RT(r.free_(p));
  cudaPitchedPtr pp;
  cudaExtent ext{256, 4, 2};
  CHECK_RT(r.malloc_3d(&pp, ext)); say("cudaMalloc3D", u(pp.ptr), 0);
  say("cudaFree", u(pp.ptr), 0); CHECK_RT(r.free_(pp.ptr));
  CHECK_RT(r.malloc_host(&p, 4096)); say("cudaMallocHost", u(p), 0);
  say("cudaFreeHost", u(p), 0); CHECK_RT(r.free_host(p));
  CHECK_RT(r.host_alloc(&p, 4096, 0)); say("cudaHostAlloc", u(p), 0);
  say("cudaFreeHost", u(p), 0); CHECK_RT(r.free_host(p));
  // A CUDA graph: allocations while a stream is captured belong to the graph; launches replay.
  cudaStream_t cs;
  CHECK_RT(cudaStreamCreate(&cs));
  say("cudaStreamBeginCapture", 0, 0); CHECK_RT(cudaStreamBeginCapture(cs, cudaStreamCaptureModeGlobal));
  CHECK_RT(r.malloc_async(&p, 4096, cs)); say("cudaMallocAsync", u(p), 0);
  say("cudaFreeAsync", u(p), 0); CHECK_RT(r.free_async(p, cs));
  cudaGraph_t graph;
  say("cudaStreamEndCapture", 0, 0); CHECK_RT(cudaStreamEndCapture(cs, &graph));
  cudaGraphExec_t exec;
  say("cudaGraphInstantiate", 0, 0); CHECK_RT(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 2; ++i) {
    say("cudaGraphLaunch", 0, 0); CHECK_RT(cudaGraphLaunch(exec, cs));
  }
  say("cudaGraphExecDestroy", 0, 0); CHECK_RT(cudaGraphExecDestroy(exec));
  say("cudaGraphDestroy", 0, 0); CHECK_RT(cudaGraphDestroy(graph));
  CHECK_RT(cudaStreamDestroy(cs));
  cudaError_t e = r.malloc_(&p, size_t{1} << 50);
  if (e == cudaSuccess) die("huge cudaMalloc succeeded", 0);
  say("cudaMalloc", 0, e);
}

// ------------------------------------------------------------------------------------------
int entry_points(const std::string& path) {
  if (path.starts_with("runtime-")) {
    void* runtime = path == "runtime-symbol" ? dlopen(nullptr, RTLD_NOW)
                                             : dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
    exercise_runtime(resolve_runtime(runtime));
    exercise_runtime_memory_kinds(runtime);
    exercise_runtime_graph_nodes(runtime);
    exercise_runtime_graph_upload(runtime);
  } else {
    Resolve r = path == "driver-symbol"         ? by_symbol
                : path == "driver-dlsym"        ? by_dlsym
                : path == "driver-procaddress"  ? by_proc_address
                : path == "driver-entrypoint"   ? by_entry_point
                : path == "driver-entrypoint-version" ? by_entry_point_version
                                                : nullptr;
    if (!r) die("unknown path", 0);
    if (path.starts_with("driver-entrypoint")) CHECK_RT(cudaSetDevice(0));  // runtime up first
    driver_context();
    exercise_driver(resolve_driver(r));
    exercise_driver_memory_kinds(r);
    exercise_driver_graph_nodes(r);
    exercise_driver_graph_upload(r);
  }
  return 0;
}

// N threads × M cudaMalloc/cudaFree pairs.
int threads(int n, int m) {
  CHECK_RT(cudaSetDevice(0));
  std::vector<std::thread> ts;
  std::atomic<int> failures{0};
  for (int t = 0; t < n; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < m; ++i) {
        void* p;
        if (cudaMalloc(&p, 256 + 16 * (t % 4)) != cudaSuccess || cudaFree(p) != cudaSuccess) ++failures;
      }
    });
  for (auto& t : ts) t.join();
  std::printf("failures %d\n", failures.load());
  return failures ? 1 : 0;
}

// `n` threads, `concurrent` alive at a time, each doing one cudaMalloc/cudaFree pair
// and exiting: the case where a thread's log must cost what it holds, not a chunk reserved up front.
int short_threads(int n, int concurrent) {
  CHECK_RT(cudaSetDevice(0));
  std::atomic<int> failures{0};
  for (int done = 0; done < n;) {
    std::vector<std::thread> ts;
    for (int t = 0; t < concurrent && done < n; ++t, ++done)
      ts.emplace_back([&] {
        void* p;
        if (cudaMalloc(&p, 4096) != cudaSuccess || cudaFree(p) != cudaSuccess) ++failures;
      });
    for (auto& t : ts) t.join();
  }
  std::printf("failures %d\n", failures.load());
  return failures ? 1 : 0;
}

// Threads allocate continuously while the main thread forks; the child allocates `child_allocs`
// times and exits. The parent waits for it (a deadlocked child makes the test time out).
int fork_while_allocating(int child_allocs) {
  CHECK_RT(cudaSetDevice(0));
  std::atomic<bool> stop{false};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      while (!stop) {
        void* p;
        if (cudaMalloc(&p, 512) == cudaSuccess) cudaFree(p);
      }
    });
  usleep(20000);
  int statuses = 0;
  for (int round = 0; round < 5; ++round) {
    // The forking thread records too: its child must not go on in the parent's log.
    void* q;
    if (cudaMalloc(&q, 256) == cudaSuccess) cudaFree(q);
    pid_t pid = fork();
    if (pid == 0) {
      for (int i = 0; i < child_allocs; ++i) {
        void* p;
        if (cudaMalloc(&p, 1024) != cudaSuccess) _exit(3);
        std::printf("child %d 0x%" PRIxPTR "\n", getpid(), reinterpret_cast<uintptr_t>(p));
        if (i % 2) cudaFree(p);
      }
      std::fflush(stdout);
      std::exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    statuses += WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }
  stop = true;
  for (auto& t : ts) t.join();
  std::printf("children ok %d\n", statuses);
  return statuses == 5 ? 0 : 1;
}

// Allocates forever (kill) or `n` times then dies (abort, segv, exit); prints every pointer
// after cudaMalloc returned, so the test knows what the log must hold.
int die_while_allocating(const std::string& how, int n) {
  CHECK_RT(cudaSetDevice(0));
  setvbuf(stdout, nullptr, _IONBF, 0);
  for (int i = 0; how == "kill" || i < n; ++i) {
    void* p;
    if (cudaMalloc(&p, 4096) != cudaSuccess) die("cudaMalloc", 0);
    std::printf("%" PRIxPTR "\n", reinterpret_cast<uintptr_t>(p));
    if (i % 2) cudaFree(p);  // frees happen too; only the returned allocations are checked
  }
  if (how == "abort") std::abort();
  if (how == "segv") {
    volatile int* null = nullptr;
    *null = 1;
  }
  if (how == "_exit") _exit(5);
  return 4;
}

// A signal handler that allocates while its thread is inside the hook. The test sets
// GMEMHOOK_TEST_DELAY_RECORD_US, so the recorder holds each event for a while after the real
// call returned; a second thread aims one SIGUSR1 into that window per round. Prints how many
// handlers ran their cudaMalloc+cudaFree successfully.
std::atomic<int> g_handler_pairs{0};
void allocate_in_handler(int) {
  int saved = errno;
  void* p;
  if (cudaMalloc(&p, 512) == cudaSuccess && cudaFree(p) == cudaSuccess) g_handler_pairs.fetch_add(1);
  errno = saved;
}

int signal_inside_hook(int rounds, int aim_us) {
  CHECK_RT(cudaSetDevice(0));
  struct sigaction sa {};
  sa.sa_handler = allocate_in_handler;
  sigaction(SIGUSR1, &sa, nullptr);
  const pthread_t self = pthread_self();
  std::atomic<int> started{0};
  std::thread aimer([&] {
    for (int r = 1; r <= rounds; ++r) {
      while (started.load() < r) usleep(100);
      usleep(static_cast<useconds_t>(aim_us));
      pthread_kill(self, SIGUSR1);
      while (g_handler_pairs.load() < r) usleep(100);
    }
  });
  for (int r = 1; r <= rounds; ++r) {
    void* p;
    started.store(r);
    CHECK_RT(cudaMalloc(&p, 4096));  // the signal lands while the hook records this
    while (g_handler_pairs.load() < r) usleep(100);
    CHECK_RT(cudaFree(p));
  }
  aimer.join();
  std::printf("handler pairs %d\n", g_handler_pairs.load());
  return 0;
}

// Soak: `n` threads × `m` cudaMalloc/cudaFree pairs, each thread publishing in the
// MAP_SHARED file `counts` (one SoakSlot per thread, soak_test.cpp) its kernel tid and how many of
// its calls had returned, stored after each return: what survives a SIGKILL is exactly what the
// program knew had happened. Prints "started" once every thread has its tid published.
struct SoakSlot {
  std::atomic<uint64_t> tid;
  std::atomic<uint64_t> returned;
};

int soak(int n, int m, const char* counts) {
  int fd = open(counts, O_RDWR);
  if (fd < 0) die("open counts", 0);
  void* map = mmap(nullptr, sizeof(SoakSlot) * static_cast<size_t>(n), PROT_READ | PROT_WRITE,
                   MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) die("mmap counts", 0);
  auto* slots = static_cast<SoakSlot*>(map);
  CHECK_RT(cudaSetDevice(0));
  std::atomic<int> ready{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < n; ++t)
    ts.emplace_back([&, t] {
      SoakSlot& slot = slots[t];
      slot.tid.store(static_cast<uint64_t>(gettid()), std::memory_order_relaxed);
      ready.fetch_add(1);
      while (ready.load() < n) std::this_thread::yield();
      for (int i = 0; i < m; ++i) {
        void* p;
        if (cudaMalloc(&p, 256) != cudaSuccess) die("cudaMalloc", 0);
        slot.returned.fetch_add(1, std::memory_order_relaxed);
        if (cudaFree(p) != cudaSuccess) die("cudaFree", 0);
        slot.returned.fetch_add(1, std::memory_order_relaxed);
      }
    });
  while (ready.load() < n) std::this_thread::yield();
  std::printf("started\n");
  std::fflush(stdout);
  for (auto& t : ts) t.join();
  return 0;
}

// A program that puts a directory of its own on the descriptor number the hook holds
// for its process directory (as closefrom + open, or dup2, would). Then a new thread allocates:
// its log file must not be created in `own_dir`. Prints how many descriptors it replaced.
int steal_dir_fd(const char* own_dir) {
  void* p;
  CHECK_RT(cudaMalloc(&p, 4096));  // the hook opens its directory
  int replaced = 0;
  for (int fd = 3; fd < 1024; ++fd) {
    char link[64], target[4096];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    if (!std::strstr(target, "gmemhook_scenario.")) continue;
    int mine = open(own_dir, O_RDONLY | O_DIRECTORY);
    if (mine < 0 || dup2(mine, fd) < 0) die("dup2", 0);
    close(mine);
    ++replaced;
  }
  std::thread([] {
    void* q;
    if (cudaMalloc(&q, 4096) != cudaSuccess || cudaFree(q) != cudaSuccess) die("thread", 0);
  }).join();
  std::printf("replaced %d\n", replaced);
  return 0;
}

// Prints, allocates, exits with `code`: checks that output and exit status pass through.
int plain(int code) {
  std::printf("hello from scenario\n");
  void* p;
  CHECK_RT(cudaMalloc(&p, 4096));
  return code;
}

// gmemhook_pause_events (include/gmemhook/control.h), looked up as a program would: a recorded
// allocation, then while paused an allocation, a free of the first, and an allocation and free
// on another thread; resumed, a free of the paused allocation and one more recorded pair. Prints
// each call's value ("pause 1 -> 0") and every pointer ("a 0x..."), or "no gmemhook_pause_events".
int pause_events() {
  using Pause = int (*)(int);
  auto pause = reinterpret_cast<Pause>(dlsym(RTLD_DEFAULT, "gmemhook_pause_events"));
  if (!pause) {
    std::printf("no gmemhook_pause_events\n");
    return 0;
  }
  void *a, *b, *c;
  CHECK_RT(cudaMalloc(&a, 4096));
  std::printf("pause 1 -> %d\n", pause(1));
  std::printf("pause 1 -> %d\n", pause(1));
  CHECK_RT(cudaMalloc(&b, 8192));
  CHECK_RT(cudaFree(a));
  std::thread([] {
    void* t;
    CHECK_RT(cudaMalloc(&t, 12288));
    CHECK_RT(cudaFree(t));
  }).join();
  std::printf("pause 0 -> %d\n", pause(0));
  CHECK_RT(cudaFree(b));
  CHECK_RT(cudaMalloc(&c, 16384));
  CHECK_RT(cudaFree(c));
  std::printf("a 0x%" PRIx64 "\nb 0x%" PRIx64 "\nc 0x%" PRIx64 "\n", u(a), u(b), u(c));
  return 0;
}

// One allocation, then the image is replaced (its log must say exec, not killed).
int exec_after_cuda() {
  void* p;
  CHECK_RT(cudaMalloc(&p, 4096));
  std::fflush(stdout);
  execl("/bin/sh", "sh", "-c", "echo replaced", static_cast<char*>(nullptr));
  return 98;
}

// A small training-shaped program for the HTML report's tests: weights that stay,
// activations that come and go each step (`scale` times larger on an outlier rank), a buffer
// never freed and one request too large for the device. Each part has a function of its own, so
// each is a site of its own.
__attribute__((noinline)) void load_weights(std::vector<void*>& weights) {
  for (int i = 0; i < 4; ++i) CHECK_RT(cudaMalloc(&weights.emplace_back(), size_t{8} << 20));
}
__attribute__((noinline)) void run_step(int scale) {
  void* a[3];
  for (void*& p : a) CHECK_RT(cudaMalloc(&p, (size_t{2} << 20) * scale));
  usleep(300);
  for (void* p : a) CHECK_RT(cudaFree(p));
}
__attribute__((noinline)) void keep_cache() {
  void* p;
  CHECK_RT(cudaMalloc(&p, size_t{3} << 20));  // never freed: the leak the page lists
}
__attribute__((noinline)) void ask_too_much() {
  void* p;
  if (cudaMalloc(&p, size_t{1} << 50) == cudaSuccess) die("huge cudaMalloc succeeded", 0);
}
int training(int scale) {
  std::vector<void*> weights;
  load_weights(weights);
  for (int step = 0; step < 20; ++step) run_step(scale);
  keep_cache();
  ask_too_much();
  for (void* p : weights) CHECK_RT(cudaFree(p));
  return 0;
}

// Allocations from twelve call sites at the same depth (same stack pointer in the
// recorder, different return addresses above it), site 0 every other time and the others in
// turn between (so the hook's recent walks of sites 1-11 all follow site 0's and compete for the
// same places), 4096 × (site + 1) bytes each, on `n` threads that run one after another, each
// making `m`: each thread takes over the log of the one before (its stack table starts again). A
// stack id the hook keeps with a recent walk must never be given to another site's walk, nor
// outlive the table.
volatile int g_site_sink = 0;
__attribute__((noinline)) void* alloc_at_site(int site) {
  void* p = nullptr;
  switch (site) {
#define GMEMHOOK_SITE(k)                                       \
  case k:                                                      \
    CHECK_RT(cudaMalloc(&p, 4096 * (k + 1)));                  \
    g_site_sink = g_site_sink + k; /* keeps the calls apart */ \
    break;
    GMEMHOOK_SITE(0)
    GMEMHOOK_SITE(1) GMEMHOOK_SITE(2) GMEMHOOK_SITE(3) GMEMHOOK_SITE(4) GMEMHOOK_SITE(5)
        GMEMHOOK_SITE(6) GMEMHOOK_SITE(7) GMEMHOOK_SITE(8) GMEMHOOK_SITE(9) GMEMHOOK_SITE(10)
            GMEMHOOK_SITE(11)
#undef GMEMHOOK_SITE
  }
  return p;
}
int sites(int n, int m) {
  CHECK_RT(cudaSetDevice(0));
  for (int t = 0; t < n; ++t) {
    std::thread([m] {
      for (int i = 0; i < m; ++i) CHECK_RT(cudaFree(alloc_at_site(i % 2 ? 1 + (i / 2) % 11 : 0)));
    }).join();
  }
  return 0;
}

// For the HTML page's leaks table: `n` leaks (up to 32), each from a function of its own, so a
// row of its own: more rows than the 20 the text report and the page list.
template <int K>
__attribute__((noinline)) void leak_in_function() {
  void* p = nullptr;
  CHECK_RT(cudaMalloc(&p, 4096 * (K + 1)));
  g_site_sink = g_site_sink + K;  // keeps the functions apart
}
template <int... K>
void leak_in_functions(int n, std::integer_sequence<int, K...>) {
  ((K < n ? leak_in_function<K>() : void()), ...);
}
int leak_rows(int n) {
  CHECK_RT(cudaSetDevice(0));
  leak_in_functions(n, std::make_integer_sequence<int, 32>{});
  return 0;
}

// For the HTML page's failure count: 1 MiB kept, then `n` requests the simulated device cannot
// give (each must fail with cudaErrorMemoryAllocation): more failures than the 16 a timeline keeps.
int ooms(int n) {
  CHECK_RT(cudaSetDevice(0));
  void* kept = nullptr;
  CHECK_RT(cudaMalloc(&kept, 1 << 20));
  for (int i = 0; i < n; ++i) {
    void* p = nullptr;
    const cudaError_t rc = cudaMalloc(&p, (size_t{1} << 50) + static_cast<size_t>(i));
    if (rc != cudaErrorMemoryAllocation) die("cudaMalloc of 1 PiB", static_cast<int>(rc));
  }
  return 0;
}

// For NVML samples: a context, then 64 MiB, 128 MiB more, the 128 MiB freed, with a
// pause after each step; the 64 MiB stay allocated at exit. With pause < 0 only the context is
// made, then the process sleeps -pause ms (the GPU check's "context only" process).
int nvml_steps(int pause_ms) {
  CHECK_RT(cudaFree(nullptr));
  say("context", 0, 0);
  std::fflush(stdout);
  if (pause_ms < 0) {
    usleep(static_cast<useconds_t>(-pause_ms) * 1000);
    return 0;
  }
  auto pause = [&] { usleep(static_cast<useconds_t>(pause_ms) * 1000); };
  pause();
  void *kept = nullptr, *freed = nullptr;
  CHECK_RT(cudaMalloc(&kept, 64u << 20));
  pause();
  CHECK_RT(cudaMalloc(&freed, 128u << 20));
  pause();
  CHECK_RT(cudaFree(freed));
  pause();
  return 0;
}

// For the devices NVML samples: device 0's first call and two allocations (the first one's sample;
// the second asks for a peak check), then at once an allocation on device 1, well inside the
// quarter interval in which no allocation asks again: device 1 must still be sampled at exit.
int nvml_second_device() {
  CHECK_RT(cudaSetDevice(0));
  CHECK_RT(cudaFree(nullptr));
  void *first = nullptr, *second = nullptr, *other = nullptr;
  CHECK_RT(cudaMalloc(&first, 1u << 20));
  CHECK_RT(cudaMalloc(&second, 1u << 20));
  CHECK_RT(cudaSetDevice(1));
  CHECK_RT(cudaMalloc(&other, 2u << 20));
  return 0;
}

// A program whose only memory is a graph's (hook_bench's launch mode, hookcut3's report): its
// first hooked call is the allocation node's, which names device 0; the node's 8 MiB come with
// the launch and stay live to the exit. NVML must cover device 0 from the first call on.
int nvml_graph(int pause_ms) {
  cudaStream_t s;
  CHECK_RT(cudaStreamCreate(&s));
  cudaGraph_t g;
  CHECK_RT(cudaGraphCreate(&g, 0));
  cudaMemAllocNodeParams params{};
  params.poolProps.allocType = cudaMemAllocationTypePinned;
  params.poolProps.location = {cudaMemLocationTypeDevice, 0};
  params.bytesize = 8u << 20;
  cudaGraphNode_t node;
  CHECK_RT(cudaGraphAddMemAllocNode(&node, g, nullptr, 0, &params));
  cudaGraphExec_t exec;
  CHECK_RT(cudaGraphInstantiate(&exec, g, 0));
  CHECK_RT(cudaGraphLaunch(exec, s));
  usleep(static_cast<useconds_t>(pause_ms) * 1000);
  return 0;
}

// `pairs` cudaMalloc+cudaFree pairs after a tenth as many to warm up, then the page faults the
// loop's thread took (perf's count: faults the thread ran into, not those a system call such as
// madvise made for it, which getrusage counts too), or "faults unknown" where perf events are
// not allowed. The hook writes its log through a MAP_SHARED mapping, and each page written the
// first time would be a fault on the traced thread if the log did not prefault its pages ahead.
int log_pages(int pairs) {
  auto pair = [] {
    void* p = nullptr;
    CHECK_RT(cudaMalloc(&p, 4096));
    CHECK_RT(cudaFree(p));
  };
  for (int i = 0; i < pairs / 10; ++i) pair();
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_PAGE_FAULTS;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  const int fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
  for (int i = 0; i < pairs; ++i) pair();
  uint64_t faults = 0;
  if (fd < 0 || read(fd, &faults, sizeof faults) != sizeof faults)
    std::printf("faults unknown\n");
  else
    std::printf("faults %" PRIu64 "\n", faults);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gmemhook_scenario MODE [ARGS]\n");
    return 2;
  }
  std::string mode = argv[1];
  auto arg = [&](int i, int def) { return argc > i ? std::atoi(argv[i]) : def; };
  if (mode == "entry-points" && argc > 2) return entry_points(argv[2]);
  if (mode == "threads") return threads(arg(2, 16), arg(3, 50000));
  if (mode == "short-threads") return short_threads(arg(2, 2000), arg(3, 8));
  if (mode == "fork") return fork_while_allocating(arg(2, 10));
  if (mode == "die" && argc > 2) return die_while_allocating(argv[2], arg(3, 500));
  if (mode == "plain") return plain(arg(2, 0));
  if (mode == "pause-events") return pause_events();
  if (mode == "steal-dir-fd" && argc > 2) return steal_dir_fd(argv[2]);
  if (mode == "soak" && argc > 4) return soak(arg(2, 64), arg(3, 20000), argv[4]);
  if (mode == "signal-inside-hook") return signal_inside_hook(arg(2, 5), arg(3, 20000));
  if (mode == "exec-after-cuda") return exec_after_cuda();
  if (mode == "training") return training(arg(2, 1));
  if (mode == "sites") return sites(arg(2, 3), arg(3, 100));
  if (mode == "leak-rows") return leak_rows(arg(2, 24));
  if (mode == "ooms") return ooms(arg(2, 20));
  if (mode == "nvml") return nvml_steps(arg(2, 100));
  if (mode == "nvml-second-device") return nvml_second_device();
  if (mode == "nvml-graph") return nvml_graph(arg(2, 10));
  if (mode == "reload") return reload_library(arg(2, 40), false);
  if (mode == "reload-leak") return reload_library(arg(2, 40), true);
  if (mode == "dlclose-results") return dlclose_results();
  if (mode == "log-pages") return log_pages(arg(2, 100000));
  if (mode == "pages-after-unmap" && argc > 2)
    return pages_after_unmap(argv[2], arg(3, 20000), arg(4, 600));
  if (mode == "fork-pages") return fork_with_pages_asked(arg(2, 20000));
  if (mode == "new-chunk-pages") return new_chunk_pages(arg(2, 256));
  if (mode == "exit-beside-threads" && argc > 4)
    return exit_beside_threads(arg(2, 4), arg(3, 100), std::string(argv[4]) == "busy");
  std::fprintf(stderr, "scenario: unknown mode %s\n", mode.c_str());
  return 2;
}

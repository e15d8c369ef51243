// Times cudaMalloc+cudaFree pairs on the simulated device with the call made `depth` frames
// deep. Run once plain and once under LD_PRELOAD=libgmemhook.so (bench/run_hook_bench.sh does
// both in one run) to get the nanoseconds the hook adds per event. Mode `launch` times
// cudaGraphLaunch of a graph with one allocation node instantiated with auto-free on launch
// instead (each launch gives back the previous launch's memory and takes it again): what
// recording a graph launch costs — its stack and the graph pool's figures. The
// `malloc` mode makes malloc+free pairs instead, at the same depth, for heaptrack: the peer a
// recorder of every allocation with its stack is compared with.
// A fourth argument `paths` > 1 makes each pair at the bottom of one of that many call paths in
// turn (the paths part in their frames' return addresses), as a training loop's ~135 tensor
// allocations a step come from ~135 places; a fifth, `evict_kb`, writes that many KiB between two
// pairs, as the program's own work between two events pushes the hook's tables out of the caches.
// bench/CMakeLists.txt also builds this file without frame pointers (hook_bench_nofp): the
// frames libtorch is built with (DWARF rules from rsp, each return address a lone stack word).
// Modes `paired` (cuMemAlloc_v2+cuMemFree_v2) and `paired-malloc` time the hooked call against
// the same call made past the preload, in alternating windows of one process (paired_windows.cpp):
// `hook_bench DEPTH WINDOW_PAIRS paired|paired-malloc [WINDOWS]` (default 40 windows a side).
#include <cuda_runtime_api.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "paired_windows.h"

namespace {

volatile int g_sink = 0;

// One pair per call at the bottom of a recursion of `depth` frames. noinline and the work after
// the recursive call keep every frame on the stack.
enum class Mode { Sync, Async, Malloc, Launch };
Mode g_mode = Mode::Sync;  // Async: cudaMallocAsync/cudaFreeAsync from the default pool
cudaGraphExec_t g_exec = nullptr;  // mode launch: the graph each iteration launches

// One pair of the mode's calls (one launch in mode launch); the number that failed. Inlined, so
// the calls are made from the frame at the bottom of the recursion, `depth` frames deep.
__attribute__((always_inline)) inline long one_pair() {
  long failures = 0;
  void* p = nullptr;
  if (g_mode == Mode::Launch) {
    failures += cudaGraphLaunch(g_exec, nullptr) != cudaSuccess;
  } else if (g_mode == Mode::Async) {
    failures += cudaMallocAsync(&p, 4096, nullptr) != cudaSuccess;
    failures += cudaFreeAsync(p, nullptr) != cudaSuccess;
  } else if (g_mode == Mode::Malloc) {
    // volatile: the compiler may not pair the two calls away.
    void* volatile q = std::malloc(4096);
    failures += q == nullptr;
    std::free(q);
  } else {
    failures += cudaMalloc(&p, 4096) != cudaSuccess;
    failures += cudaFree(p) != cudaSuccess;
  }
  return failures;
}

__attribute__((noinline)) long pairs_at_depth(int depth, long pairs) {
  if (depth > 1) {
    long r = pairs_at_depth(depth - 1, pairs);
    g_sink = g_sink + 1;
    return r;
  }
  long failures = 0;
  for (long i = 0; i < pairs; ++i) failures += one_pair();
  return failures;
}

// Paths mode: one pair at the bottom of `depth` frames, each frame from one of two functions
// chosen by a bit of `path`, so that paths differ in their return addresses.
int g_evict_bytes = 0;
char* g_evict = nullptr;
__attribute__((noinline)) long path_a(int depth, unsigned path);
__attribute__((noinline)) long path_b(int depth, unsigned path);
__attribute__((noinline)) long path_step(int depth, unsigned path) {
  if (depth <= 1) return one_pair();
  // Levels depth..2 choose by bits depth - 2..0: up to 2^12 distinct paths at 28 frames.
  long r = (path >> ((depth - 2) & 15)) & 1 ? path_b(depth - 1, path) : path_a(depth - 1, path);
  g_sink = g_sink + 3;
  return r;
}
__attribute__((noinline)) long path_a(int depth, unsigned path) {
  long r = path_step(depth, path);
  g_sink = g_sink + 1;  // work after the call: no tail call
  return r;
}
__attribute__((noinline)) long path_b(int depth, unsigned path) {
  long r = path_step(depth, path);
  g_sink = g_sink + 2;
  return r;
}
long pairs_on_paths(int depth, long pairs, unsigned paths) {
  long failures = 0;
  for (long i = 0; i < pairs; ++i) {
    // Each path's frames are two per level (path_a/b and path_step): depth levels in all.
    failures += path_step(depth / 2, static_cast<unsigned>(i % paths));
    for (int b = 0; b < g_evict_bytes; b += 64) g_evict[b] = static_cast<char>(i);
  }
  return failures;
}

// A graph holding one 4 KiB allocation node, instantiated with auto-free on launch.
bool make_launch_graph() {
  cudaGraph_t graph;
  if (cudaGraphCreate(&graph, 0) != cudaSuccess) return false;
  cudaMemAllocNodeParams p{};
  p.poolProps.allocType = cudaMemAllocationTypePinned;
  p.poolProps.location = {cudaMemLocationTypeDevice, 0};
  p.bytesize = 4096;
  cudaGraphNode_t node;
  return cudaGraphAddMemAllocNode(&node, graph, nullptr, 0, &p) == cudaSuccess &&
         cudaGraphInstantiate(&g_exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch) ==
             cudaSuccess;
}

}  // namespace

int main(int argc, char** argv) {
  int depth = argc > 1 ? std::atoi(argv[1]) : 32;
  long pairs = argc > 2 ? std::atol(argv[2]) : 200000;
  const std::string mode = argc > 3 ? argv[3] : "sync";
  if (mode == "paired" || mode == "paired-malloc") {
    const int windows = argc > 4 ? std::max(1, std::atoi(argv[4])) : 40;
    return hook_bench::run_paired(mode == "paired" ? hook_bench::PairedCall::Cuda
                                                   : hook_bench::PairedCall::Malloc,
                                  depth, pairs, windows);
  }
  const unsigned paths = argc > 4 ? static_cast<unsigned>(std::atoi(argv[4])) : 1;
  g_evict_bytes = argc > 5 ? std::atoi(argv[5]) * 1024 : 0;
  if (g_evict_bytes > 0) g_evict = static_cast<char*>(std::calloc(1, g_evict_bytes));
  g_mode = mode == "async"    ? Mode::Async
           : mode == "malloc" ? Mode::Malloc
           : mode == "launch" ? Mode::Launch
                              : Mode::Sync;
  if (g_mode != Mode::Malloc && cudaSetDevice(0) != cudaSuccess) return 1;
  if (g_mode == Mode::Launch && !make_launch_graph()) return 1;
  const bool on_paths = paths > 1 && g_mode != Mode::Launch;
  const auto run = [&](long n) {
    return on_paths ? pairs_on_paths(depth, n, paths) : pairs_at_depth(depth, n);
  };
  run(pairs / 10);  // warm up: caches, first-touch of log pages
  timespec c0{}, c1{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
  auto t0 = std::chrono::steady_clock::now();
  long failures = run(pairs);
  auto t1 = std::chrono::steady_clock::now();
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
  double ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(pairs);
  if (g_mode == Mode::Launch) cudaDeviceSynchronize();
  // This thread's CPU time too: on a machine shared with other work, wall time includes the time
  // the thread waited for a core, CPU time does not.
  double cpu = (static_cast<double>(c1.tv_sec - c0.tv_sec) * 1e9 +
                static_cast<double>(c1.tv_nsec - c0.tv_nsec)) / static_cast<double>(pairs);
  std::printf("depth %d pairs %ld ns_per_pair %.1f %s cpu_ns_per_pair %.1f", depth, pairs, ns,
              mode.c_str(), cpu);
  if (on_paths) std::printf(" paths %u evict_kb %d", paths, g_evict_bytes / 1024);
  std::printf("\n");
  return failures ? 1 : 0;
}

// Times cudaMalloc+cudaFree pairs on the simulated device with the call made `depth` frames
// deep. Run once plain and once under LD_PRELOAD=libgmemhook.so (bench/run_hook_bench.sh does
// both in one run) to get the nanoseconds the hook adds per event. Mode `launch` times
// cudaGraphLaunch of a graph with one allocation node instantiated with auto-free on launch
// instead (each launch gives back the previous launch's memory and takes it again): what
// recording a graph launch costs — its stack and the graph pool's figures (issue 12). The
// `malloc` mode makes malloc+free pairs instead, at the same depth, for heaptrack: the peer a
// recorder of every allocation with its stack is compared with (issue 14).
#include <cuda_runtime_api.h>

#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

volatile int g_sink = 0;

// One pair per call at the bottom of a recursion of `depth` frames. noinline and the work after
// the recursive call keep every frame on the stack.
enum class Mode { Sync, Async, Malloc, Launch };
Mode g_mode = Mode::Sync;  // Async: cudaMallocAsync/cudaFreeAsync from the default pool
cudaGraphExec_t g_exec = nullptr;  // mode launch: the graph each iteration launches

__attribute__((noinline)) long pairs_at_depth(int depth, long pairs) {
  if (depth > 1) {
    long r = pairs_at_depth(depth - 1, pairs);
    g_sink = g_sink + 1;
    return r;
  }
  long failures = 0;
  for (long i = 0; i < pairs; ++i) {
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
  g_mode = mode == "async"    ? Mode::Async
           : mode == "malloc" ? Mode::Malloc
           : mode == "launch" ? Mode::Launch
                              : Mode::Sync;
  if (g_mode != Mode::Malloc && cudaSetDevice(0) != cudaSuccess) return 1;
  if (g_mode == Mode::Launch && !make_launch_graph()) return 1;
  pairs_at_depth(depth, pairs / 10);  // warm up: caches, first-touch of log pages
  timespec c0{}, c1{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
  auto t0 = std::chrono::steady_clock::now();
  long failures = pairs_at_depth(depth, pairs);
  auto t1 = std::chrono::steady_clock::now();
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
  double ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(pairs);
  if (g_mode == Mode::Launch) cudaDeviceSynchronize();
  // This thread's CPU time too: on a machine shared with other work, wall time includes the time
  // the thread waited for a core, CPU time does not.
  double cpu = (static_cast<double>(c1.tv_sec - c0.tv_sec) * 1e9 +
                static_cast<double>(c1.tv_nsec - c0.tv_nsec)) / static_cast<double>(pairs);
  std::printf("depth %d pairs %ld ns_per_pair %.1f %s cpu_ns_per_pair %.1f\n", depth, pairs, ns,
              mode.c_str(), cpu);
  return failures ? 1 : 0;
}

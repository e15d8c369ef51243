// Times cudaMalloc+cudaFree pairs on the simulated device with the call made `depth` frames
// deep. Run once plain and once under LD_PRELOAD=libgmemhook.so (bench/run_hook_bench.sh does
// both in one run) to get the nanoseconds the hook adds per event.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

volatile int g_sink = 0;

// One pair per call at the bottom of a recursion of `depth` frames. noinline and the work after
// the recursive call keep every frame on the stack.
bool g_async = false;  // cudaMallocAsync/cudaFreeAsync from the default pool instead

__attribute__((noinline)) long pairs_at_depth(int depth, long pairs) {
  if (depth > 1) {
    long r = pairs_at_depth(depth - 1, pairs);
    g_sink = g_sink + 1;
    return r;
  }
  long failures = 0;
  for (long i = 0; i < pairs; ++i) {
    void* p = nullptr;
    if (g_async) {
      failures += cudaMallocAsync(&p, 4096, nullptr) != cudaSuccess;
      failures += cudaFreeAsync(p, nullptr) != cudaSuccess;
    } else {
      failures += cudaMalloc(&p, 4096) != cudaSuccess;
      failures += cudaFree(p) != cudaSuccess;
    }
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  int depth = argc > 1 ? std::atoi(argv[1]) : 32;
  long pairs = argc > 2 ? std::atol(argv[2]) : 200000;
  g_async = argc > 3 && std::string(argv[3]) == "async";
  if (cudaSetDevice(0) != cudaSuccess) return 1;
  pairs_at_depth(depth, pairs / 10);  // warm up: caches, first-touch of log pages
  auto t0 = std::chrono::steady_clock::now();
  long failures = pairs_at_depth(depth, pairs);
  auto t1 = std::chrono::steady_clock::now();
  double ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(pairs);
  std::printf("depth %d pairs %ld ns_per_pair %.1f %s\n", depth, pairs, ns, g_async ? "async" : "sync");
  return failures ? 1 : 0;
}

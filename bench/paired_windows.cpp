// hook_bench's paired mode: short windows of the traced call (the exported name through the PLT,
// which LD_PRELOAD routes to the recorder) alternate with windows of the same call made straight
// to the library, past any preload, at the same depth and with the same pointer use. The added
// cost per event is the median over pairs of windows of (traced - direct) / 2 per pair. Comparing
// separate processes moved the figure 63-137 ns between three runs of one build on the GPU
// machine's host (docs/performance.md); inside a process that state cancels.
//
// The direct names: glibc exports malloc's code also as __libc_malloc/__libc_free, which
// heaptrack 1.4 does not define (nm -D libheaptrack_preload.so); the simulated device exports
// fakecuda_direct_cuMemAlloc_v2/_cuMemFree_v2 (aliases, tests/fakecuda/driver_memory.cpp). The
// driver calls, not cudaMalloc: the simulated runtime reaches cuMemAlloc_v2 through a pointer the
// hook may have handed out, so a "direct" cudaMalloc would still be recorded inside.
#include "paired_windows.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

// Weak: against a libcuda.so.1 or libc without them, the mode says so instead of failing to load.
extern "C" {
CUresult fakecuda_direct_cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) __attribute__((weak));
CUresult fakecuda_direct_cuMemFree_v2(CUdeviceptr dptr) __attribute__((weak));
void* __libc_malloc(size_t size) __attribute__((weak));
void __libc_free(void* p) __attribute__((weak));
}

namespace hook_bench {
namespace {

volatile int g_sink = 0;

// One loop body for both paths, so that they differ only in the symbol each call binds to (each a
// direct call through this executable's PLT).
template <CUresult (*Alloc)(CUdeviceptr*, size_t), CUresult (*Free)(CUdeviceptr)>
__attribute__((noinline)) long cuda_pairs(long pairs) {
  long failures = 0;
  for (long i = 0; i < pairs; ++i) {
    CUdeviceptr p = 0;
    failures += Alloc(&p, 4096) != CUDA_SUCCESS;
    failures += Free(p) != CUDA_SUCCESS;
  }
  return failures;
}

template <void* (*Alloc)(size_t), void (*Free)(void*)>
__attribute__((noinline)) long malloc_pairs(long pairs) {
  long failures = 0;
  for (long i = 0; i < pairs; ++i) {
    void* volatile q = Alloc(4096);  // volatile: the compiler may not pair the two calls away
    failures += q == nullptr;
    Free(q);
  }
  return failures;
}

using PairLoop = long (*)(long);

// The loop runs as the `depth`-th frame; the work after the recursive call keeps every frame.
__attribute__((noinline)) long at_depth(int depth, PairLoop loop, long pairs) {
  if (depth > 1) {
    long r = at_depth(depth - 1, loop, pairs);
    g_sink = g_sink + 1;
    return r;
  }
  return loop(pairs);
}

struct Window {
  double wall_ns = 0, cpu_ns = 0;  // per pair
};

double thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

Window time_window(int depth, PairLoop loop, long pairs, long* failures) {
  const double c0 = thread_cpu_ns();
  const auto t0 = std::chrono::steady_clock::now();
  *failures += at_depth(depth, loop, pairs);
  const auto t1 = std::chrono::steady_clock::now();
  const double c1 = thread_cpu_ns();
  const double n = static_cast<double>(pairs);
  return {std::chrono::duration<double, std::nano>(t1 - t0).count() / n, (c1 - c0) / n};
}

// Quartile q (0.25, 0.5, 0.75) of `v` by nearest rank; sorts `v`.
double quartile(std::vector<double>& v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

}  // namespace

int run_paired(PairedCall call, int depth, long window_pairs, int windows) {
  PairLoop traced = nullptr, direct = nullptr;
  const char* name = call == PairedCall::Cuda ? "cuda" : "malloc";
  if (call == PairedCall::Cuda) {
    if (!fakecuda_direct_cuMemAlloc_v2 || !fakecuda_direct_cuMemFree_v2) {
      std::fprintf(stderr,
                   "hook_bench: paired cuda needs the simulated device's "
                   "fakecuda_direct_* aliases (lib/fakecuda on LD_LIBRARY_PATH)\n");
      return 2;
    }
    if (cudaSetDevice(0) != cudaSuccess) return 1;  // makes the primary context current
    traced = cuda_pairs<cuMemAlloc_v2, cuMemFree_v2>;
    direct = cuda_pairs<fakecuda_direct_cuMemAlloc_v2, fakecuda_direct_cuMemFree_v2>;
  } else {
    if (!__libc_malloc || !__libc_free) {
      std::fprintf(stderr, "hook_bench: paired malloc needs glibc's __libc_malloc/__libc_free\n");
      return 2;
    }
    traced = malloc_pairs<std::malloc, std::free>;
    direct = malloc_pairs<__libc_malloc, __libc_free>;
  }
  long failures = 0;
  // Warm-up, one window each, not counted: caches, the log's first pages.
  time_window(depth, traced, window_pairs, &failures);
  time_window(depth, direct, window_pairs, &failures);
  std::vector<double> wall, cpu, traced_cpu, direct_cpu;
  for (int w = 0; w < windows; ++w) {
    // ABBA: every other pair of windows runs the direct one first, so that neither path always
    // follows the other (whose data the caches then hold).
    Window t, d;
    if (w % 2 == 0) {
      t = time_window(depth, traced, window_pairs, &failures);
      d = time_window(depth, direct, window_pairs, &failures);
    } else {
      d = time_window(depth, direct, window_pairs, &failures);
      t = time_window(depth, traced, window_pairs, &failures);
    }
    wall.push_back((t.wall_ns - d.wall_ns) / 2);  // a pair is two events
    cpu.push_back((t.cpu_ns - d.cpu_ns) / 2);
    traced_cpu.push_back(t.cpu_ns);
    direct_cpu.push_back(d.cpu_ns);
  }
  // traced_pairs: how many pairs went through the traced names (warm-up included), the events a
  // recorder should have seen: the direct ones must not reach it.
  std::printf(
      "depth %d pairs %ld paired %s windows %d traced_pairs %ld"
      " cpu_added_ns_per_event %.1f cpu_q1 %.1f cpu_q3 %.1f"
      " wall_added_ns_per_event %.1f wall_q1 %.1f wall_q3 %.1f"
      " traced_cpu_ns_per_pair %.1f direct_cpu_ns_per_pair %.1f\n",
      depth, window_pairs, name, windows, window_pairs * (windows + 1), quartile(cpu, 0.5),
      quartile(cpu, 0.25), quartile(cpu, 0.75), quartile(wall, 0.5), quartile(wall, 0.25),
      quartile(wall, 0.75), quartile(traced_cpu, 0.5), quartile(direct_cpu, 0.5));
  return failures ? 1 : 0;
}

}  // namespace hook_bench

// The program behind the recorded logs in tests/data/: a few allocations of known sizes through
// the runtime and the driver, on two threads and two devices, so every old format's log of it has
// answers that follow from this file alone (recorded_logs_test.cpp checks them).
//
// Main thread, device 0:  a = cudaMalloc(1 MiB), b = cudaMalloc(3 MiB)
// Worker thread, device 0 (the main thread's context):
//                         c = cuMemAlloc_v2(2 MiB), d = cuMemAlloc_v2(512 KiB), cuMemFree_v2(c)
// Main thread again:      cudaFree(a); cudaMalloc(2 GiB) fails (the simulated device has 1 GiB)
// Main thread, device 1:  e = cudaMalloc(256 KiB)
//
// 5 allocations succeed, 1 fails, 2 are freed. Live at the end: b and d on device 0 (3.5 MiB),
// e on device 1 (256 KiB). The peak is a + b + c + d = 6.5 MiB on device 0, while the worker
// holds c and d. Kept in C++ (no kernels) so that it builds with any host compiler and the
// commit's own simulated device, never changes, and is the same program in every fixture.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace {

constexpr std::size_t kKiB = 1024;
constexpr std::size_t kMiB = 1024 * kKiB;

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "recorded_program: %s failed\n", what);
  std::exit(1);
}

// Driver calls on a second thread: its own thread file, with the context made current as a
// driver-API library would.
__attribute__((noinline)) void driver_worker(CUcontext ctx, CUdeviceptr* kept) {
  check(cuCtxSetCurrent(ctx) == CUDA_SUCCESS, "cuCtxSetCurrent");
  CUdeviceptr c = 0;
  check(cuMemAlloc_v2(&c, 2 * kMiB) == CUDA_SUCCESS, "cuMemAlloc_v2(2 MiB)");
  check(cuMemAlloc_v2(kept, 512 * kKiB) == CUDA_SUCCESS, "cuMemAlloc_v2(512 KiB)");
  check(cuMemFree_v2(c) == CUDA_SUCCESS, "cuMemFree_v2");
}

}  // namespace

int main() {
  void* a = nullptr;
  void* b = nullptr;
  check(cudaMalloc(&a, 1 * kMiB) == cudaSuccess, "cudaMalloc(1 MiB)");
  check(cudaMalloc(&b, 3 * kMiB) == cudaSuccess, "cudaMalloc(3 MiB)");

  CUcontext ctx = nullptr;
  check(cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx, "cuCtxGetCurrent");
  CUdeviceptr d = 0;
  std::thread worker(driver_worker, ctx, &d);
  worker.join();

  check(cudaFree(a) == cudaSuccess, "cudaFree");
  void* too_big = nullptr;
  check(cudaMalloc(&too_big, 2 * 1024 * kMiB) == cudaErrorMemoryAllocation, "cudaMalloc(2 GiB)");

  check(cudaSetDevice(1) == cudaSuccess, "cudaSetDevice(1)");
  void* e = nullptr;
  check(cudaMalloc(&e, 256 * kKiB) == cudaSuccess, "cudaMalloc(256 KiB)");

  std::printf("recorded_program: leaves b=%p d=%#llx e=%p\n", b, static_cast<unsigned long long>(d),
              e);
  return 0;
}

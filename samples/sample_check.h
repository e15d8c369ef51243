// What every sample shares: stop with a readable message on any unexpected CUDA error, and keep
// the functions a report should name as real frames.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>

inline constexpr std::size_t kMiB = std::size_t{1} << 20;

// The reports attribute memory to functions by their stack frames; at -O2 a small function that
// allocates would be inlined into main (or cloned as foo.constprop.0) and vanish from the stack.
#if defined(__GNUC__) && !defined(__clang__)
#define SAMPLE_FRAME __attribute__((noinline, noclone))
#else
#define SAMPLE_FRAME __attribute__((noinline))
#endif

#define CHECK_CUDA(call) check_cuda((call), #call, __FILE__, __LINE__)

inline void check_cuda(cudaError_t err, const char* what, const char* file, int line) {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", file, line, what, cudaGetErrorName(err),
               cudaGetErrorString(err));
  std::exit(1);
}

// A kernel that touches every word, so the buffers are really used on a GPU. On the simulated
// device kernels are no-ops, so nothing may depend on what it writes.
__global__ void fill_words(unsigned* words, std::size_t count, unsigned value) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x)
    words[i] = value;
}

inline void fill(void* buffer, std::size_t bytes, unsigned value, cudaStream_t stream = nullptr) {
  fill_words<<<256, 256, 0, stream>>>(static_cast<unsigned*>(buffer), bytes / sizeof(unsigned),
                                      value);
  CHECK_CUDA(cudaGetLastError());
}

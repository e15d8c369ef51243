// An ordinary nvcc-built CUDA program, run on the simulated device to prove it links and runs there.
#include <cstdio>
#include <cstring>

__global__ void fill(int* out, int value) { out[threadIdx.x] = value; }

__device__ int device_counter;
__managed__ int managed_flag;

#define CHECK(call, expected)                                                                       \
  do {                                                                                              \
    cudaError_t got = (call);                                                                       \
    if (got != (expected)) {                                                                        \
      std::fprintf(stderr, "%s:%d: %s returned %s, expected %s\n", __FILE__, __LINE__, #call,       \
                   cudaGetErrorName(got), cudaGetErrorName(expected));                              \
      return 1;                                                                                     \
    }                                                                                               \
  } while (0)

int main() {
  int count = 0;
  CHECK(cudaGetDeviceCount(&count), cudaSuccess);
  if (count < 1) return 1;

  int* d = nullptr;
  CHECK(cudaMalloc(&d, 32 * sizeof(int)), cudaSuccess);
  int host[32];
  std::memset(host, 0x11, sizeof(host));
  CHECK(cudaMemcpy(d, host, sizeof(host), cudaMemcpyHostToDevice), cudaSuccess);

  fill<<<1, 32>>>(d, 7);
  CHECK(cudaGetLastError(), cudaSuccess);
  CHECK(cudaDeviceSynchronize(), cudaSuccess);

  // Kernels are no-ops on the fake: the buffer still holds what was copied in.
  int back[32];
  CHECK(cudaMemcpy(back, d, sizeof(back), cudaMemcpyDeviceToHost), cudaSuccess);
  if (std::memcmp(back, host, sizeof(host)) != 0) return 1;

  // Bad launch configurations still fail the way they do on hardware.
  fill<<<1, 4096>>>(d, 7);
  CHECK(cudaGetLastError(), cudaErrorInvalidConfiguration);

  managed_flag = 1;  // managed variables are host-addressable
  CHECK(cudaFree(d), cudaSuccess);
  std::printf("kernel_smoke: ok on %d device(s)\n", count);
  return 0;
}

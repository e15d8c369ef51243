// arrays.cu — CUDA arrays (texture memory) through the runtime and the driver. Their
// memory has no device pointer: gmemhook records the array handle as the address and the size
// its descriptor asks for, a lower bound of what the driver lays out.
//
// image() takes a 1024 × 768 float4 array with cudaMallocArray (12 MiB) and frees it; volume()
// takes a 256 × 256 × 64 uchar 3D array with cudaMalloc3DArray (4 MiB) and keeps it (the leak);
// pyramid() takes a 512 × 512 float mipmapped array of 4 levels with cudaMallocMipmappedArray
// (1 MiB + 256 KiB + 64 KiB + 16 KiB = 1392640 bytes) and frees it; driver_array() takes a
// 256 × 256 four-channel 16-bit array with cuArrayCreate (512 KiB) and frees it.
//
// What the report should show (`gmemhook run build/bin/samples/arrays`, then `gmemhook leaks`):
// 4.0 MiB (4194304 bytes) leaked in 1 allocation (cudaMalloc3DArray) from volume(), and the
// summary's note that array sizes are lower bounds. The program prints the bytes it leaks.
#include <cuda.h>

#include "sample_check.h"

namespace {

constexpr std::size_t kVolumeBytes = 256 * 256 * 64;

}  // namespace

SAMPLE_FRAME void image() {
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float4>();
  cudaArray_t a;
  CHECK_CUDA(cudaMallocArray(&a, &desc, 1024, 768));
  CHECK_CUDA(cudaFreeArray(a));
}

SAMPLE_FRAME cudaArray_t volume() {
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<unsigned char>();
  cudaArray_t a;
  CHECK_CUDA(cudaMalloc3DArray(&a, &desc, make_cudaExtent(256, 256, 64)));
  return a;  // the leak
}

SAMPLE_FRAME void pyramid() {
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaMipmappedArray_t m;
  CHECK_CUDA(cudaMallocMipmappedArray(&m, &desc, make_cudaExtent(512, 512, 0), 4));
  CHECK_CUDA(cudaFreeMipmappedArray(m));
}

SAMPLE_FRAME void driver_array() {
  CUDA_ARRAY_DESCRIPTOR d{};
  d.Width = 256;
  d.Height = 256;
  d.Format = CU_AD_FORMAT_UNSIGNED_INT16;
  d.NumChannels = 4;
  CUarray a;
  if (cuArrayCreate(&a, &d) != CUDA_SUCCESS || cuArrayDestroy(a) != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuArrayCreate/cuArrayDestroy failed\n");
    std::exit(1);
  }
}

int main() {
  CHECK_CUDA(cudaSetDevice(0));
  image();
  cudaArray_t kept = volume();
  pyramid();
  driver_array();
  CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("arrays: 4 arrays made, the 3D one kept (%p)\n", static_cast<void*>(kept));
  std::printf("expected leaked %zu bytes\n", kVolumeBytes);
  return 0;
}

// peak.cu — climbs to a known peak from two call sites, then frees everything, so the peak
// report has a known answer and the leak report has none.
//
// load_weights() cudaMallocs 4 buffers of 64 MiB (256 MiB); activations() then cudaMallocs one
// 128 MiB buffer. Both are used by a kernel, after which everything is freed: activations first,
// then the weights.
//
// What the report should show (`gmemhook run build/bin/samples/peak` then `gmemhook peak`):
//   peak 384.0 MiB (402653184 bytes) on device 0, reached at the activations() allocation:
//     256.0 MiB (268435456 bytes) in 4 allocations from load_weights() in peak.cu
//     128.0 MiB (134217728 bytes) in 1 allocation  from activations() in peak.cu
//   0 bytes live at exit, so `gmemhook leaks` finds nothing.
// The program prints the expected peak on stdout.
#include <array>

#include "sample_check.h"

namespace {

constexpr int kWeightBuffers = 4;
constexpr std::size_t kWeightBytes = 64 * kMiB;
constexpr std::size_t kActivationBytes = 128 * kMiB;

}  // namespace

SAMPLE_FRAME std::array<void*, kWeightBuffers> load_weights() {
  std::array<void*, kWeightBuffers> layers{};
  for (void*& layer : layers) {
    CHECK_CUDA(cudaMalloc(&layer, kWeightBytes));
    fill(layer, kWeightBytes, 1);
  }
  return layers;
}

SAMPLE_FRAME void* activations() {
  void* buffer = nullptr;
  CHECK_CUDA(cudaMalloc(&buffer, kActivationBytes));
  fill(buffer, kActivationBytes, 2);
  return buffer;
}

int main() {
  std::array<void*, kWeightBuffers> weights = load_weights();
  void* acts = activations();
  CHECK_CUDA(cudaDeviceSynchronize());

  CHECK_CUDA(cudaFree(acts));
  for (void* layer : weights) CHECK_CUDA(cudaFree(layer));

  const std::size_t weight_total = kWeightBuffers * kWeightBytes;
  std::printf("peak: expected peak %zu bytes (%zu MiB) on device 0:\n",
              weight_total + kActivationBytes, (weight_total + kActivationBytes) / kMiB);
  std::printf("  load_weights()  %d allocations  %zu bytes\n", kWeightBuffers, weight_total);
  std::printf("  activations()   1 allocation   %zu bytes\n", kActivationBytes);
  std::printf("  live at exit: 0 bytes\n");
  return 0;
}

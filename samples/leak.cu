// leak.cu — leaks device memory from two functions and pinned host memory from a third, so
// `gmemhook leaks` has known answers to find.
//
// leak_in_loop() runs 10 steps; each cudaMallocs a 16 MiB buffer, uses it and frees it, except
// on steps 2, 5 and 8, where the buffer is parked in a list nobody frees. forgotten_buffer()
// cudaMallocs 4 MiB once and never frees it. staging_buffer() pins 1 MiB of host memory with
// cudaMallocHost and never frees it either.
//
// What the report should show (`gmemhook run build/bin/samples/leak` then `gmemhook leaks`):
//   Leaked 48.0 MiB (50331648 bytes) in 3 allocation(s) (cudaMalloc, device 0)
//     allocated from leak_in_loop() in leak.cu
//   Leaked 4.0 MiB (4194304 bytes) in 1 allocation(s) (cudaMalloc, device 0)
//     allocated from forgotten_buffer() in leak.cu
//   Leaked 1.0 MiB (1048576 bytes) in 1 allocation(s) (cudaMallocHost, pinned host memory)
//     allocated from staging_buffer() in leak.cu
// Device total: 4 allocations, 52.0 MiB (54525952 bytes); pinned host memory is reported apart
// from it. The 7 other buffers from leak_in_loop() are freed and must not be listed. The program
// prints the same numbers on stdout when it ends.
#include <vector>

#include "sample_check.h"

namespace {

constexpr int kSteps = 10;
constexpr std::size_t kStepBytes = 16 * kMiB;
constexpr std::size_t kForgottenBytes = 4 * kMiB;
constexpr std::size_t kStagingBytes = 1 * kMiB;

// Buffers "kept for later" — the leak. Nothing ever frees them.
std::vector<void*> g_parked;

bool parks_its_buffer(int step) { return step == 2 || step == 5 || step == 8; }

}  // namespace

SAMPLE_FRAME std::size_t leak_in_loop() {
  std::size_t leaked = 0;
  for (int step = 0; step < kSteps; ++step) {
    void* buffer = nullptr;
    CHECK_CUDA(cudaMalloc(&buffer, kStepBytes));
    fill(buffer, kStepBytes, static_cast<unsigned>(step));
    if (parks_its_buffer(step)) {
      g_parked.push_back(buffer);
      leaked += kStepBytes;
    } else {
      CHECK_CUDA(cudaFree(buffer));
    }
  }
  return leaked;
}

SAMPLE_FRAME std::size_t forgotten_buffer() {
  void* buffer = nullptr;
  CHECK_CUDA(cudaMalloc(&buffer, kForgottenBytes));
  fill(buffer, kForgottenBytes, 0xf0f0f0f0u);
  return kForgottenBytes;  // the pointer dies here; the memory does not
}

SAMPLE_FRAME std::size_t staging_buffer() {
  void* host = nullptr;
  CHECK_CUDA(cudaMallocHost(&host, kStagingBytes));
  static_cast<unsigned char*>(host)[0] = 1;  // pinned memory is ordinary host memory to the CPU
  return kStagingBytes;
}

int main() {
  const std::size_t loop_bytes = leak_in_loop();
  const std::size_t forgotten_bytes = forgotten_buffer();
  const std::size_t pinned_bytes = staging_buffer();
  CHECK_CUDA(cudaDeviceSynchronize());

  std::printf("leak: leaked on purpose (bytes per site):\n");
  std::printf("  leak_in_loop()      cudaMalloc      %zu allocations  %zu bytes\n", g_parked.size(),
              loop_bytes);
  std::printf("  forgotten_buffer()  cudaMalloc      1 allocation   %zu bytes\n", forgotten_bytes);
  std::printf("  staging_buffer()    cudaMallocHost  1 allocation   %zu bytes (pinned host)\n",
              pinned_bytes);
  std::printf("  device total: %zu allocations, %zu bytes\n", g_parked.size() + 1,
              loop_bytes + forgotten_bytes);
  return 0;
}

// oom.cu — allocates 64 MiB at a time until the device says no, then frees everything, so the
// reports show a failed allocation and what was live when it failed.
//
// Usage: oom [max_mib]   (default 1024)
// allocate_until_oom() cudaMallocs 64 MiB chunks until one fails with cudaErrorMemoryAllocation
// or max_mib is reached. A real H200 has ~141 GiB, far more than a sample should take, so when
// the cap is reached without a failure, impossible_request() asks for 1 TiB to produce one.
// Then every chunk is freed.
//
// What the report should show (`gmemhook run build/bin/samples/oom`, then `gmemhook summary`):
//   on an H200 (or the simulated device's default 1 GiB): 16 allocations of 64.0 MiB (67108864
//     bytes) from try_allocate() <- allocate_until_oom() in oom.cu, peak 1.0 GiB (1073741824
//     bytes), then 1 failed allocation: cudaMalloc of 1.0 TiB (1099511627776 bytes) from
//     try_allocate() <- impossible_request()
//   on the simulated device with FAKECUDA_CAPACITY=256M: 4 allocations of 64.0 MiB, peak
//     256.0 MiB (268435456 bytes), then 1 failed allocation: cudaMalloc of 64.0 MiB (67108864
//     bytes) from try_allocate() <- allocate_until_oom()
//   in both cases 0 bytes live at exit, so `gmemhook leaks` finds nothing.
// The program prints how many chunks succeeded and which request failed.
#include <cerrno>
#include <vector>

#include "sample_check.h"

namespace {

constexpr std::size_t kChunkBytes = 64 * kMiB;
constexpr std::size_t kImpossibleBytes = std::size_t{1} << 40;  // 1 TiB

struct Failure {
  std::size_t bytes = 0;
  cudaError_t error = cudaSuccess;
};

}  // namespace

// True (and the chunk stored) if the device had room; false on cudaErrorMemoryAllocation; any
// other error ends the program. A frame of its own so both callers show up under it.
SAMPLE_FRAME bool try_allocate(std::size_t bytes, std::vector<void*>& chunks, Failure& failure) {
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, bytes);
  if (err == cudaErrorMemoryAllocation) {
    failure = {bytes, err};
    // Out of memory is not sticky, but it is remembered as the last error; clear it so later
    // checks don't see it.
    (void)cudaGetLastError();
    return false;
  }
  CHECK_CUDA(err);
  chunks.push_back(p);
  return true;
}

namespace {

bool parse_mib(const char* text, std::size_t& mib) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value == 0 || value > (1ull << 30)) return false;
  mib = static_cast<std::size_t>(value);
  return true;
}

}  // namespace

SAMPLE_FRAME bool allocate_until_oom(std::size_t max_bytes, std::vector<void*>& chunks,
                                     Failure& failure) {
  while ((chunks.size() + 1) * kChunkBytes <= max_bytes) {
    if (!try_allocate(kChunkBytes, chunks, failure)) return true;
    fill(chunks.back(), kChunkBytes, static_cast<unsigned>(chunks.size()));
  }
  return false;
}

SAMPLE_FRAME bool impossible_request(std::vector<void*>& chunks, Failure& failure) {
  return !try_allocate(kImpossibleBytes, chunks, failure);
}

int main(int argc, char** argv) {
  std::size_t max_mib = 1024;
  if (argc > 2 || (argc == 2 && !parse_mib(argv[1], max_mib))) {
    std::fprintf(stderr, "usage: %s [max_mib]   (a whole number of MiB, default 1024)\n", argv[0]);
    return 2;
  }

  std::vector<void*> chunks;
  Failure failure;
  bool failed = allocate_until_oom(max_mib * kMiB, chunks, failure);
  const std::size_t succeeded = chunks.size();
  if (!failed) {
    std::printf("oom: reached the cap of %zu MiB without running out; asking for 1 TiB\n", max_mib);
    failed = impossible_request(chunks, failure);
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  for (void* p : chunks) CHECK_CUDA(cudaFree(p));

  std::printf("oom: %zu allocations of %zu bytes succeeded (%zu bytes)\n", succeeded, kChunkBytes,
              succeeded * kChunkBytes);
  if (!failed) {
    std::fprintf(stderr, "oom: a 1 TiB cudaMalloc succeeded; no failure to show\n");
    return 1;
  }
  std::printf("oom: then cudaMalloc(%zu bytes) failed with %s (%s)\n", failure.bytes,
              cudaGetErrorName(failure.error), cudaGetErrorString(failure.error));
  std::printf("oom: everything freed; live at exit: 0 bytes\n");
  return 0;
}

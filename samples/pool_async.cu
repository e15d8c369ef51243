// pool_async.cu — stream-ordered allocation on two streams, through the device's default pool
// and through a pool of its own, leaking one allocation from that pool.
//
// two_streams() takes 32 MiB on stream A and 16 MiB on stream B with cudaMallocAsync and frees
// each on its own stream. handoff() takes 8 MiB on stream A and frees it on stream B once A's
// work is done, the way a buffer passes between streams. pool_scratch() takes 8 MiB from a pool
// made with cudaMemPoolCreate (cudaMallocFromPoolAsync) and frees it; keep_lookup_table() takes
// 4 MiB from the same pool on stream B and never frees it.
//
// What the report should show (`gmemhook run build/bin/samples/pool_async`, then
// `gmemhook leaks`):
//   Leaked 4.0 MiB (4194304 bytes) in 1 allocation(s) (cudaMallocFromPoolAsync, device 0,
//     stream B, the created pool) allocated from keep_lookup_table() in pool_async.cu
//   nothing from two_streams(), handoff() or pool_scratch(): each of those is freed.
//   peak 48.0 MiB (50331648 bytes) in two_streams(), counting by the order of the calls.
// The program prints the stream and pool handles, so they can be matched with the report.
#include "sample_check.h"

namespace {

constexpr std::size_t kBytesOnA = 32 * kMiB;
constexpr std::size_t kBytesOnB = 16 * kMiB;
constexpr std::size_t kHandoffBytes = 8 * kMiB;
constexpr std::size_t kScratchBytes = 8 * kMiB;
constexpr std::size_t kTableBytes = 4 * kMiB;

}  // namespace

SAMPLE_FRAME void two_streams(cudaStream_t a, cudaStream_t b) {
  void* on_a = nullptr;
  void* on_b = nullptr;
  CHECK_CUDA(cudaMallocAsync(&on_a, kBytesOnA, a));
  CHECK_CUDA(cudaMallocAsync(&on_b, kBytesOnB, b));
  fill(on_a, kBytesOnA, 1, a);
  fill(on_b, kBytesOnB, 2, b);
  CHECK_CUDA(cudaFreeAsync(on_a, a));
  CHECK_CUDA(cudaFreeAsync(on_b, b));
}

SAMPLE_FRAME void handoff(cudaStream_t a, cudaStream_t b) {
  void* buffer = nullptr;
  CHECK_CUDA(cudaMallocAsync(&buffer, kHandoffBytes, a));
  fill(buffer, kHandoffBytes, 3, a);
  // B must not free the buffer before A's kernel is done with it. Real code would record an
  // event on A and make B wait for it; waiting on the host does the same and also runs on the
  // simulated device, which has no events.
  CHECK_CUDA(cudaStreamSynchronize(a));
  CHECK_CUDA(cudaFreeAsync(buffer, b));
}

SAMPLE_FRAME void pool_scratch(cudaMemPool_t pool, cudaStream_t a) {
  void* scratch = nullptr;
  CHECK_CUDA(cudaMallocFromPoolAsync(&scratch, kScratchBytes, pool, a));
  fill(scratch, kScratchBytes, 4, a);
  CHECK_CUDA(cudaFreeAsync(scratch, a));
}

SAMPLE_FRAME void* keep_lookup_table(cudaMemPool_t pool, cudaStream_t b) {
  void* table = nullptr;
  CHECK_CUDA(cudaMallocFromPoolAsync(&table, kTableBytes, pool, b));
  fill(table, kTableBytes, 5, b);
  return table;  // the leak: nothing ever hands this back to the pool
}

int main() {
  int device = 0;
  CHECK_CUDA(cudaSetDevice(device));
  cudaStream_t a;
  cudaStream_t b;
  CHECK_CUDA(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));

  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool;
  CHECK_CUDA(cudaMemPoolCreate(&pool, &props));

  two_streams(a, b);
  handoff(a, b);
  pool_scratch(pool, a);
  void* table = keep_lookup_table(pool, b);
  CHECK_CUDA(cudaStreamSynchronize(a));
  CHECK_CUDA(cudaStreamSynchronize(b));

  std::printf("pool_async: stream A %p, stream B %p, pool %p\n", static_cast<void*>(a),
              static_cast<void*>(b), static_cast<void*>(pool));
  std::printf(
      "  freed: 32 MiB on A + 16 MiB on B (two_streams), 8 MiB A->B (handoff), "
      "8 MiB from the pool (pool_scratch)\n");
  std::printf(
      "  leaked: 1 allocation, %zu bytes from the pool on stream B (keep_lookup_table) "
      "at %p\n",
      kTableBytes, table);
  std::printf("  expected peak %zu bytes (two_streams)\n", kBytesOnA + kBytesOnB);
  CHECK_CUDA(cudaStreamDestroy(a));
  CHECK_CUDA(cudaStreamDestroy(b));
  // The pool is left alone: destroying it with the table still allocated would only defer its
  // release, and the point here is the allocation the program forgot.
  return 0;
}

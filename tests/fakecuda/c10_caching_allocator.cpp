// The fake libc10_cuda.so: a small caching allocator in the shape of PyTorch's. It gets segments
// from cudaMalloc, carves blocks out of them, keeps freed blocks cached until empty_cache, and
// reports every block to c10::reportMemoryUsageToProfiler in libc10.so with its running totals,
// inside its lock, exactly where PyTorch does: after the totals were updated.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <mutex>
#include <vector>

#include "fake_c10.h"

#define FAKEC10_API __attribute__((visibility("default")))

namespace {

constexpr size_t kRound = 512;           // every block is a multiple of 512 bytes
constexpr size_t kSmallSize = 1u << 20;  // blocks up to 1 MiB come from small segments
constexpr size_t kSmallSegment = 2u << 20;
constexpr size_t kLargeSegment = 20u << 20;   // shared by blocks under kMinLargeAlloc
constexpr size_t kMinLargeAlloc = 10u << 20;  // from here a block gets a segment of its own
constexpr size_t kLargeRound = 2u << 20;
constexpr int kMaxDevices = 8;

struct Block {
  size_t size;
  bool allocated;
  bool small;         // which pool it belongs to
  uintptr_t segment;  // base address of its segment
  int device;
};

std::mutex g_mutex;
std::map<uintptr_t, Block> g_blocks;     // every block of every segment, by address
std::map<uintptr_t, size_t> g_segments;  // base → bytes
uint64_t g_allocated[kMaxDevices] = {};  // PyTorch's allocated_bytes: blocks handed out
uint64_t g_reserved[kMaxDevices] = {};   // PyTorch's reserved_bytes: segments held
std::vector<FakeC10Action> g_actions;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

void note(char what, uintptr_t ptr, int64_t size, int device) {
  g_actions.push_back(
      {what, {ptr, size, g_allocated[device], g_reserved[device], 1, static_cast<int8_t>(device)}});
}

void report(uintptr_t ptr, int64_t size, int device) {
  note('b', ptr, size, device);
  c10::reportMemoryUsageToProfiler(reinterpret_cast<void*>(ptr), size, g_allocated[device],
                                   g_reserved[device], c10::Device{1, static_cast<int8_t>(device)});
}

// cudaMalloc and cudaFree on `device`, leaving the caller's current device as it was.
struct OnDevice {
  explicit OnDevice(int device) {
    cudaGetDevice(&previous);
    cudaSetDevice(device);
  }
  ~OnDevice() { cudaSetDevice(previous); }
  int previous = 0;
};

bool new_segment(size_t size, bool small, int device) {
  const size_t bytes = small                   ? kSmallSegment
                       : size < kMinLargeAlloc ? kLargeSegment
                                               : round_up(size, kLargeRound);
  void* p = nullptr;
  {
    OnDevice on(device);
    if (cudaMalloc(&p, bytes) != cudaSuccess) return false;
  }
  const auto base = reinterpret_cast<uintptr_t>(p);
  g_segments[base] = bytes;
  g_blocks[base] = Block{bytes, false, small, base, device};
  g_reserved[device] += bytes;
  note('m', base, static_cast<int64_t>(bytes), device);
  return true;
}

// Segments holding no allocated block go back to CUDA.
void release_cached() {
  for (auto s = g_segments.begin(); s != g_segments.end();) {
    auto b = g_blocks.find(s->first);
    if (b->second.allocated || b->second.size != s->second) {
      ++s;
      continue;
    }
    const int device = b->second.device;
    {
      OnDevice on(device);
      cudaFree(reinterpret_cast<void*>(s->first));
    }
    g_reserved[device] -= s->second;
    note('f', s->first, static_cast<int64_t>(s->second), device);
    g_blocks.erase(b);
    s = g_segments.erase(s);
  }
}

// The smallest cached block of the pool that is large enough.
std::map<uintptr_t, Block>::iterator best_fit(size_t size, bool small, int device) {
  auto best = g_blocks.end();
  for (auto it = g_blocks.begin(); it != g_blocks.end(); ++it) {
    const Block& b = it->second;
    if (b.allocated || b.small != small || b.device != device || b.size < size) continue;
    if (best == g_blocks.end() || b.size < best->second.size) best = it;
  }
  return best;
}

}  // namespace

extern "C" {

FAKEC10_API void* fakec10_cuda_malloc(size_t size, int device) {
  if (device < 0 || device >= kMaxDevices) return nullptr;
  std::lock_guard lock(g_mutex);
  size = round_up(std::max<size_t>(size, 1), kRound);
  const bool small = size <= kSmallSize;
  auto it = best_fit(size, small, device);
  if (it == g_blocks.end()) {
    // Out of memory: give the cache back and try once more, as PyTorch does.
    if (!new_segment(size, small, device)) {
      release_cached();
      if (!new_segment(size, small, device)) return nullptr;
    }
    it = best_fit(size, small, device);
  }
  Block& b = it->second;
  // The rest of the block stays cached when worth keeping: any 512 bytes of a small segment,
  // more than 1 MiB of a large one. A smaller rest goes out with the block, counted in its size.
  const size_t rest = b.size - size;
  if (small ? rest >= kRound : rest > kSmallSize) {
    g_blocks[it->first + size] = Block{rest, false, small, b.segment, device};
    b.size = size;
  }
  b.allocated = true;
  g_allocated[device] += b.size;
  report(it->first, static_cast<int64_t>(b.size), device);
  return reinterpret_cast<void*>(it->first);
}

FAKEC10_API void fakec10_cuda_free(void* ptr) {
  std::lock_guard lock(g_mutex);
  auto it = g_blocks.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == g_blocks.end() || !it->second.allocated) return;
  const size_t size = it->second.size;
  const int device = it->second.device;
  it->second.allocated = false;
  g_allocated[device] -= size;
  // Merge with free neighbours of the same segment so that empty_cache can return it whole.
  auto next = std::next(it);
  if (next != g_blocks.end() && !next->second.allocated &&
      next->second.segment == it->second.segment) {
    it->second.size += next->second.size;
    g_blocks.erase(next);
  }
  if (it != g_blocks.begin()) {
    auto prev = std::prev(it);
    if (!prev->second.allocated && prev->second.segment == it->second.segment) {
      prev->second.size += it->second.size;
      g_blocks.erase(it);
    }
  }
  report(reinterpret_cast<uintptr_t>(ptr), -static_cast<int64_t>(size), device);
}

FAKEC10_API void fakec10_cuda_empty_cache() {
  std::lock_guard lock(g_mutex);
  release_cached();
}

FAKEC10_API size_t fakec10_cuda_action_count() {
  std::lock_guard lock(g_mutex);
  return g_actions.size();
}

FAKEC10_API bool fakec10_cuda_action(size_t i, FakeC10Action* out) {
  std::lock_guard lock(g_mutex);
  if (i >= g_actions.size()) return false;
  *out = g_actions[i];
  return true;
}

}  // extern "C"

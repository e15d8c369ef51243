// Memory-pool bookkeeping: blocks a pool keeps reserved on its device, their reuse, and trimming.
#include "device_state.h"

#include <algorithm>

namespace fakecuda {
namespace {

void release_block(CUmemPoolHandle_st* pool, uintptr_t base, size_t bytes) {
  unmap_backing(base, bytes);
  state().devices[pool->device].used -= bytes;
  pool->reserved -= bytes;
}

}  // namespace

CUresult pool_allocate(CUmemPoolHandle_st* pool, CUctx_st* ctx, size_t size, uintptr_t* out) {
  State& s = state();
  Device& dev = s.devices[pool->device];
  if (size > dev.capacity) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t need = round_up(size, kAllocAlignment);
  uintptr_t base = 0;
  size_t block = 0;
  // Best fit among freed blocks; blocks are reused whole, never split.
  if (auto it = pool->free_blocks.lower_bound(need); it != pool->free_blocks.end()) {
    block = it->first;
    base = it->second;
    pool->free_blocks.erase(it);
  } else {
    // Like the real allocator, give cached-but-unused memory back before reporting OOM.
    auto fits = [&] {
      return need <= dev.capacity - dev.used &&
             (pool->max_size == 0 || need <= pool->max_size - std::min(pool->max_size, pool->reserved));
    };
    if (!fits()) pool_trim(pool, 0);
    if (!fits()) return CUDA_ERROR_OUT_OF_MEMORY;
    void* p = map_backing(need);
    if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
    base = reinterpret_cast<uintptr_t>(p);
    block = need;
    dev.used += block;
    pool->reserved += block;
    pool->reserved_high = std::max(pool->reserved_high, pool->reserved);
  }
  pool->used += block;
  pool->used_high = std::max(pool->used_high, pool->used);
  Allocation a;
  a.base = base;
  a.size = size;
  a.charged = block;
  a.kind = AllocKind::Pool;
  a.device = pool->device;
  a.ctx = ctx;
  a.pool = pool;
  a.id = s.next_id++;
  s.allocations.emplace(base, a);
  *out = base;
  return CUDA_SUCCESS;
}

void pool_return(std::map<uintptr_t, Allocation>::iterator it) {
  Allocation a = it->second;
  state().allocations.erase(it);
  CUmemPoolHandle_st* pool = a.pool;
  pool->used -= a.charged;
  // A destroyed pool lives on only until its last outstanding allocation comes back.
  if (!pool->destroyed) {
    pool->free_blocks.emplace(a.charged, a.base);
    return;
  }
  release_block(pool, a.base, a.charged);
  if (pool->used == 0) delete pool;
}

void pool_trim(CUmemPoolHandle_st* pool, size_t keep) {
  while (pool->reserved > keep && !pool->free_blocks.empty()) {
    auto largest = std::prev(pool->free_blocks.end());
    release_block(pool, largest->second, largest->first);
    pool->free_blocks.erase(largest);
  }
}

}  // namespace fakecuda

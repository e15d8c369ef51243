// Driver memory pools and stream-ordered allocation (cuMemAllocAsync / cuMemFreeAsync and friends).
#include <mutex>

#include "cuda_decls.h"
#include "device_state.h"

using namespace fakecuda;

namespace {

bool live_pool(CUmemoryPool pool) { return state().pools.count(pool) != 0; }

// `pool` null: the current pool of the stream's device.
CUresult alloc_async(CUdeviceptr* dptr, size_t size, CUmemoryPool pool, CUstream stream) {
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  *dptr = 0;
  CUctx_st* ctx = nullptr;
  if (CUresult r = current_context(&ctx)) return r;
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  int device = 0;
  if (CUresult r = stream_device(stream, &device)) return r;
  if (pool && !live_pool(pool)) return CUDA_ERROR_INVALID_VALUE;
  if (!pool) pool = state().devices[device].current_pool;
  uintptr_t p = 0;
  // Under stream capture nothing is allocated: the call becomes an allocation node of the graph,
  // with its address fixed now and its memory allocated by each launch that needs it.
  if (CUgraph graph = capturing_graph(stream)) {
    CUresult r = capture_alloc_node(graph, device, size, &p);
    *dptr = p;
    return r;
  }
  CUresult r = pool_allocate(pool, ctx, size, &p);
  *dptr = p;
  return r;
}

// The simulated stream has already finished everything, so the free takes effect at once.
CUresult free_async(CUdeviceptr dptr, CUstream stream) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = current_context(&ctx)) return r;
  State& s = state();
  std::lock_guard lock(s.mu);
  int device = 0;
  if (CUresult r = stream_device(stream, &device)) return r;
  if (dptr == 0) return CUDA_SUCCESS;
  if (CUgraph graph = capturing_graph(stream)) return capture_free_node(graph, dptr);
  auto it = s.allocations.find(dptr);
  if (it == s.allocations.end() || it->second.kind == AllocKind::Host) return CUDA_ERROR_INVALID_VALUE;
  if (it->second.kind == AllocKind::Pool)
    pool_return(it);
  else
    remove_allocation(it);  // nothing is ever in flight on a simulated stream, so now is in order
  return CUDA_SUCCESS;
}

CUresult check_pool(CUmemoryPool pool) {
  if (CUresult r = require_init()) return r;
  return live_pool(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // namespace

FAKECUDA_API CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return alloc_async(dptr, bytesize, nullptr, hStream);
}
FAKECUDA_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return alloc_async(dptr, bytesize, nullptr, hStream);
}

FAKECUDA_API CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                              CUstream hStream) {
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  return alloc_async(dptr, bytesize, pool, hStream);
}
FAKECUDA_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                                   CUstream hStream) {
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  return alloc_async(dptr, bytesize, pool, hStream);
}

FAKECUDA_API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) { return free_async(dptr, hStream); }
FAKECUDA_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return free_async(dptr, hStream);
}

FAKECUDA_API CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
  if (CUresult r = require_init()) return r;
  if (!pool || !poolProps || poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  if (poolProps->handleTypes != CU_MEM_HANDLE_TYPE_NONE &&
      poolProps->handleTypes != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return CUDA_ERROR_NOT_SUPPORTED;
  if (!valid_device(poolProps->location.id)) return CUDA_ERROR_INVALID_DEVICE;
  auto* p = new CUmemPoolHandle_st;
  p->device = poolProps->location.id;
  p->max_size = poolProps->maxSize;
  std::lock_guard lock(state().mu);
  state().pools.insert(p);
  *pool = p;
  return CUDA_SUCCESS;
}

// Outstanding allocations stay valid; their memory is released as they are freed.
FAKECUDA_API CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (CUresult r = check_pool(pool)) return r;
  if (pool->is_default) return CUDA_ERROR_INVALID_VALUE;
  pool_trim(pool, 0);
  s.pools.erase(pool);
  Device& d = s.devices[pool->device];
  if (d.current_pool == pool) d.current_pool = d.default_pool;
  if (pool->used == 0)
    delete pool;
  else
    pool->destroyed = true;  // pool_return deletes it with the last outstanding allocation
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  std::lock_guard lock(state().mu);
  if (CUresult r = check_pool(pool)) return r;
  pool_trim(pool, minBytesToKeep);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  if (CUresult r = require_init()) return r;
  if (!pool_out) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(state().mu);
  *pool_out = state().devices[dev].default_pool;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  if (CUresult r = require_init()) return r;
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(state().mu);
  *pool = state().devices[dev].current_pool;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  if (CUresult r = require_init()) return r;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(state().mu);
  if (!live_pool(pool) || pool->device != dev) return CUDA_ERROR_INVALID_VALUE;
  state().devices[dev].current_pool = pool;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  std::lock_guard lock(state().mu);
  if (CUresult r = check_pool(pool)) return r;
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  auto u64 = [&](cuuint64_t v) { *static_cast<cuuint64_t*>(value) = v; };
  auto i32 = [&](int v) { *static_cast<int*>(value) = v; };
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: i32(pool->reuse_follow_event_dependencies); break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: i32(pool->reuse_allow_opportunistic); break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: i32(pool->reuse_allow_internal_dependencies); break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: u64(pool->release_threshold); break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: u64(pool->reserved); break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: u64(pool->reserved_high); break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: u64(pool->used); break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: u64(pool->used_high); break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  std::lock_guard lock(state().mu);
  if (CUresult r = check_pool(pool)) return r;
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  // Read only as wide as the attribute's type: callers pass an int for the reuse flags.
  auto u64 = [&] { return *static_cast<const cuuint64_t*>(value); };
  int i32 = attr <= CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES ? *static_cast<const int*>(value) : 0;
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: pool->reuse_follow_event_dependencies = i32; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: pool->reuse_allow_opportunistic = i32; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: pool->reuse_allow_internal_dependencies = i32; break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: pool->release_threshold = u64(); break;
    // High-water marks can only be reset, which CUDA spells as writing 0.
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      if (u64() != 0) return CUDA_ERROR_INVALID_VALUE;
      pool->reserved_high = pool->reserved;
      break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      if (u64() != 0) return CUDA_ERROR_INVALID_VALUE;
      pool->used_high = pool->used;
      break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

// Driver cuMemAlloc family: device, pitched, managed and pinned host memory, plus cuMemGetInfo.
#include <limits>
#include <mutex>

#include "cuda_decls.h"
#include "device_state.h"

using namespace fakecuda;

namespace {

// CUDA leaves 0 in *dptr when an allocation fails.
CUresult allocate(AllocKind kind, size_t size, uintptr_t* out) {
  *out = 0;
  CUctx_st* ctx = nullptr;
  if (CUresult r = current_context(&ctx)) return r;
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  return add_allocation(kind, ctx, size, out);
}

CUresult allocate_device(AllocKind kind, CUdeviceptr* dptr, size_t size) {
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  uintptr_t p = 0;
  CUresult r = allocate(kind, size, &p);
  *dptr = p;
  return r;
}

CUresult allocate_host(void** pp, size_t size) {
  if (!pp) return CUDA_ERROR_INVALID_VALUE;
  uintptr_t p = 0;
  CUresult r = allocate(AllocKind::Host, size, &p);
  *pp = reinterpret_cast<void*>(p);
  return r;
}

}  // namespace

FAKECUDA_API CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  return allocate_device(AllocKind::Device, dptr, bytesize);
}

FAKECUDA_API CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) {
    if (dptr) *dptr = 0;
    return CUDA_ERROR_INVALID_VALUE;
  }
  return allocate_device(AllocKind::Managed, dptr, bytesize);
}

FAKECUDA_API CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes,
                                         size_t Height, unsigned int ElementSizeBytes) {
  if (!dptr || !pPitch) {
    if (dptr) *dptr = 0;
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16) {
    *dptr = 0;
    return CUDA_ERROR_INVALID_VALUE;
  }
  size_t pitch = round_up(WidthInBytes, kPitchAlignment);
  if (WidthInBytes > std::numeric_limits<size_t>::max() / 2 ||
      (Height != 0 && pitch > std::numeric_limits<size_t>::max() / Height)) {
    *dptr = 0;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  CUresult r = allocate_device(AllocKind::Device, dptr, pitch * Height);
  if (r == CUDA_SUCCESS) *pPitch = pitch;
  return r;
}

FAKECUDA_API CUresult cuMemFree_v2(CUdeviceptr dptr) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = current_context(&ctx)) return r;
  if (dptr == 0) return CUDA_SUCCESS;
  State& s = state();
  std::lock_guard lock(s.mu);
  auto it = s.allocations.find(dptr);
  if (it == s.allocations.end() || it->second.kind == AllocKind::Host) return CUDA_ERROR_INVALID_VALUE;
  // cuMemFree also takes stream-ordered allocations; their block goes back to the pool.
  if (it->second.kind == AllocKind::Pool)
    pool_return(it);
  else
    remove_allocation(it);
  return CUDA_SUCCESS;
}

// The same two functions under names no interposer exports (not part of CUDA): a benchmark calls
// them through its PLT next to cuMemAlloc_v2/cuMemFree_v2, so that one process times the call with
// and without an LD_PRELOADed hook on the way (bench/hook_bench.cpp, mode paired). Aliases, not
// wrappers: the same code at the same address, so the two paths differ only in the preload.
// dlsym cannot serve as the way round, because the hook interposes dlsym itself.
FAKECUDA_API CUresult fakecuda_direct_cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize)
    __attribute__((alias("cuMemAlloc_v2")));
FAKECUDA_API CUresult fakecuda_direct_cuMemFree_v2(CUdeviceptr dptr) __attribute__((alias("cuMemFree_v2")));

FAKECUDA_API CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) { return allocate_host(pp, bytesize); }

FAKECUDA_API CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  constexpr unsigned kKnown = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
  if (Flags & ~kKnown) {
    if (pp) *pp = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  return allocate_host(pp, bytesize);
}

FAKECUDA_API CUresult cuMemFreeHost(void* p) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = current_context(&ctx)) return r;
  if (!p) return CUDA_SUCCESS;
  State& s = state();
  std::lock_guard lock(s.mu);
  auto it = s.allocations.find(reinterpret_cast<uintptr_t>(p));
  if (it == s.allocations.end() || it->second.kind != AllocKind::Host) return CUDA_ERROR_INVALID_VALUE;
  remove_allocation(it);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = current_context(&ctx)) return r;
  if (!free || !total) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  const Device& d = state().devices[ctx->device];
  *free = d.capacity - d.used;
  *total = d.capacity;
  return CUDA_SUCCESS;
}

// Runtime synchronous memory API; each call is carried out by the matching driver entry point.
#include <cstdint>

#include "runtime_state.h"

using namespace fakecudart;

namespace {

void* as_ptr(CUdeviceptr p) { return reinterpret_cast<void*>(p); }
CUdeviceptr as_dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

// cudart passes this to cuMemAllocPitch; it only affects validation, not the pitch chosen.
constexpr unsigned kPitchElementSize = 4;

}  // namespace

FAKECUDA_API cudaError_t cudaMalloc(void** devPtr, size_t size) {
  if (!devPtr) return record(cudaErrorInvalidValue);
  *devPtr = nullptr;
  if (cudaError_t e = ensure_context()) return record(e);
  // cudaMalloc(0) succeeds with a null pointer and never reaches the driver.
  if (size == 0) return cudaSuccess;
  CUdeviceptr p = 0;
  CUresult r = driver().cuMemAlloc_v2(&p, size);
  *devPtr = as_ptr(p);
  return record(r);
}

FAKECUDA_API cudaError_t cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  if (!devPtr) return record(cudaErrorInvalidValue);
  *devPtr = nullptr;
  if (cudaError_t e = ensure_context()) return record(e);
  CUdeviceptr p = 0;
  CUresult r = driver().cuMemAllocManaged(&p, size, flags);
  *devPtr = as_ptr(p);
  return record(r);
}

FAKECUDA_API cudaError_t cudaMallocPitch(void** devPtr, size_t* pitch, size_t width, size_t height) {
  if (!devPtr || !pitch) return record(cudaErrorInvalidValue);
  *devPtr = nullptr;
  if (cudaError_t e = ensure_context()) return record(e);
  CUdeviceptr p = 0;
  CUresult r = driver().cuMemAllocPitch_v2(&p, pitch, width, height, kPitchElementSize);
  *devPtr = as_ptr(p);
  return record(r);
}

// Depth 0 allocates like depth 1; gmemhook's api_table.h sizes cudaMalloc3D records the same way.
FAKECUDA_API cudaError_t cudaMalloc3D(cudaPitchedPtr* pitchedDevPtr, cudaExtent extent) {
  if (!pitchedDevPtr) return record(cudaErrorInvalidValue);
  *pitchedDevPtr = cudaPitchedPtr{nullptr, 0, extent.width, extent.height};
  if (cudaError_t e = ensure_context()) return record(e);
  size_t depth = extent.depth ? extent.depth : 1;
  if (extent.height != 0 && depth > SIZE_MAX / extent.height) return record(cudaErrorMemoryAllocation);
  CUdeviceptr p = 0;
  size_t pitch = 0;
  CUresult r = driver().cuMemAllocPitch_v2(&p, &pitch, extent.width, extent.height * depth, kPitchElementSize);
  *pitchedDevPtr = cudaPitchedPtr{as_ptr(p), r == CUDA_SUCCESS ? pitch : 0, extent.width, extent.height};
  return record(r);
}

// cudaFree(0) is the classic "initialize the context" call: it binds the context, then succeeds.
FAKECUDA_API cudaError_t cudaFree(void* devPtr) {
  if (cudaError_t e = ensure_context()) return record(e);
  if (!devPtr) return cudaSuccess;
  return record(driver().cuMemFree_v2(as_dptr(devPtr)));
}

FAKECUDA_API cudaError_t cudaMallocHost(void** ptr, size_t size) {
  if (!ptr) return record(cudaErrorInvalidValue);
  *ptr = nullptr;
  if (cudaError_t e = ensure_context()) return record(e);
  return record(driver().cuMemAllocHost_v2(ptr, size));
}

// cudaHostAlloc* flags have the same values as CU_MEMHOSTALLOC_*.
FAKECUDA_API cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  if (!pHost) return record(cudaErrorInvalidValue);
  *pHost = nullptr;
  if (cudaError_t e = ensure_context()) return record(e);
  return record(driver().cuMemHostAlloc(pHost, size, flags));
}

FAKECUDA_API cudaError_t cudaFreeHost(void* ptr) {
  if (cudaError_t e = ensure_context()) return record(e);
  return record(driver().cuMemFreeHost(ptr));
}

FAKECUDA_API cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  if (cudaError_t e = ensure_context()) return record(e);
  return record(driver().cuMemsetD8_v2(as_dptr(devPtr), static_cast<unsigned char>(value), count));
}

FAKECUDA_API cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  if (cudaError_t e = ensure_context()) return record(e);
  const DriverApi& d = driver();
  switch (kind) {
    case cudaMemcpyHostToDevice: return record(d.cuMemcpyHtoD_v2(as_dptr(dst), src, count));
    case cudaMemcpyDeviceToHost: return record(d.cuMemcpyDtoH_v2(dst, as_dptr(src), count));
    case cudaMemcpyDeviceToDevice: return record(d.cuMemcpyDtoD_v2(as_dptr(dst), as_dptr(src), count));
    case cudaMemcpyHostToHost:
    case cudaMemcpyDefault: return record(d.cuMemcpy(as_dptr(dst), as_dptr(src), count));
    default: return record(cudaErrorInvalidMemcpyDirection);
  }
}

FAKECUDA_API cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  if (cudaError_t e = ensure_context()) return record(e);
  return record(driver().cuMemGetInfo_v2(free, total));
}

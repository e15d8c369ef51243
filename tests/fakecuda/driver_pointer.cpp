// Driver pointer queries: cuPointerGetAttribute and cuMemGetAddressRange over the allocation table.
#include <mutex>

#include "cuda_decls.h"
#include "device_state.h"

using namespace fakecuda;

namespace {

template <typename T>
void put(void* data, T value) {
  *static_cast<T*>(data) = value;
}

}  // namespace

// Works without a current context: UVA pointers identify their own device.
FAKECUDA_API CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  if (CUresult r = require_init()) return r;
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  PointerInfo info;
  {
    std::lock_guard lock(state().mu);
    if (!lookup_pointer(ptr, &info)) return CUDA_ERROR_INVALID_VALUE;
  }
  bool host = info.type == CU_MEMORYTYPE_HOST;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: put<CUcontext>(data, info.ctx); break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: put<unsigned int>(data, info.type); break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: put<CUdeviceptr>(data, ptr); break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (!host && !info.managed) return CUDA_ERROR_INVALID_VALUE;
      put<void*>(data, reinterpret_cast<void*>(ptr));
      break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: put<unsigned long long>(data, info.id); break;
    // Booleans are written as one byte, which is also right for callers passing an int set to 0.
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: put<bool>(data, info.managed); break;
    case CU_POINTER_ATTRIBUTE_MAPPED: put<bool>(data, true); break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: put<bool>(data, false); break;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
      put<bool>(data, !info.vmm && !host && !info.managed && !info.pool);
      break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: put<int>(data, info.device); break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: put<CUdeviceptr>(data, info.range_base); break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: put<size_t>(data, info.range_size); break;
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: put<CUdeviceptr>(data, info.base); break;
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: put<size_t>(data, info.size); break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: put<CUmemoryPool>(data, info.pool); break;
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: put<unsigned long long>(data, info.id); break;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
      put<unsigned long long>(data, info.vmm ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : 0);
      break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = current_context(&ctx)) return r;
  PointerInfo info;
  {
    std::lock_guard lock(state().mu);
    if (!lookup_pointer(dptr, &info)) return CUDA_ERROR_NOT_FOUND;
  }
  if (pbase) *pbase = info.base;
  if (psize) *psize = info.size;
  return CUDA_SUCCESS;
}

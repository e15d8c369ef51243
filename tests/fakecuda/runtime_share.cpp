// Runtime IPC handles, pool pointer export/import and CUDA arrays, each carried out by the
// matching driver entry point (driver_share.cpp, driver_array.cpp), as real cudart does.
#include "runtime_state.h"

using namespace fakecudart;

namespace {

// The driver format for a runtime channel description: every used channel has the first one's
// width, as cudaCreateChannelDesc<T>() makes them; anything else is refused.
bool driver_format(const cudaChannelFormatDesc& d, CUarray_format* format, unsigned* channels) {
  const int bits[4] = {d.x, d.y, d.z, d.w};
  *channels = 0;
  for (int b : bits) {
    if (b == 0) break;
    if (b != d.x) return false;
    ++*channels;
  }
  if (*channels == 0 || *channels == 3) return false;
  switch (d.f) {
    case cudaChannelFormatKindFloat:
      if (d.x == 32) return *format = CU_AD_FORMAT_FLOAT, true;
      if (d.x == 16) return *format = CU_AD_FORMAT_HALF, true;
      return false;
    case cudaChannelFormatKindUnsigned:
      if (d.x == 8) return *format = CU_AD_FORMAT_UNSIGNED_INT8, true;
      if (d.x == 16) return *format = CU_AD_FORMAT_UNSIGNED_INT16, true;
      if (d.x == 32) return *format = CU_AD_FORMAT_UNSIGNED_INT32, true;
      return false;
    case cudaChannelFormatKindSigned:
      if (d.x == 8) return *format = CU_AD_FORMAT_SIGNED_INT8, true;
      if (d.x == 16) return *format = CU_AD_FORMAT_SIGNED_INT16, true;
      if (d.x == 32) return *format = CU_AD_FORMAT_SIGNED_INT32, true;
      return false;
    default:
      return false;
  }
}

bool descriptor(const cudaChannelFormatDesc* desc, cudaExtent extent, CUDA_ARRAY3D_DESCRIPTOR* out) {
  if (!desc) return false;
  *out = CUDA_ARRAY3D_DESCRIPTOR{};
  out->Width = extent.width;
  out->Height = extent.height;
  out->Depth = extent.depth;
  return driver_format(*desc, &out->Format, &out->NumChannels);
}

}  // namespace

extern "C" {

// What cudaCreateChannelDesc<T>() in channel_descriptor.h calls.
FAKECUDA_API cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w, cudaChannelFormatKind f) {
  return cudaChannelFormatDesc{x, y, z, w, f};
}

FAKECUDA_API cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* devPtr) {
  if (!handle) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context()) return record(e);
  CUipcMemHandle h{};
  CUresult r = driver().cuIpcGetMemHandle(&h, reinterpret_cast<CUdeviceptr>(devPtr));
  static_assert(sizeof h.reserved == sizeof handle->reserved);
  __builtin_memcpy(handle->reserved, h.reserved, sizeof h.reserved);
  return record(to_runtime_error(r));
}

FAKECUDA_API cudaError_t cudaIpcOpenMemHandle(void** devPtr, cudaIpcMemHandle_t handle, unsigned int flags) {
  if (!devPtr) return record(cudaErrorInvalidValue);
  *devPtr = nullptr;
  if (cudaError_t e = ensure_context()) return record(e);
  CUipcMemHandle h{};
  __builtin_memcpy(h.reserved, handle.reserved, sizeof h.reserved);
  CUdeviceptr p = 0;
  CUresult r = driver().cuIpcOpenMemHandle_v2(&p, h, flags);
  *devPtr = reinterpret_cast<void*>(p);
  return record(to_runtime_error(r));
}

FAKECUDA_API cudaError_t cudaIpcCloseMemHandle(void* devPtr) {
  if (cudaError_t e = ensure_context()) return record(e);
  return record(to_runtime_error(driver().cuIpcCloseMemHandle(reinterpret_cast<CUdeviceptr>(devPtr))));
}

FAKECUDA_API cudaError_t cudaMemPoolExportPointer(cudaMemPoolPtrExportData* exportData, void* ptr) {
  if (cudaError_t e = ensure_context()) return record(e);
  return record(to_runtime_error(driver().cuMemPoolExportPointer(
      reinterpret_cast<CUmemPoolPtrExportData*>(exportData), reinterpret_cast<CUdeviceptr>(ptr))));
}

FAKECUDA_API cudaError_t cudaMemPoolImportPointer(void** ptr, cudaMemPool_t memPool,
                                                  cudaMemPoolPtrExportData* exportData) {
  if (!ptr) return record(cudaErrorInvalidValue);
  *ptr = nullptr;
  if (cudaError_t e = ensure_context()) return record(e);
  CUdeviceptr p = 0;
  CUresult r = driver().cuMemPoolImportPointer(&p, reinterpret_cast<CUmemoryPool>(memPool),
                                               reinterpret_cast<CUmemPoolPtrExportData*>(exportData));
  *ptr = reinterpret_cast<void*>(p);
  return record(to_runtime_error(r));
}

FAKECUDA_API cudaError_t cudaMallocArray(cudaArray_t* array, const cudaChannelFormatDesc* desc, size_t width,
                                         size_t height, unsigned int) {
  if (!array) return record(cudaErrorInvalidValue);
  CUDA_ARRAY3D_DESCRIPTOR d;
  if (!descriptor(desc, cudaExtent{width, height, 0}, &d)) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context()) return record(e);
  CUDA_ARRAY_DESCRIPTOR d2{d.Width, d.Height, d.Format, d.NumChannels};
  CUarray a = nullptr;
  CUresult r = driver().cuArrayCreate_v2(&a, &d2);
  *array = reinterpret_cast<cudaArray_t>(a);
  return record(to_runtime_error(r));
}

FAKECUDA_API cudaError_t cudaMalloc3DArray(cudaArray_t* array, const cudaChannelFormatDesc* desc, cudaExtent extent,
                                           unsigned int) {
  if (!array) return record(cudaErrorInvalidValue);
  CUDA_ARRAY3D_DESCRIPTOR d;
  if (!descriptor(desc, extent, &d)) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context()) return record(e);
  CUarray a = nullptr;
  CUresult r = driver().cuArray3DCreate_v2(&a, &d);
  *array = reinterpret_cast<cudaArray_t>(a);
  return record(to_runtime_error(r));
}

FAKECUDA_API cudaError_t cudaMallocMipmappedArray(cudaMipmappedArray_t* array, const cudaChannelFormatDesc* desc,
                                                  cudaExtent extent, unsigned int numLevels, unsigned int) {
  if (!array) return record(cudaErrorInvalidValue);
  CUDA_ARRAY3D_DESCRIPTOR d;
  if (!descriptor(desc, extent, &d)) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context()) return record(e);
  CUmipmappedArray a = nullptr;
  CUresult r = driver().cuMipmappedArrayCreate(&a, &d, numLevels);
  *array = reinterpret_cast<cudaMipmappedArray_t>(a);
  return record(to_runtime_error(r));
}

FAKECUDA_API cudaError_t cudaFreeArray(cudaArray_t array) {
  if (!array) return cudaSuccess;  // like cudaFree(nullptr)
  if (cudaError_t e = load_driver()) return record(e);
  return record(to_runtime_error(driver().cuArrayDestroy(reinterpret_cast<CUarray>(array))));
}

FAKECUDA_API cudaError_t cudaFreeMipmappedArray(cudaMipmappedArray_t array) {
  if (!array) return cudaSuccess;
  if (cudaError_t e = load_driver()) return record(e);
  return record(to_runtime_error(driver().cuMipmappedArrayDestroy(reinterpret_cast<CUmipmappedArray>(array))));
}

}  // extern "C"

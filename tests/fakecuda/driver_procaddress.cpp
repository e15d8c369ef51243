// cuGetProcAddress: resolves base names to the exported functions by requested CUDA version and stream mode.
#include <cstring>

#include "cuda_decls.h"
#include "device_state.h"

namespace {

// One row per ABI of a base name. `version` is the CUDA release that introduced that ABI; the
// lookup picks the newest row not newer than the caller's cudaVersion. `per_thread` is the
// _ptsz/_ptds twin handed out for CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM. The pointers are
// the exported symbols themselves (-Bsymbolic keeps them from resolving to an interposer's copy).
// Pre-3.2 32-bit ABIs are not simulated, so asking for those reports VERSION_NOT_SUFFICIENT.
struct ProcEntry {
  const char* name;
  int version;
  void* fn;
  void* per_thread;
};

template <typename F>
void* fn(F* f) {
  return reinterpret_cast<void*>(f);
}

const ProcEntry kProcs[] = {
    {"cuInit", 2000, fn(cuInit), nullptr},
    {"cuDriverGetVersion", 2020, fn(cuDriverGetVersion), nullptr},
    {"cuGetErrorString", 6000, fn(cuGetErrorString), nullptr},
    {"cuGetErrorName", 6000, fn(cuGetErrorName), nullptr},
    {"cuGetProcAddress", 11030, fn(cuGetProcAddress), nullptr},
    {"cuGetProcAddress", 12000, fn(cuGetProcAddress_v2), nullptr},
    {"cuDeviceGet", 2000, fn(cuDeviceGet), nullptr},
    {"cuDeviceGetCount", 2000, fn(cuDeviceGetCount), nullptr},
    {"cuDeviceGetName", 2000, fn(cuDeviceGetName), nullptr},
    {"cuDeviceTotalMem", 3020, fn(cuDeviceTotalMem_v2), nullptr},
    {"cuDeviceGetAttribute", 2000, fn(cuDeviceGetAttribute), nullptr},
    {"cuDevicePrimaryCtxRetain", 7000, fn(cuDevicePrimaryCtxRetain), nullptr},
    {"cuDevicePrimaryCtxRelease", 11000, fn(cuDevicePrimaryCtxRelease_v2), nullptr},
    {"cuDevicePrimaryCtxReset", 11000, fn(cuDevicePrimaryCtxReset_v2), nullptr},
    {"cuDevicePrimaryCtxGetState", 7000, fn(cuDevicePrimaryCtxGetState), nullptr},
    {"cuCtxCreate", 3020, fn(cuCtxCreate_v2), nullptr},
    {"cuCtxCreate", 12050, fn(cuCtxCreate_v4), nullptr},
    {"cuCtxDestroy", 4000, fn(cuCtxDestroy_v2), nullptr},
    {"cuCtxSetCurrent", 4000, fn(cuCtxSetCurrent), nullptr},
    {"cuCtxGetCurrent", 4000, fn(cuCtxGetCurrent), nullptr},
    {"cuCtxPushCurrent", 4000, fn(cuCtxPushCurrent_v2), nullptr},
    {"cuCtxPopCurrent", 4000, fn(cuCtxPopCurrent_v2), nullptr},
    {"cuCtxGetDevice", 2000, fn(cuCtxGetDevice), nullptr},
    {"cuCtxSynchronize", 2000, fn(cuCtxSynchronize), nullptr},
    {"cuStreamCreate", 2000, fn(cuStreamCreate), nullptr},
    {"cuStreamDestroy", 4000, fn(cuStreamDestroy_v2), nullptr},
    {"cuStreamSynchronize", 2000, fn(cuStreamSynchronize), fn(cuStreamSynchronize_ptsz)},
    {"cuStreamQuery", 2000, fn(cuStreamQuery), fn(cuStreamQuery_ptsz)},
    {"cuMemGetInfo", 3020, fn(cuMemGetInfo_v2), nullptr},
    {"cuMemAlloc", 3020, fn(cuMemAlloc_v2), nullptr},
    {"cuMemAllocPitch", 3020, fn(cuMemAllocPitch_v2), nullptr},
    {"cuMemFree", 3020, fn(cuMemFree_v2), nullptr},
    {"cuMemGetAddressRange", 3020, fn(cuMemGetAddressRange_v2), nullptr},
    {"cuMemAllocManaged", 6000, fn(cuMemAllocManaged), nullptr},
    {"cuMemAllocHost", 3020, fn(cuMemAllocHost_v2), nullptr},
    {"cuMemHostAlloc", 2020, fn(cuMemHostAlloc), nullptr},
    {"cuMemFreeHost", 2000, fn(cuMemFreeHost), nullptr},
    {"cuMemsetD8", 3020, fn(cuMemsetD8_v2), fn(cuMemsetD8_v2_ptds)},
    {"cuMemcpy", 4000, fn(cuMemcpy), fn(cuMemcpy_ptds)},
    {"cuMemcpyHtoD", 3020, fn(cuMemcpyHtoD_v2), fn(cuMemcpyHtoD_v2_ptds)},
    {"cuMemcpyDtoH", 3020, fn(cuMemcpyDtoH_v2), fn(cuMemcpyDtoH_v2_ptds)},
    {"cuMemcpyDtoD", 3020, fn(cuMemcpyDtoD_v2), fn(cuMemcpyDtoD_v2_ptds)},
    {"cuMemAllocAsync", 11020, fn(cuMemAllocAsync), fn(cuMemAllocAsync_ptsz)},
    {"cuMemAllocFromPoolAsync", 11020, fn(cuMemAllocFromPoolAsync),
     fn(cuMemAllocFromPoolAsync_ptsz)},
    {"cuMemFreeAsync", 11020, fn(cuMemFreeAsync), fn(cuMemFreeAsync_ptsz)},
    {"cuMemPoolCreate", 11020, fn(cuMemPoolCreate), nullptr},
    {"cuMemPoolDestroy", 11020, fn(cuMemPoolDestroy), nullptr},
    {"cuMemPoolTrimTo", 11020, fn(cuMemPoolTrimTo), nullptr},
    {"cuMemPoolGetAttribute", 11020, fn(cuMemPoolGetAttribute), nullptr},
    {"cuMemPoolSetAttribute", 11020, fn(cuMemPoolSetAttribute), nullptr},
    {"cuDeviceGetDefaultMemPool", 11020, fn(cuDeviceGetDefaultMemPool), nullptr},
    {"cuDeviceGetMemPool", 11020, fn(cuDeviceGetMemPool), nullptr},
    {"cuDeviceSetMemPool", 11020, fn(cuDeviceSetMemPool), nullptr},
    {"cuMemCreate", 10020, fn(cuMemCreate), nullptr},
    {"cuMemRelease", 10020, fn(cuMemRelease), nullptr},
    {"cuMemMap", 10020, fn(cuMemMap), nullptr},
    {"cuMemUnmap", 10020, fn(cuMemUnmap), nullptr},
    {"cuMemAddressReserve", 10020, fn(cuMemAddressReserve), nullptr},
    {"cuMemAddressFree", 10020, fn(cuMemAddressFree), nullptr},
    {"cuMemSetAccess", 10020, fn(cuMemSetAccess), nullptr},
    {"cuMemGetAllocationGranularity", 10020, fn(cuMemGetAllocationGranularity), nullptr},
    {"cuPointerGetAttribute", 4000, fn(cuPointerGetAttribute), nullptr},
    {"cuGraphCreate", 10000, fn(cuGraphCreate), nullptr},
    {"cuStreamBeginCapture", 10000, fn(cuStreamBeginCapture_v2), fn(cuStreamBeginCapture_ptsz)},
    {"cuStreamEndCapture", 10000, fn(cuStreamEndCapture), fn(cuStreamEndCapture_ptsz)},
    {"cuGraphAddMemAllocNode", 11040, fn(cuGraphAddMemAllocNode), nullptr},
    {"cuGraphAddMemFreeNode", 11040, fn(cuGraphAddMemFreeNode), nullptr},
    {"cuGraphInstantiate", 12000, fn(cuGraphInstantiateWithFlags), nullptr},
    {"cuGraphInstantiateWithFlags", 11040, fn(cuGraphInstantiateWithFlags), nullptr},
    {"cuGraphInstantiateWithParams", 12000, fn(cuGraphInstantiateWithParams),
     fn(cuGraphInstantiateWithParams_ptsz)},
    {"cuGraphLaunch", 10000, fn(cuGraphLaunch), fn(cuGraphLaunch_ptsz)},
    {"cuGraphUpload", 11010, fn(cuGraphUpload), fn(cuGraphUpload_ptsz)},
    {"cuGraphExecDestroy", 10000, fn(cuGraphExecDestroy), nullptr},
    {"cuGraphDestroy", 10000, fn(cuGraphDestroy), nullptr},
    {"cuDeviceGraphMemTrim", 11040, fn(cuDeviceGraphMemTrim), nullptr},
    {"cuDeviceGetGraphMemAttribute", 11040, fn(cuDeviceGetGraphMemAttribute), nullptr},
    {"cuGraphAddNode", 12030, fn(cuGraphAddNode_v2), nullptr},
    {"cuGraphAddChildGraphNode", 10000, fn(cuGraphAddChildGraphNode), nullptr},
    {"cuGraphClone", 10000, fn(cuGraphClone), nullptr},
    {"cuStreamBeginCaptureToGraph", 12030, fn(cuStreamBeginCaptureToGraph),
     fn(cuStreamBeginCaptureToGraph_ptsz)},
    {"cuMemExportToShareableHandle", 10020, fn(cuMemExportToShareableHandle), nullptr},
    {"cuMemImportFromShareableHandle", 10020, fn(cuMemImportFromShareableHandle), nullptr},
    {"cuMemRetainAllocationHandle", 11000, fn(cuMemRetainAllocationHandle), nullptr},
    {"cuIpcGetMemHandle", 4010, fn(cuIpcGetMemHandle), nullptr},
    {"cuIpcOpenMemHandle", 11000, fn(cuIpcOpenMemHandle_v2), nullptr},
    {"cuIpcCloseMemHandle", 4010, fn(cuIpcCloseMemHandle), nullptr},
    {"cuMemPoolExportPointer", 11020, fn(cuMemPoolExportPointer), nullptr},
    {"cuMemPoolImportPointer", 11020, fn(cuMemPoolImportPointer), nullptr},
    {"cuArrayCreate", 3020, fn(cuArrayCreate_v2), nullptr},
    {"cuArray3DCreate", 3020, fn(cuArray3DCreate_v2), nullptr},
    {"cuMipmappedArrayCreate", 5000, fn(cuMipmappedArrayCreate), nullptr},
    {"cuArrayDestroy", 2000, fn(cuArrayDestroy), nullptr},
    {"cuMipmappedArrayDestroy", 5000, fn(cuMipmappedArrayDestroy), nullptr},
};

CUresult lookup(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                CUdriverProcAddressQueryResult* status) {
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  if (flags != CU_GET_PROC_ADDRESS_DEFAULT && flags != CU_GET_PROC_ADDRESS_LEGACY_STREAM &&
      flags != CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
    return CUDA_ERROR_INVALID_VALUE;
  // Asking for a newer CUDA than this driver implements is an error, not a miss.
  if (cudaVersion > fakecuda::kDriverVersion) return CUDA_ERROR_INVALID_VALUE;
  const ProcEntry* best = nullptr;
  bool known = false;
  for (const ProcEntry& e : kProcs) {
    if (std::strcmp(e.name, symbol) != 0) continue;
    known = true;
    if (e.version <= cudaVersion && (!best || e.version > best->version)) best = &e;
  }
  if (!best) {
    if (status && known) *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    return CUDA_ERROR_NOT_FOUND;
  }
  bool per_thread = flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM && best->per_thread;
  *pfn = per_thread ? best->per_thread : best->fn;
  if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

}  // namespace

// Usable before cuInit, as the real one is: the runtime resolves everything before initializing.
FAKECUDA_API CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                                          CUdriverProcAddressQueryResult* symbolStatus) {
  return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

FAKECUDA_API CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  return lookup(symbol, pfn, cudaVersion, flags, nullptr);
}

// Runtime internals: the driver entry points it resolved, its per-thread device, and error plumbing.
#pragma once

#include <cuda_runtime_api.h>

#include "cuda_decls.h"

// Every driver function the runtime calls: (exported symbol, base name asked of cuGetProcAddress,
// lookup flags). The field for each is typed from the symbol's own prototype.
#define FAKECUDART_DRIVER_FUNCTIONS(X)                                                            \
  X(cuInit, "cuInit", CU_GET_PROC_ADDRESS_DEFAULT)                                                \
  X(cuDriverGetVersion, "cuDriverGetVersion", CU_GET_PROC_ADDRESS_DEFAULT)                        \
  X(cuDeviceGetCount, "cuDeviceGetCount", CU_GET_PROC_ADDRESS_DEFAULT)                            \
  X(cuDeviceGetName, "cuDeviceGetName", CU_GET_PROC_ADDRESS_DEFAULT)                              \
  X(cuDeviceTotalMem_v2, "cuDeviceTotalMem", CU_GET_PROC_ADDRESS_DEFAULT)                         \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute", CU_GET_PROC_ADDRESS_DEFAULT)                    \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", CU_GET_PROC_ADDRESS_DEFAULT)            \
  X(cuDevicePrimaryCtxReset_v2, "cuDevicePrimaryCtxReset", CU_GET_PROC_ADDRESS_DEFAULT)           \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", CU_GET_PROC_ADDRESS_DEFAULT)                              \
  X(cuCtxGetCurrent, "cuCtxGetCurrent", CU_GET_PROC_ADDRESS_DEFAULT)                              \
  X(cuCtxGetDevice, "cuCtxGetDevice", CU_GET_PROC_ADDRESS_DEFAULT)                                \
  X(cuCtxSynchronize, "cuCtxSynchronize", CU_GET_PROC_ADDRESS_DEFAULT)                            \
  X(cuStreamCreate, "cuStreamCreate", CU_GET_PROC_ADDRESS_DEFAULT)                                \
  X(cuStreamDestroy_v2, "cuStreamDestroy", CU_GET_PROC_ADDRESS_DEFAULT)                           \
  X(cuStreamSynchronize, "cuStreamSynchronize", CU_GET_PROC_ADDRESS_DEFAULT)                      \
  X(cuStreamQuery, "cuStreamQuery", CU_GET_PROC_ADDRESS_DEFAULT)                                  \
  X(cuStreamQuery_ptsz, "cuStreamQuery", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)           \
  X(cuMemGetInfo_v2, "cuMemGetInfo", CU_GET_PROC_ADDRESS_DEFAULT)                                 \
  X(cuMemAlloc_v2, "cuMemAlloc", CU_GET_PROC_ADDRESS_DEFAULT)                                     \
  X(cuMemFree_v2, "cuMemFree", CU_GET_PROC_ADDRESS_DEFAULT)                                       \
  X(cuMemAllocPitch_v2, "cuMemAllocPitch", CU_GET_PROC_ADDRESS_DEFAULT)                           \
  X(cuMemAllocManaged, "cuMemAllocManaged", CU_GET_PROC_ADDRESS_DEFAULT)                          \
  X(cuMemAllocHost_v2, "cuMemAllocHost", CU_GET_PROC_ADDRESS_DEFAULT)                             \
  X(cuMemHostAlloc, "cuMemHostAlloc", CU_GET_PROC_ADDRESS_DEFAULT)                                \
  X(cuMemFreeHost, "cuMemFreeHost", CU_GET_PROC_ADDRESS_DEFAULT)                                  \
  X(cuMemsetD8_v2, "cuMemsetD8", CU_GET_PROC_ADDRESS_DEFAULT)                                     \
  X(cuMemcpy, "cuMemcpy", CU_GET_PROC_ADDRESS_DEFAULT)                                            \
  X(cuMemcpyHtoD_v2, "cuMemcpyHtoD", CU_GET_PROC_ADDRESS_DEFAULT)                                 \
  X(cuMemcpyDtoH_v2, "cuMemcpyDtoH", CU_GET_PROC_ADDRESS_DEFAULT)                                 \
  X(cuMemcpyDtoD_v2, "cuMemcpyDtoD", CU_GET_PROC_ADDRESS_DEFAULT)                                 \
  X(cuMemAllocAsync, "cuMemAllocAsync", CU_GET_PROC_ADDRESS_DEFAULT)                              \
  X(cuMemAllocAsync_ptsz, "cuMemAllocAsync", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)       \
  X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", CU_GET_PROC_ADDRESS_DEFAULT)              \
  X(cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync",                                      \
    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)                                                \
  X(cuMemFreeAsync, "cuMemFreeAsync", CU_GET_PROC_ADDRESS_DEFAULT)                                \
  X(cuMemFreeAsync_ptsz, "cuMemFreeAsync", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)         \
  X(cuMemPoolCreate, "cuMemPoolCreate", CU_GET_PROC_ADDRESS_DEFAULT)                              \
  X(cuMemPoolDestroy, "cuMemPoolDestroy", CU_GET_PROC_ADDRESS_DEFAULT)                            \
  X(cuMemPoolTrimTo, "cuMemPoolTrimTo", CU_GET_PROC_ADDRESS_DEFAULT)                              \
  X(cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", CU_GET_PROC_ADDRESS_DEFAULT)          \
  X(cuGraphCreate, "cuGraphCreate", CU_GET_PROC_ADDRESS_DEFAULT)                                  \
  X(cuStreamBeginCapture_v2, "cuStreamBeginCapture", CU_GET_PROC_ADDRESS_DEFAULT)                 \
  X(cuStreamBeginCapture_ptsz, "cuStreamBeginCapture",                                            \
    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)                                                \
  X(cuStreamEndCapture, "cuStreamEndCapture", CU_GET_PROC_ADDRESS_DEFAULT)                        \
  X(cuStreamEndCapture_ptsz, "cuStreamEndCapture", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) \
  X(cuGraphAddMemAllocNode, "cuGraphAddMemAllocNode", CU_GET_PROC_ADDRESS_DEFAULT)                \
  X(cuGraphAddMemFreeNode, "cuGraphAddMemFreeNode", CU_GET_PROC_ADDRESS_DEFAULT)                  \
  X(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", CU_GET_PROC_ADDRESS_DEFAULT)      \
  X(cuGraphInstantiateWithParams, "cuGraphInstantiateWithParams", CU_GET_PROC_ADDRESS_DEFAULT)    \
  X(cuGraphInstantiateWithParams_ptsz, "cuGraphInstantiateWithParams",                            \
    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)                                                \
  X(cuGraphLaunch, "cuGraphLaunch", CU_GET_PROC_ADDRESS_DEFAULT)                                  \
  X(cuGraphLaunch_ptsz, "cuGraphLaunch", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)           \
  X(cuGraphUpload, "cuGraphUpload", CU_GET_PROC_ADDRESS_DEFAULT)                                  \
  X(cuGraphUpload_ptsz, "cuGraphUpload", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)           \
  X(cuGraphExecDestroy, "cuGraphExecDestroy", CU_GET_PROC_ADDRESS_DEFAULT)                        \
  X(cuGraphDestroy, "cuGraphDestroy", CU_GET_PROC_ADDRESS_DEFAULT)                                \
  X(cuDeviceGraphMemTrim, "cuDeviceGraphMemTrim", CU_GET_PROC_ADDRESS_DEFAULT)                    \
  X(cuDeviceGetGraphMemAttribute, "cuDeviceGetGraphMemAttribute", CU_GET_PROC_ADDRESS_DEFAULT)    \
  X(cuGraphAddNode_v2, "cuGraphAddNode", CU_GET_PROC_ADDRESS_DEFAULT)                             \
  X(cuGraphAddChildGraphNode, "cuGraphAddChildGraphNode", CU_GET_PROC_ADDRESS_DEFAULT)            \
  X(cuGraphClone, "cuGraphClone", CU_GET_PROC_ADDRESS_DEFAULT)                                    \
  X(cuStreamBeginCaptureToGraph, "cuStreamBeginCaptureToGraph", CU_GET_PROC_ADDRESS_DEFAULT)      \
  X(cuStreamBeginCaptureToGraph_ptsz, "cuStreamBeginCaptureToGraph",                              \
    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)                                                \
  X(cuIpcGetMemHandle, "cuIpcGetMemHandle", CU_GET_PROC_ADDRESS_DEFAULT)                          \
  X(cuIpcOpenMemHandle_v2, "cuIpcOpenMemHandle", CU_GET_PROC_ADDRESS_DEFAULT)                     \
  X(cuIpcCloseMemHandle, "cuIpcCloseMemHandle", CU_GET_PROC_ADDRESS_DEFAULT)                      \
  X(cuMemPoolExportPointer, "cuMemPoolExportPointer", CU_GET_PROC_ADDRESS_DEFAULT)                \
  X(cuMemPoolImportPointer, "cuMemPoolImportPointer", CU_GET_PROC_ADDRESS_DEFAULT)                \
  X(cuArrayCreate_v2, "cuArrayCreate", CU_GET_PROC_ADDRESS_DEFAULT)                               \
  X(cuArray3DCreate_v2, "cuArray3DCreate", CU_GET_PROC_ADDRESS_DEFAULT)                           \
  X(cuMipmappedArrayCreate, "cuMipmappedArrayCreate", CU_GET_PROC_ADDRESS_DEFAULT)                \
  X(cuArrayDestroy, "cuArrayDestroy", CU_GET_PROC_ADDRESS_DEFAULT)                                \
  X(cuMipmappedArrayDestroy, "cuMipmappedArrayDestroy", CU_GET_PROC_ADDRESS_DEFAULT)

namespace fakecudart {

struct DriverApi {
  decltype(&::cuGetProcAddress_v2) cuGetProcAddress_v2 = nullptr;
#define FAKECUDART_DRIVER_FIELD(symbol, name, flags) decltype(&::symbol) symbol = nullptr;
  FAKECUDART_DRIVER_FUNCTIONS(FAKECUDART_DRIVER_FIELD)
#undef FAKECUDART_DRIVER_FIELD
};

// Loads and initializes the driver once; every later call returns the same verdict.
cudaError_t load_driver();
// Only meaningful once load_driver() has returned cudaSuccess.
const DriverApi& driver();

// Makes sure the calling thread has a context: the one already current, or the primary context
// of the thread's runtime device (retained once per device, like cudart).
cudaError_t ensure_context();
cudaError_t bind_primary_context(int device);
int& thread_device();
cudaError_t current_device(int* device);

cudaError_t to_runtime_error(CUresult r);
// Remembers a failure for cudaGetLastError / cudaPeekAtLastError and passes it through.
cudaError_t record(cudaError_t e);
inline cudaError_t record(CUresult r) { return record(to_runtime_error(r)); }
cudaError_t take_last_error();
cudaError_t peek_last_error();

}  // namespace fakecudart

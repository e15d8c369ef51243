// Prototypes of exported fake-CUDA symbols that cuda.h does not declare by default, plus the export macro.
#pragma once

#include <cuda.h>

#include <cstddef>

// Everything is built with -fvisibility=hidden; only the CUDA entry points carry this.
#define FAKECUDA_API extern "C" __attribute__((visibility("default")))

// cuda.h maps cuGetProcAddress to the _v2 ABI, but real libcuda still exports the 4-argument
// legacy symbol under the plain name, so the macro has to go before we can declare it.
#undef cuGetProcAddress

extern "C" {
CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags);
CUresult CUDAAPI cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev);

// Per-thread-default-stream variants; cuda.h only declares them when the including translation
// unit is itself compiled for per-thread default streams.
CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream);
CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                              CUstream hStream);
CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream);
CUresult CUDAAPI cuStreamQuery_ptsz(CUstream hStream);
CUresult CUDAAPI cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N);
CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount);
CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount);
CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount);
CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream hStream, CUstreamCaptureMode mode);
CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph);
CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream);
CUresult CUDAAPI cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream);
CUresult CUDAAPI cuGraphInstantiateWithParams_ptsz(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                   CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams);
CUresult CUDAAPI cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
                                                  const CUgraphNode* dependencies,
                                                  const CUgraphEdgeData* dependencyData,
                                                  size_t numDependencies, CUstreamCaptureMode mode);

// Test-only controls (not part of CUDA): device capacity consumed right now on `device`
// (cuMemAlloc family + bytes reserved by pools + VMM physical memory), and pinned host bytes.
size_t fakecuda_live_bytes(int device);
size_t fakecuda_pinned_host_bytes(void);
// cuMemAlloc_v2 and cuMemFree_v2 under names no hook interposes (driver_memory.cpp): benchmarks'
// direct path.
CUresult CUDAAPI fakecuda_direct_cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize);
CUresult CUDAAPI fakecuda_direct_cuMemFree_v2(CUdeviceptr dptr);
}

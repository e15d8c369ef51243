// The one list of allocation entry points gmemhook hooks. Everything else derives from it:
// the exported wrappers, the dlsym / cuGetProcAddress / cudaGetDriverEntryPoint substitution,
// the record each call writes, and the analyzer's names for API ids.
#pragma once

#include "gmemhook/format.h"

// X(ID, NAME, LAYER, KIND, MEMORY, PARAMS, ARGS, READ)
//   ID      stable number written into logs: never reuse or renumber, only append
//   NAME    exported symbol name (the driver's versioned name, e.g. cuMemAlloc_v2; a C++
//           function's mangled name)
//   LAYER   Runtime | Driver | Allocator
//   KIND    format::EventKind
//   MEMORY  format::MemoryType the call allocates or frees by default
//   PARAMS  the prototype's parameter list, as in the CUDA headers
//   ARGS    the same parameters as an argument list
//   READ    statements filling `e` (an EventFields) from the parameters; `ok` says whether the
//           call succeeded (out-parameters are only valid then). Only the interposer expands
//           PARAMS and READ; the analyzer sees ids, names, layers, kinds and memory types.
//
// Allocator entry points return nothing and take only inputs: READ runs before the call and
// clears `record` for calls that are not about GPU memory (they are forwarded all the same).
//
// Adding an entry point: one line here, a call of it in tests/interposer/scenario.cpp (the
// recorder tests check every entry point of this table is reached), and the simulated device in
// tests/fakecuda/ if it lacks the function.
#define GMEMHOOK_FOR_EACH_API(X)                                                                   \
  /* runtime API */                                                                                \
  X(1, cudaMalloc, Runtime, Alloc, Device, (void** ptr, size_t size), (ptr, size),                 \
    e.set_address(ok ? (uintptr_t)*ptr : 0);                                                       \
    e.set_size(size);)                                                                             \
  X(2, cudaFree, Runtime, Free, Device, (void* ptr), (ptr), e.set_address((uintptr_t)ptr);)        \
  X(3, cudaMallocAsync, Runtime, Alloc, Device, (void** ptr, size_t size, cudaStream_t s),         \
    (ptr, size, s), e.set_address(ok ? (uintptr_t)*ptr : 0);                                       \
    e.set_size(size); e.set_stream((uintptr_t)s);)                                                 \
  X(4, cudaMallocAsync_ptsz, Runtime, Alloc, Device, (void** ptr, size_t size, cudaStream_t s),    \
    (ptr, size, s), e.set_address(ok ? (uintptr_t)*ptr : 0);                                       \
    e.set_size(size); e.set_stream((uintptr_t)s);)                                                 \
  X(5, cudaFreeAsync, Runtime, Free, Device, (void* ptr, cudaStream_t s), (ptr, s),                \
    e.set_address((uintptr_t)ptr);                                                                 \
    e.set_stream((uintptr_t)s);)                                                                   \
  X(6, cudaFreeAsync_ptsz, Runtime, Free, Device, (void* ptr, cudaStream_t s), (ptr, s),           \
    e.set_address((uintptr_t)ptr);                                                                 \
    e.set_stream((uintptr_t)s);)                                                                   \
  X(7, cudaMallocFromPoolAsync, Runtime, Alloc, Device,                                            \
    (void** ptr, size_t size, cudaMemPool_t pool, cudaStream_t s), (ptr, size, pool, s),           \
    e.set_address(ok ? (uintptr_t)*ptr : 0);                                                       \
    e.set_size(size); e.set_pool((uintptr_t)pool); e.set_stream((uintptr_t)s);)                    \
  X(8, cudaMallocFromPoolAsync_ptsz, Runtime, Alloc, Device,                                       \
    (void** ptr, size_t size, cudaMemPool_t pool, cudaStream_t s), (ptr, size, pool, s),           \
    e.set_address(ok ? (uintptr_t)*ptr : 0);                                                       \
    e.set_size(size); e.set_pool((uintptr_t)pool); e.set_stream((uintptr_t)s);)                    \
  X(9, cudaMallocManaged, Runtime, Alloc, Managed, (void** ptr, size_t size, unsigned flags),      \
    (ptr, size, flags), e.set_address(ok ? (uintptr_t)*ptr : 0);                                   \
    e.set_size(size);)                                                                             \
  X(10, cudaMallocPitch, Runtime, Alloc, Device,                                                   \
    (void** ptr, size_t* pitch, size_t width, size_t height), (ptr, pitch, width, height),         \
    e.set_address(ok ? (uintptr_t)*ptr : 0);                                                       \
    e.set_size(ok ? *pitch * height : width * height);)                                            \
  X(11, cudaMalloc3D, Runtime, Alloc, Device, (cudaPitchedPtr * pp, cudaExtent ext), (pp, ext),    \
    e.set_address(ok ? (uintptr_t)pp->ptr : 0);                                                    \
    e.set_size((ok ? pp->pitch : ext.width) * ext.height * (ext.depth ? ext.depth : 1));)          \
  X(12, cudaMallocHost, Runtime, Alloc, HostPinned, (void** ptr, size_t size), (ptr, size),        \
    e.set_address(ok ? (uintptr_t)*ptr : 0);                                                       \
    e.set_size(size);)                                                                             \
  X(13, cudaHostAlloc, Runtime, Alloc, HostPinned, (void** ptr, size_t size, unsigned flags),      \
    (ptr, size, flags), e.set_address(ok ? (uintptr_t)*ptr : 0);                                   \
    e.set_size(size);)                                                                             \
  X(14, cudaFreeHost, Runtime, Free, HostPinned, (void* ptr), (ptr),                               \
    e.set_address((uintptr_t)ptr);)                                                                \
  /* CUDA graphs: capture marks the allocations a graph owns; launches are replays */              \
  X(15, cudaStreamBeginCapture, Runtime, CaptureBegin, None,                                       \
    (cudaStream_t s, cudaStreamCaptureMode mode), (s, mode), e.set_stream((uintptr_t)s);)          \
  X(16, cudaStreamEndCapture, Runtime, CaptureEnd, None, (cudaStream_t s, cudaGraph_t * g),        \
    (s, g), e.set_stream((uintptr_t)s);                                                            \
    if (ok && g) e.set_graph((uintptr_t)*g);)                                                      \
  X(17, cudaGraphLaunch, Runtime, GraphLaunch, None, (cudaGraphExec_t exec, cudaStream_t s),       \
    (exec, s), e.set_handle((uintptr_t)exec);                                                      \
    e.set_stream((uintptr_t)s); if (ok) e.set_graph_pool(-1);)                                     \
  X(80, cudaStreamBeginCapture_ptsz, Runtime, CaptureBegin, None,                                  \
    (cudaStream_t s, cudaStreamCaptureMode mode), (s, mode), e.set_stream((uintptr_t)s);)          \
  X(81, cudaStreamEndCapture_ptsz, Runtime, CaptureEnd, None, (cudaStream_t s, cudaGraph_t * g),   \
    (s, g), e.set_stream((uintptr_t)s);                                                            \
    if (ok && g) e.set_graph((uintptr_t)*g);)                                                      \
  X(82, cudaGraphLaunch_ptsz, Runtime, GraphLaunch, None, (cudaGraphExec_t exec, cudaStream_t s),  \
    (exec, s), e.set_handle((uintptr_t)exec);                                                      \
    e.set_stream((uintptr_t)s); if (ok) e.set_graph_pool(-1);)                                     \
  /* an upload maps a graph's memory ahead of its first launch: the pool's figures after it */     \
  X(131, cudaGraphUpload, Runtime, GraphUpload, None, (cudaGraphExec_t exec, cudaStream_t s),      \
    (exec, s), e.set_handle((uintptr_t)exec);                                                      \
    e.set_stream((uintptr_t)s); if (ok) e.set_graph_pool(-1);)                                     \
  X(132, cudaGraphUpload_ptsz, Runtime, GraphUpload, None, (cudaGraphExec_t exec, cudaStream_t s), \
    (exec, s), e.set_handle((uintptr_t)exec);                                                      \
    e.set_stream((uintptr_t)s); if (ok) e.set_graph_pool(-1);)                                     \
  /* graph memory nodes: the address is fixed at the node, the memory comes with a launch */       \
  X(                                                                                               \
      18, cudaGraphAddMemAllocNode, Runtime, GraphAllocNode, Device,                               \
      (cudaGraphNode_t * node, cudaGraph_t g, const cudaGraphNode_t* deps, size_t ndeps,           \
       cudaMemAllocNodeParams* params),                                                            \
      (node, g, deps, ndeps, params), e.set_graph((uintptr_t)g);                                   \
      if (params) {                                                                                \
        e.set_address(ok ? (uintptr_t)params->dptr : 0);                                           \
        e.set_size(params->bytesize);                                                              \
        e.set_pool_location(params->poolProps.location);                                           \
      })                                                                                           \
  X(19, cudaGraphAddMemFreeNode, Runtime, GraphFreeNode, Device,                                   \
    (cudaGraphNode_t * node, cudaGraph_t g, const cudaGraphNode_t* deps, size_t ndeps, void* ptr), \
    (node, g, deps, ndeps, ptr), e.set_graph((uintptr_t)g);                                        \
    e.set_address((uintptr_t)ptr);)                                                                \
  X(20, cudaGraphInstantiate, Runtime, GraphInstantiate, None,                                     \
    (cudaGraphExec_t * exec, cudaGraph_t g, unsigned long long fl), (exec, g, fl),                 \
    if (ok && exec) e.set_handle((uintptr_t)*exec);                                                \
    e.set_graph((uintptr_t)g); e.set_flags(fl);)                                                   \
  X(21, cudaGraphInstantiateWithFlags, Runtime, GraphInstantiate, None,                            \
    (cudaGraphExec_t * exec, cudaGraph_t g, unsigned long long fl), (exec, g, fl),                 \
    if (ok && exec) e.set_handle((uintptr_t)*exec);                                                \
    e.set_graph((uintptr_t)g); e.set_flags(fl);)                                                   \
  X(22, cudaGraphInstantiateWithParams, Runtime, GraphInstantiate, None,                           \
    (cudaGraphExec_t * exec, cudaGraph_t g, cudaGraphInstantiateParams * params),                  \
    (exec, g, params), if (ok && exec) e.set_handle((uintptr_t)*exec);                             \
    e.set_graph((uintptr_t)g); if (params) e.set_flags(params->flags);                             \
    if (ok && params && (params->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD))                      \
        e.set_graph_pool(-1);)                                                                     \
  X(83, cudaGraphInstantiateWithParams_ptsz, Runtime, GraphInstantiate, None,                      \
    (cudaGraphExec_t * exec, cudaGraph_t g, cudaGraphInstantiateParams * params),                  \
    (exec, g, params), if (ok && exec) e.set_handle((uintptr_t)*exec);                             \
    e.set_graph((uintptr_t)g); if (params) e.set_flags(params->flags);                             \
    if (ok && params && (params->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD))                      \
        e.set_graph_pool(-1);)                                                                     \
  X(23, cudaGraphExecDestroy, Runtime, GraphExecDestroy, None, (cudaGraphExec_t exec), (exec),     \
    e.set_handle((uintptr_t)exec);)                                                                \
  X(24, cudaGraphDestroy, Runtime, GraphDestroy, None, (cudaGraph_t g), (g),                       \
    e.set_graph((uintptr_t)g);)                                                                    \
  X(25, cudaDeviceGraphMemTrim, Runtime, GraphMemTrim, None, (int device), (device),               \
    e.set_device(device);                                                                          \
    if (ok) e.set_graph_pool(device);)                                                             \
  /* graphs of graphs and the generic node API (CUDA 12.3+ signatures, as libcudart.so.13 has */   \
  /* them): a memory node, a child graph, a clone, a capture into an existing graph */             \
  X(121, cudaGraphAddNode, Runtime, GraphAllocNode, Device,                                        \
    (cudaGraphNode_t * node, cudaGraph_t g, const cudaGraphNode_t* deps,                           \
     const cudaGraphEdgeData* edges, size_t ndeps, cudaGraphNodeParams* params),                   \
    (node, g, deps, edges, ndeps, params), e.set_graph((uintptr_t)g);                              \
    record = e.set_graph_node(params, ok);)                                                        \
  X(122, cudaGraphAddChildGraphNode, Runtime, GraphChild, None,                                    \
    (cudaGraphNode_t * node, cudaGraph_t g, const cudaGraphNode_t* deps, size_t ndeps,             \
     cudaGraph_t child),                                                                           \
    (node, g, deps, ndeps, child), e.set_graph((uintptr_t)g);                                      \
    e.set_handle((uintptr_t)child);)                                                               \
  X(123, cudaGraphClone, Runtime, GraphClone, None, (cudaGraph_t * copy, cudaGraph_t original),    \
    (copy, original), if (ok && copy) e.set_handle((uintptr_t)*copy);                              \
    e.set_graph((uintptr_t)original);)                                                             \
  X(124, cudaStreamBeginCaptureToGraph, Runtime, CaptureBegin, None,                               \
    (cudaStream_t s, cudaGraph_t g, const cudaGraphNode_t* deps, const cudaGraphEdgeData* edges,   \
     size_t ndeps, cudaStreamCaptureMode mode),                                                    \
    (s, g, deps, edges, ndeps, mode), e.set_stream((uintptr_t)s);                                  \
    e.set_graph((uintptr_t)g);)                                                                    \
  X(125, cudaStreamBeginCaptureToGraph_ptsz, Runtime, CaptureBegin, None,                          \
    (cudaStream_t s, cudaGraph_t g, const cudaGraphNode_t* deps, const cudaGraphEdgeData* edges,   \
     size_t ndeps, cudaStreamCaptureMode mode),                                                    \
    (s, g, deps, edges, ndeps, mode), e.set_stream((uintptr_t)s);                                  \
    e.set_graph((uintptr_t)g);)                                                                    \
  /* memory of another process or pool, mapped here: never this process's allocation */            \
  X(                                                                                               \
      26, cudaIpcOpenMemHandle, Runtime, Import, Device,                                           \
      (void** ptr, cudaIpcMemHandle_t handle, unsigned fl), (ptr, handle, fl), if (ok) {           \
        e.set_address((uintptr_t)*ptr);                                                            \
        e.set_mapped_size();                                                                       \
      })                                                                                           \
  X(27, cudaIpcCloseMemHandle, Runtime, ImportClose, Device, (void* ptr), (ptr),                   \
    e.set_address((uintptr_t)ptr);)                                                                \
  X(                                                                                               \
      28, cudaMemPoolImportPointer, Runtime, Import, Device,                                       \
      (void** ptr, cudaMemPool_t pool, cudaMemPoolPtrExportData* data), (ptr, pool, data),         \
      e.set_pool((uintptr_t)pool);                                                                 \
      if (ok) {                                                                                    \
        e.set_address((uintptr_t)*ptr);                                                            \
        e.set_mapped_size();                                                                       \
      })                                                                                           \
  /* CUDA arrays: the address is the array handle; sizes are lower bounds (see array_size.h) */    \
  X(29, cudaMallocArray, Runtime, Alloc, Device,                                                   \
    (cudaArray_t * arr, const cudaChannelFormatDesc* desc, size_t w, size_t h, unsigned fl),       \
    (arr, desc, w, h, fl), e.set_address(ok ? (uintptr_t)*arr : 0);                                \
    e.set_size(gmemhook::array_bytes(desc, {w, h, 0}, 1));)                                        \
  X(30, cudaMalloc3DArray, Runtime, Alloc, Device,                                                 \
    (cudaArray_t * arr, const cudaChannelFormatDesc* desc, cudaExtent ext, unsigned fl),           \
    (arr, desc, ext, fl), e.set_address(ok ? (uintptr_t)*arr : 0);                                 \
    e.set_size(gmemhook::array_bytes(desc, ext, 1));)                                              \
  X(31, cudaMallocMipmappedArray, Runtime, Alloc, Device,                                          \
    (cudaMipmappedArray_t * arr, const cudaChannelFormatDesc* desc, cudaExtent ext,                \
     unsigned levels, unsigned fl),                                                                \
    (arr, desc, ext, levels, fl), e.set_address(ok ? (uintptr_t)*arr : 0);                         \
    e.set_size(gmemhook::array_bytes(desc, ext, levels));)                                         \
  X(84, cudaFreeArray, Runtime, Free, Device, (cudaArray_t arr), (arr),                            \
    e.set_address((uintptr_t)arr);)                                                                \
  X(85, cudaFreeMipmappedArray, Runtime, Free, Device, (cudaMipmappedArray_t arr), (arr),          \
    e.set_address((uintptr_t)arr);)                                                                \
  /* driver API */                                                                                 \
  X(32, cuMemAlloc_v2, Driver, Alloc, Device, (CUdeviceptr * ptr, size_t size), (ptr, size),       \
    e.set_address(ok ? *ptr : 0);                                                                  \
    e.set_size(size);)                                                                             \
  X(33, cuMemFree_v2, Driver, Free, Device, (CUdeviceptr ptr), (ptr), e.set_address(ptr);)         \
  X(34, cuMemAllocPitch_v2, Driver, Alloc, Device,                                                 \
    (CUdeviceptr * ptr, size_t * pitch, size_t width, size_t height, unsigned elem),               \
    (ptr, pitch, width, height, elem), e.set_address(ok ? *ptr : 0);                               \
    e.set_size(ok ? *pitch * height : width * height);)                                            \
  X(35, cuMemAllocManaged, Driver, Alloc, Managed, (CUdeviceptr * ptr, size_t size, unsigned fl),  \
    (ptr, size, fl), e.set_address(ok ? *ptr : 0);                                                 \
    e.set_size(size);)                                                                             \
  X(36, cuMemAllocAsync, Driver, Alloc, Device, (CUdeviceptr * ptr, size_t size, CUstream s),      \
    (ptr, size, s), e.set_address(ok ? *ptr : 0);                                                  \
    e.set_size(size); e.set_stream((uintptr_t)s);)                                                 \
  X(37, cuMemAllocAsync_ptsz, Driver, Alloc, Device, (CUdeviceptr * ptr, size_t size, CUstream s), \
    (ptr, size, s), e.set_address(ok ? *ptr : 0);                                                  \
    e.set_size(size); e.set_stream((uintptr_t)s);)                                                 \
  X(38, cuMemAllocFromPoolAsync, Driver, Alloc, Device,                                            \
    (CUdeviceptr * ptr, size_t size, CUmemoryPool pool, CUstream s), (ptr, size, pool, s),         \
    e.set_address(ok ? *ptr : 0);                                                                  \
    e.set_size(size); e.set_pool((uintptr_t)pool); e.set_stream((uintptr_t)s);)                    \
  X(39, cuMemAllocFromPoolAsync_ptsz, Driver, Alloc, Device,                                       \
    (CUdeviceptr * ptr, size_t size, CUmemoryPool pool, CUstream s), (ptr, size, pool, s),         \
    e.set_address(ok ? *ptr : 0);                                                                  \
    e.set_size(size); e.set_pool((uintptr_t)pool); e.set_stream((uintptr_t)s);)                    \
  X(40, cuMemFreeAsync, Driver, Free, Device, (CUdeviceptr ptr, CUstream s), (ptr, s),             \
    e.set_address(ptr);                                                                            \
    e.set_stream((uintptr_t)s);)                                                                   \
  X(41, cuMemFreeAsync_ptsz, Driver, Free, Device, (CUdeviceptr ptr, CUstream s), (ptr, s),        \
    e.set_address(ptr);                                                                            \
    e.set_stream((uintptr_t)s);)                                                                   \
  X(42, cuMemAllocHost_v2, Driver, Alloc, HostPinned, (void** ptr, size_t size), (ptr, size),      \
    e.set_address(ok ? (uintptr_t)*ptr : 0);                                                       \
    e.set_size(size);)                                                                             \
  X(43, cuMemHostAlloc, Driver, Alloc, HostPinned, (void** ptr, size_t size, unsigned fl),         \
    (ptr, size, fl), e.set_address(ok ? (uintptr_t)*ptr : 0);                                      \
    e.set_size(size);)                                                                             \
  X(44, cuMemFreeHost, Driver, Free, HostPinned, (void* ptr), (ptr),                               \
    e.set_address((uintptr_t)ptr);)                                                                \
  /* driver virtual memory management: physical handles, address ranges, mappings */               \
  X(48, cuMemCreate, Driver, Create, Device,                                                       \
    (CUmemGenericAllocationHandle * h, size_t size, const CUmemAllocationProp* prop,               \
     unsigned long long fl),                                                                       \
    (h, size, prop, fl), if (ok) e.set_handle(*h);                                                 \
    e.set_size(size); e.set_vmm_location(prop);)                                                   \
  X(49, cuMemRelease, Driver, Release, Device, (CUmemGenericAllocationHandle h), (h),              \
    e.set_handle(h);)                                                                              \
  X(50, cuMemAddressReserve, Driver, Reserve, None,                                                \
    (CUdeviceptr * ptr, size_t size, size_t align, CUdeviceptr addr, unsigned long long fl),       \
    (ptr, size, align, addr, fl), e.set_address(ok ? *ptr : 0);                                    \
    e.set_size(size);)                                                                             \
  X(51, cuMemAddressFree, Driver, AddressFree, None, (CUdeviceptr ptr, size_t size), (ptr, size),  \
    e.set_address(ptr);                                                                            \
    e.set_size(size);)                                                                             \
  X(52, cuMemMap, Driver, Map, Device,                                                             \
    (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle h,                  \
     unsigned long long fl),                                                                       \
    (ptr, size, offset, h, fl), e.set_address(ptr);                                                \
    e.set_size(size); e.set_offset(offset); e.set_handle(h);)                                      \
  X(53, cuMemUnmap, Driver, Unmap, Device, (CUdeviceptr ptr, size_t size), (ptr, size),            \
    e.set_address(ptr);                                                                            \
    e.set_size(size);)                                                                             \
  /* driver graphs: capture, memory nodes, instantiation, launch (as the runtime's above) */       \
  X(96, cuStreamBeginCapture_v2, Driver, CaptureBegin, None, (CUstream s, CUstreamCaptureMode m),  \
    (s, m), e.set_stream((uintptr_t)s);)                                                           \
  X(97, cuStreamBeginCapture_ptsz, Driver, CaptureBegin, None,                                     \
    (CUstream s, CUstreamCaptureMode m), (s, m), e.set_stream((uintptr_t)s);)                      \
  X(98, cuStreamEndCapture, Driver, CaptureEnd, None, (CUstream s, CUgraph * g), (s, g),           \
    e.set_stream((uintptr_t)s);                                                                    \
    if (ok && g) e.set_graph((uintptr_t)*g);)                                                      \
  X(99, cuStreamEndCapture_ptsz, Driver, CaptureEnd, None, (CUstream s, CUgraph * g), (s, g),      \
    e.set_stream((uintptr_t)s);                                                                    \
    if (ok && g) e.set_graph((uintptr_t)*g);)                                                      \
  X(                                                                                               \
      100, cuGraphAddMemAllocNode, Driver, GraphAllocNode, Device,                                 \
      (CUgraphNode * node, CUgraph g, const CUgraphNode* deps, size_t ndeps,                       \
       CUDA_MEM_ALLOC_NODE_PARAMS* params),                                                        \
      (node, g, deps, ndeps, params), e.set_graph((uintptr_t)g);                                   \
      if (params) {                                                                                \
        e.set_address(ok ? params->dptr : 0);                                                      \
        e.set_size(params->bytesize);                                                              \
        e.set_pool_location(params->poolProps.location);                                           \
      })                                                                                           \
  X(101, cuGraphAddMemFreeNode, Driver, GraphFreeNode, Device,                                     \
    (CUgraphNode * node, CUgraph g, const CUgraphNode* deps, size_t ndeps, CUdeviceptr ptr),       \
    (node, g, deps, ndeps, ptr), e.set_graph((uintptr_t)g);                                        \
    e.set_address(ptr);)                                                                           \
  X(102, cuGraphInstantiateWithFlags, Driver, GraphInstantiate, None,                              \
    (CUgraphExec * exec, CUgraph g, unsigned long long fl), (exec, g, fl),                         \
    if (ok && exec) e.set_handle((uintptr_t)*exec);                                                \
    e.set_graph((uintptr_t)g); e.set_flags(fl);)                                                   \
  X(103, cuGraphInstantiateWithParams, Driver, GraphInstantiate, None,                             \
    (CUgraphExec * exec, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS * params), (exec, g, params),    \
    if (ok && exec) e.set_handle((uintptr_t)*exec);                                                \
    e.set_graph((uintptr_t)g); if (params) e.set_flags(params->flags);                             \
    if (ok && params && (params->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD))                      \
        e.set_graph_pool(-1);)                                                                     \
  X(104, cuGraphInstantiateWithParams_ptsz, Driver, GraphInstantiate, None,                        \
    (CUgraphExec * exec, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS * params), (exec, g, params),    \
    if (ok && exec) e.set_handle((uintptr_t)*exec);                                                \
    e.set_graph((uintptr_t)g); if (params) e.set_flags(params->flags);                             \
    if (ok && params && (params->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD))                      \
        e.set_graph_pool(-1);)                                                                     \
  X(105, cuGraphLaunch, Driver, GraphLaunch, None, (CUgraphExec exec, CUstream s), (exec, s),      \
    e.set_handle((uintptr_t)exec);                                                                 \
    e.set_stream((uintptr_t)s); if (ok) e.set_graph_pool(-1);)                                     \
  X(106, cuGraphLaunch_ptsz, Driver, GraphLaunch, None, (CUgraphExec exec, CUstream s), (exec, s), \
    e.set_handle((uintptr_t)exec);                                                                 \
    e.set_stream((uintptr_t)s); if (ok) e.set_graph_pool(-1);)                                     \
  X(133, cuGraphUpload, Driver, GraphUpload, None, (CUgraphExec exec, CUstream s), (exec, s),      \
    e.set_handle((uintptr_t)exec);                                                                 \
    e.set_stream((uintptr_t)s); if (ok) e.set_graph_pool(-1);)                                     \
  X(134, cuGraphUpload_ptsz, Driver, GraphUpload, None, (CUgraphExec exec, CUstream s), (exec, s), \
    e.set_handle((uintptr_t)exec);                                                                 \
    e.set_stream((uintptr_t)s); if (ok) e.set_graph_pool(-1);)                                     \
  X(107, cuGraphExecDestroy, Driver, GraphExecDestroy, None, (CUgraphExec exec), (exec),           \
    e.set_handle((uintptr_t)exec);)                                                                \
  X(108, cuGraphDestroy, Driver, GraphDestroy, None, (CUgraph g), (g), e.set_graph((uintptr_t)g);) \
  X(109, cuDeviceGraphMemTrim, Driver, GraphMemTrim, None, (CUdevice device), (device),            \
    e.set_device(device);                                                                          \
    if (ok) e.set_graph_pool(device);)                                                             \
  /* driver: graphs of graphs, the generic node API (cuGraphAddNode_v2 is what cuda.h calls */     \
  /* cuGraphAddNode from 12.3 on; the 12.2 ABI without edge data is not wrapped), capture into */  \
  /* an existing graph */                                                                          \
  X(126, cuGraphAddNode_v2, Driver, GraphAllocNode, Device,                                        \
    (CUgraphNode * node, CUgraph g, const CUgraphNode* deps, const CUgraphEdgeData* edges,         \
     size_t ndeps, CUgraphNodeParams* params),                                                     \
    (node, g, deps, edges, ndeps, params), e.set_graph((uintptr_t)g);                              \
    record = e.set_graph_node(params, ok);)                                                        \
  X(127, cuGraphAddChildGraphNode, Driver, GraphChild, None,                                       \
    (CUgraphNode * node, CUgraph g, const CUgraphNode* deps, size_t ndeps, CUgraph child),         \
    (node, g, deps, ndeps, child), e.set_graph((uintptr_t)g);                                      \
    e.set_handle((uintptr_t)child);)                                                               \
  X(128, cuGraphClone, Driver, GraphClone, None, (CUgraph * copy, CUgraph original),               \
    (copy, original), if (ok && copy) e.set_handle((uintptr_t)*copy);                              \
    e.set_graph((uintptr_t)original);)                                                             \
  X(129, cuStreamBeginCaptureToGraph, Driver, CaptureBegin, None,                                  \
    (CUstream s, CUgraph g, const CUgraphNode* deps, const CUgraphEdgeData* edges, size_t ndeps,   \
     CUstreamCaptureMode mode),                                                                    \
    (s, g, deps, edges, ndeps, mode), e.set_stream((uintptr_t)s);                                  \
    e.set_graph((uintptr_t)g);)                                                                    \
  X(130, cuStreamBeginCaptureToGraph_ptsz, Driver, CaptureBegin, None,                             \
    (CUstream s, CUgraph g, const CUgraphNode* deps, const CUgraphEdgeData* edges, size_t ndeps,   \
     CUstreamCaptureMode mode),                                                                    \
    (s, g, deps, edges, ndeps, mode), e.set_stream((uintptr_t)s);                                  \
    e.set_graph((uintptr_t)g);)                                                                    \
  /* driver: imported and shared memory */                                                         \
  X(110, cuMemImportFromShareableHandle, Driver, Import, Device,                                   \
    (CUmemGenericAllocationHandle * h, void* os_handle, CUmemAllocationHandleType type),           \
    (h, os_handle, type), if (ok) e.set_handle(*h);)                                               \
  X(111, cuMemRetainAllocationHandle, Driver, Retain, Device,                                      \
    (CUmemGenericAllocationHandle * h, void* addr), (h, addr), if (ok) e.set_handle(*h);           \
    e.set_address((uintptr_t)addr);)                                                               \
  X(112, cuMemExportToShareableHandle, Driver, Export, None,                                       \
    (void* shareable, CUmemGenericAllocationHandle h, CUmemAllocationHandleType type,              \
     unsigned long long fl),                                                                       \
    (shareable, h, type, fl), e.set_handle(h);)                                                    \
  X(                                                                                               \
      113, cuIpcOpenMemHandle_v2, Driver, Import, Device,                                          \
      (CUdeviceptr * ptr, CUipcMemHandle handle, unsigned fl), (ptr, handle, fl), if (ok) {        \
        e.set_address(*ptr);                                                                       \
        e.set_mapped_size();                                                                       \
      })                                                                                           \
  X(114, cuIpcCloseMemHandle, Driver, ImportClose, Device, (CUdeviceptr ptr), (ptr),               \
    e.set_address(ptr);)                                                                           \
  X(                                                                                               \
      115, cuMemPoolImportPointer, Driver, Import, Device,                                         \
      (CUdeviceptr * ptr, CUmemoryPool pool, CUmemPoolPtrExportData * data), (ptr, pool, data),    \
      e.set_pool((uintptr_t)pool);                                                                 \
      if (ok) {                                                                                    \
        e.set_address(*ptr);                                                                       \
        e.set_mapped_size();                                                                       \
      })                                                                                           \
  /* driver: CUDA arrays (the address is the array handle; sizes are lower bounds) */              \
  X(116, cuArrayCreate_v2, Driver, Alloc, Device,                                                  \
    (CUarray * arr, const CUDA_ARRAY_DESCRIPTOR* desc), (arr, desc),                               \
    e.set_address(ok ? (uintptr_t)*arr : 0);                                                       \
    e.set_size(gmemhook::array_bytes(desc));)                                                      \
  X(117, cuArray3DCreate_v2, Driver, Alloc, Device,                                                \
    (CUarray * arr, const CUDA_ARRAY3D_DESCRIPTOR* desc), (arr, desc),                             \
    e.set_address(ok ? (uintptr_t)*arr : 0);                                                       \
    e.set_size(gmemhook::array_bytes(desc, 1));)                                                   \
  X(118, cuMipmappedArrayCreate, Driver, Alloc, Device,                                            \
    (CUmipmappedArray * arr, const CUDA_ARRAY3D_DESCRIPTOR* desc, unsigned levels),                \
    (arr, desc, levels), e.set_address(ok ? (uintptr_t)*arr : 0);                                  \
    e.set_size(gmemhook::array_bytes(desc, levels));)                                              \
  X(119, cuArrayDestroy, Driver, Free, Device, (CUarray arr), (arr),                               \
    e.set_address((uintptr_t)arr);)                                                                \
  X(120, cuMipmappedArrayDestroy, Driver, Free, Device, (CUmipmappedArray arr), (arr),             \
    e.set_address((uintptr_t)arr);)                                                                \
  /* PyTorch's caching allocator: c10::reportMemoryUsageToProfiler(void* ptr, int64_t alloc_size,  \
     size_t total_allocated, size_t total_reserved, c10::Device), called by libc10_cuda.so for     \
     every block it hands out (size > 0) or takes back (size < 0), whatever                        \
     PYTORCH_CUDA_ALLOC_CONF says. Device type 1 is CUDA; CPU allocations report here too. */      \
  X(64, _ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE, Allocator, BlockAlloc, Device,      \
    (void* ptr, int64_t size, size_t allocated, size_t reserved, C10Device device),                \
    (ptr, size, allocated, reserved, device), record = device.type == kC10DeviceCuda;              \
    e.set_address((uintptr_t)ptr); e.set_size(size < 0 ? 0 - (uint64_t)size : (uint64_t)size);     \
    if (size < 0) e.set_free(); e.set_device(device.index); e.set_totals(allocated, reserved);)

namespace gmemhook::format {

enum class ApiId : uint8_t {
#define GMEMHOOK_API_ENUM(ID, NAME, ...) NAME = ID,
  GMEMHOOK_FOR_EACH_API(GMEMHOOK_API_ENUM)
#undef GMEMHOOK_API_ENUM
};

struct ApiInfo {
  ApiId id;
  const char* name;
  Layer layer;
  EventKind kind;
  MemoryType memory;
};

inline constexpr ApiInfo kApis[] = {
#define GMEMHOOK_API_INFO(ID, NAME, LAYER, KIND, MEMORY, ...) \
  {ApiId::NAME, #NAME, Layer::LAYER, EventKind::KIND, MemoryType::MEMORY},
    GMEMHOOK_FOR_EACH_API(GMEMHOOK_API_INFO)
#undef GMEMHOOK_API_INFO
};

// The table entry for a raw api byte from a log, or nullptr for an id this build doesn't know.
inline const ApiInfo* find_api(uint8_t id) {
  for (const ApiInfo& a : kApis)
    if (static_cast<uint8_t>(a.id) == id) return &a;
  return nullptr;
}

// Entry points whose recorded size is computed from a descriptor and is a lower bound of what
// the driver really took (CUDA arrays: the driver pads rows and aligns them to its own layout).
inline constexpr ApiId kLowerBoundSizeApis[] = {
    ApiId::cudaMallocArray, ApiId::cudaMalloc3DArray, ApiId::cudaMallocMipmappedArray,
    ApiId::cuArrayCreate_v2, ApiId::cuArray3DCreate_v2, ApiId::cuMipmappedArrayCreate};
inline bool size_is_lower_bound(uint8_t id) {
  for (ApiId a : kLowerBoundSizeApis)
    if (static_cast<uint8_t>(a) == id) return true;
  return false;
}

}  // namespace gmemhook::format

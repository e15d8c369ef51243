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
    e.set_address(ok ? (uintptr_t)*ptr : 0); e.set_size(size);)                                    \
  X(2, cudaFree, Runtime, Free, Device, (void* ptr), (ptr), e.set_address((uintptr_t)ptr);)        \
  X(3, cudaMallocAsync, Runtime, Alloc, Device, (void** ptr, size_t size, cudaStream_t s),         \
    (ptr, size, s), e.set_address(ok ? (uintptr_t)*ptr : 0); e.set_size(size);                     \
    e.set_stream((uintptr_t)s);)                                                                   \
  X(4, cudaMallocAsync_ptsz, Runtime, Alloc, Device, (void** ptr, size_t size, cudaStream_t s),    \
    (ptr, size, s), e.set_address(ok ? (uintptr_t)*ptr : 0); e.set_size(size);                     \
    e.set_stream((uintptr_t)s);)                                                                   \
  X(5, cudaFreeAsync, Runtime, Free, Device, (void* ptr, cudaStream_t s), (ptr, s),                \
    e.set_address((uintptr_t)ptr); e.set_stream((uintptr_t)s);)                                    \
  X(6, cudaFreeAsync_ptsz, Runtime, Free, Device, (void* ptr, cudaStream_t s), (ptr, s),           \
    e.set_address((uintptr_t)ptr); e.set_stream((uintptr_t)s);)                                    \
  X(7, cudaMallocFromPoolAsync, Runtime, Alloc, Device,                                            \
    (void** ptr, size_t size, cudaMemPool_t pool, cudaStream_t s), (ptr, size, pool, s),           \
    e.set_address(ok ? (uintptr_t)*ptr : 0); e.set_size(size); e.set_pool((uintptr_t)pool);       \
    e.set_stream((uintptr_t)s);)                                                                   \
  X(8, cudaMallocFromPoolAsync_ptsz, Runtime, Alloc, Device,                                       \
    (void** ptr, size_t size, cudaMemPool_t pool, cudaStream_t s), (ptr, size, pool, s),           \
    e.set_address(ok ? (uintptr_t)*ptr : 0); e.set_size(size); e.set_pool((uintptr_t)pool);       \
    e.set_stream((uintptr_t)s);)                                                                   \
  X(9, cudaMallocManaged, Runtime, Alloc, Managed, (void** ptr, size_t size, unsigned flags),      \
    (ptr, size, flags), e.set_address(ok ? (uintptr_t)*ptr : 0); e.set_size(size);)                \
  X(10, cudaMallocPitch, Runtime, Alloc, Device,                                                   \
    (void** ptr, size_t* pitch, size_t width, size_t height), (ptr, pitch, width, height),         \
    e.set_address(ok ? (uintptr_t)*ptr : 0);                                                       \
    e.set_size(ok ? *pitch * height : width * height);)                                            \
  X(11, cudaMalloc3D, Runtime, Alloc, Device, (cudaPitchedPtr * pp, cudaExtent ext), (pp, ext),    \
    e.set_address(ok ? (uintptr_t)pp->ptr : 0);                                                    \
    e.set_size((ok ? pp->pitch : ext.width) * ext.height * (ext.depth ? ext.depth : 1));)          \
  X(12, cudaMallocHost, Runtime, Alloc, HostPinned, (void** ptr, size_t size), (ptr, size),        \
    e.set_address(ok ? (uintptr_t)*ptr : 0); e.set_size(size);)                                    \
  X(13, cudaHostAlloc, Runtime, Alloc, HostPinned, (void** ptr, size_t size, unsigned flags),      \
    (ptr, size, flags), e.set_address(ok ? (uintptr_t)*ptr : 0); e.set_size(size);)                \
  X(14, cudaFreeHost, Runtime, Free, HostPinned, (void* ptr), (ptr),                               \
    e.set_address((uintptr_t)ptr);)                                                                \
  /* CUDA graphs: capture marks the allocations a graph owns; launches are replays */              \
  X(15, cudaStreamBeginCapture, Runtime, CaptureBegin, None,                                       \
    (cudaStream_t s, cudaStreamCaptureMode mode), (s, mode), e.set_stream((uintptr_t)s);)          \
  X(16, cudaStreamEndCapture, Runtime, CaptureEnd, None, (cudaStream_t s, cudaGraph_t* g), (s, g),  \
    e.set_stream((uintptr_t)s); if (ok && g) e.set_handle((uintptr_t)*g);)                         \
  X(17, cudaGraphLaunch, Runtime, GraphLaunch, None, (cudaGraphExec_t exec, cudaStream_t s),       \
    (exec, s), e.set_handle((uintptr_t)exec); e.set_stream((uintptr_t)s);)                         \
  /* driver API */                                                                                 \
  X(32, cuMemAlloc_v2, Driver, Alloc, Device, (CUdeviceptr * ptr, size_t size), (ptr, size),       \
    e.set_address(ok ? *ptr : 0); e.set_size(size);)                                               \
  X(33, cuMemFree_v2, Driver, Free, Device, (CUdeviceptr ptr), (ptr), e.set_address(ptr);)         \
  X(34, cuMemAllocPitch_v2, Driver, Alloc, Device,                                                 \
    (CUdeviceptr * ptr, size_t * pitch, size_t width, size_t height, unsigned elem),               \
    (ptr, pitch, width, height, elem), e.set_address(ok ? *ptr : 0);                               \
    e.set_size(ok ? *pitch * height : width * height);)                                            \
  X(35, cuMemAllocManaged, Driver, Alloc, Managed, (CUdeviceptr * ptr, size_t size, unsigned fl),  \
    (ptr, size, fl), e.set_address(ok ? *ptr : 0); e.set_size(size);)                              \
  X(36, cuMemAllocAsync, Driver, Alloc, Device, (CUdeviceptr * ptr, size_t size, CUstream s),      \
    (ptr, size, s), e.set_address(ok ? *ptr : 0); e.set_size(size); e.set_stream((uintptr_t)s);)   \
  X(37, cuMemAllocAsync_ptsz, Driver, Alloc, Device, (CUdeviceptr * ptr, size_t size, CUstream s), \
    (ptr, size, s), e.set_address(ok ? *ptr : 0); e.set_size(size); e.set_stream((uintptr_t)s);)   \
  X(38, cuMemAllocFromPoolAsync, Driver, Alloc, Device,                                            \
    (CUdeviceptr * ptr, size_t size, CUmemoryPool pool, CUstream s), (ptr, size, pool, s),         \
    e.set_address(ok ? *ptr : 0); e.set_size(size); e.set_pool((uintptr_t)pool);                  \
    e.set_stream((uintptr_t)s);)                                                                   \
  X(39, cuMemAllocFromPoolAsync_ptsz, Driver, Alloc, Device,                                       \
    (CUdeviceptr * ptr, size_t size, CUmemoryPool pool, CUstream s), (ptr, size, pool, s),         \
    e.set_address(ok ? *ptr : 0); e.set_size(size); e.set_pool((uintptr_t)pool);                  \
    e.set_stream((uintptr_t)s);)                                                                   \
  X(40, cuMemFreeAsync, Driver, Free, Device, (CUdeviceptr ptr, CUstream s), (ptr, s),             \
    e.set_address(ptr); e.set_stream((uintptr_t)s);)                                               \
  X(41, cuMemFreeAsync_ptsz, Driver, Free, Device, (CUdeviceptr ptr, CUstream s), (ptr, s),        \
    e.set_address(ptr); e.set_stream((uintptr_t)s);)                                               \
  X(42, cuMemAllocHost_v2, Driver, Alloc, HostPinned, (void** ptr, size_t size), (ptr, size),      \
    e.set_address(ok ? (uintptr_t)*ptr : 0); e.set_size(size);)                                    \
  X(43, cuMemHostAlloc, Driver, Alloc, HostPinned, (void** ptr, size_t size, unsigned fl),         \
    (ptr, size, fl), e.set_address(ok ? (uintptr_t)*ptr : 0); e.set_size(size);)                  \
  X(44, cuMemFreeHost, Driver, Free, HostPinned, (void* ptr), (ptr),                               \
    e.set_address((uintptr_t)ptr);)                                                                \
  /* driver virtual memory management: physical handles, address ranges, mappings */              \
  X(48, cuMemCreate, Driver, Create, Device,                                                       \
    (CUmemGenericAllocationHandle * h, size_t size, const CUmemAllocationProp* prop,               \
     unsigned long long fl),                                                                       \
    (h, size, prop, fl), if (ok) e.set_handle(*h); e.set_size(size);                               \
    e.set_vmm_location(prop);)                                                                     \
  X(49, cuMemRelease, Driver, Release, Device, (CUmemGenericAllocationHandle h), (h),              \
    e.set_handle(h);)                                                                              \
  X(50, cuMemAddressReserve, Driver, Reserve, None,                                                \
    (CUdeviceptr * ptr, size_t size, size_t align, CUdeviceptr addr, unsigned long long fl),       \
    (ptr, size, align, addr, fl), e.set_address(ok ? *ptr : 0); e.set_size(size);)                 \
  X(51, cuMemAddressFree, Driver, AddressFree, None, (CUdeviceptr ptr, size_t size), (ptr, size),  \
    e.set_address(ptr); e.set_size(size);)                                                         \
  X(52, cuMemMap, Driver, Map, Device,                                                             \
    (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle h,                  \
     unsigned long long fl),                                                                       \
    (ptr, size, offset, h, fl), e.set_address(ptr); e.set_size(size); e.set_offset(offset);        \
    e.set_handle(h);)                                                                              \
  X(53, cuMemUnmap, Driver, Unmap, Device, (CUdeviceptr ptr, size_t size), (ptr, size),            \
    e.set_address(ptr); e.set_size(size);)                                                         \
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

}  // namespace gmemhook::format

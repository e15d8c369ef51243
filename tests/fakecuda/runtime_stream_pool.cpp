// Runtime streams, memory pools and stream-ordered allocation, forwarded to the driver.
#include <cstring>

#include "runtime_state.h"

using namespace fakecudart;

namespace {

// Members rather than function pointers: the driver table is only filled once ensure_context ran.
using AllocAsyncFn = decltype(&::cuMemAllocAsync) DriverApi::*;
using AllocFromPoolFn = decltype(&::cuMemAllocFromPoolAsync) DriverApi::*;
using FreeAsyncFn = decltype(&::cuMemFreeAsync) DriverApi::*;

cudaError_t malloc_async(AllocAsyncFn fn, void** devPtr, size_t size, cudaStream_t stream) {
  if (!devPtr) return record(cudaErrorInvalidValue);
  *devPtr = nullptr;
  if (cudaError_t e = ensure_context()) return record(e);
  CUdeviceptr p = 0;
  CUresult r = (driver().*fn)(&p, size, stream);
  *devPtr = reinterpret_cast<void*>(p);
  return record(r);
}

cudaError_t malloc_from_pool(AllocFromPoolFn fn, void** ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream) {
  if (!ptr) return record(cudaErrorInvalidValue);
  *ptr = nullptr;
  if (cudaError_t e = ensure_context()) return record(e);
  CUdeviceptr p = 0;
  CUresult r = (driver().*fn)(&p, size, pool, stream);
  *ptr = reinterpret_cast<void*>(p);
  return record(r);
}

cudaError_t free_async(FreeAsyncFn fn, void* devPtr, cudaStream_t stream) {
  if (cudaError_t e = ensure_context()) return record(e);
  return record((driver().*fn)(reinterpret_cast<CUdeviceptr>(devPtr), stream));
}

}  // namespace

FAKECUDA_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  if (cudaError_t e = ensure_context()) return record(e);
  return record(driver().cuStreamCreate(pStream, flags));  // cudaStreamNonBlocking == CU_STREAM_NON_BLOCKING
}

FAKECUDA_API cudaError_t cudaStreamCreate(cudaStream_t* pStream) {
  return cudaStreamCreateWithFlags(pStream, cudaStreamDefault);
}

FAKECUDA_API cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (cudaError_t e = ensure_context()) return record(e);
  return record(driver().cuStreamDestroy_v2(stream));
}

FAKECUDA_API cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (cudaError_t e = ensure_context()) return record(e);
  return record(driver().cuStreamSynchronize(stream));
}

FAKECUDA_API cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
  return malloc_async(&DriverApi::cuMemAllocAsync, devPtr, size, hStream);
}

FAKECUDA_API cudaError_t cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t hStream) {
  return malloc_async(&DriverApi::cuMemAllocAsync_ptsz, devPtr, size, hStream);
}

FAKECUDA_API cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool,
                                                 cudaStream_t stream) {
  return malloc_from_pool(&DriverApi::cuMemAllocFromPoolAsync, ptr, size, memPool, stream);
}

FAKECUDA_API cudaError_t cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size, cudaMemPool_t memPool,
                                                      cudaStream_t stream) {
  return malloc_from_pool(&DriverApi::cuMemAllocFromPoolAsync_ptsz, ptr, size, memPool, stream);
}

FAKECUDA_API cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
  return free_async(&DriverApi::cuMemFreeAsync, devPtr, hStream);
}

FAKECUDA_API cudaError_t cudaFreeAsync_ptsz(void* devPtr, cudaStream_t hStream) {
  return free_async(&DriverApi::cuMemFreeAsync_ptsz, devPtr, hStream);
}

FAKECUDA_API cudaError_t cudaMemPoolCreate(cudaMemPool_t* memPool, const cudaMemPoolProps* poolProps) {
  if (cudaError_t e = load_driver()) return record(e);
  if (!memPool || !poolProps) return record(cudaErrorInvalidValue);
  CUmemPoolProps props;
  std::memset(&props, 0, sizeof(props));
  props.allocType = static_cast<CUmemAllocationType>(poolProps->allocType);
  props.handleTypes = static_cast<CUmemAllocationHandleType>(poolProps->handleTypes);
  props.location.type = static_cast<CUmemLocationType>(poolProps->location.type);
  props.location.id = poolProps->location.id;
  props.win32SecurityAttributes = poolProps->win32SecurityAttributes;
  props.maxSize = poolProps->maxSize;
  props.usage = poolProps->usage;
  return record(driver().cuMemPoolCreate(memPool, &props));
}

FAKECUDA_API cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool) {
  if (cudaError_t e = load_driver()) return record(e);
  return record(driver().cuMemPoolDestroy(memPool));
}

FAKECUDA_API cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep) {
  if (cudaError_t e = load_driver()) return record(e);
  return record(driver().cuMemPoolTrimTo(memPool, minBytesToKeep));
}

FAKECUDA_API cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device) {
  if (cudaError_t e = load_driver()) return record(e);
  return record(driver().cuDeviceGetDefaultMemPool(memPool, device));
}

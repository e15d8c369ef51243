// Runtime device management: selecting devices, versions, properties, synchronize and reset.
#include <cstring>

#include "runtime_state.h"

using namespace fakecudart;

namespace {

int attribute(CUdevice_attribute attr, int device) {
  int value = 0;
  driver().cuDeviceGetAttribute(&value, attr, device);
  return value;
}

cudaError_t check_device(int device) {
  if (cudaError_t e = load_driver()) return e;
  int count = 0;
  driver().cuDeviceGetCount(&count);
  return device >= 0 && device < count ? cudaSuccess : cudaErrorInvalidDevice;
}

}  // namespace

FAKECUDA_API cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return record(cudaErrorInvalidValue);
  *count = 0;
  if (cudaError_t e = load_driver()) return record(e);
  return record(driver().cuDeviceGetCount(count));
}

// Like CUDA 12+, selecting a device also makes its primary context current right away.
FAKECUDA_API cudaError_t cudaSetDevice(int device) {
  if (cudaError_t e = check_device(device)) return record(e);
  thread_device() = device;
  return record(bind_primary_context(device));
}

FAKECUDA_API cudaError_t cudaGetDevice(int* device) {
  if (!device) return record(cudaErrorInvalidValue);
  return record(current_device(device));
}

FAKECUDA_API cudaError_t cudaDeviceSynchronize(void) {
  if (cudaError_t e = ensure_context()) return record(e);
  return record(driver().cuCtxSynchronize());
}

// Destroys what the device's primary context owns (cudaMalloc/cudaMallocHost/managed memory);
// pools and VMM allocations are not context-owned and survive.
FAKECUDA_API cudaError_t cudaDeviceReset(void) {
  int device = 0;
  if (cudaError_t e = current_device(&device)) return record(e);
  return record(driver().cuDevicePrimaryCtxReset_v2(device));
}

FAKECUDA_API cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
  if (!runtimeVersion) return record(cudaErrorInvalidValue);
  *runtimeVersion = CUDART_VERSION;
  return cudaSuccess;
}

// Reports 0 when no driver can be loaded, as CUDA does.
FAKECUDA_API cudaError_t cudaDriverGetVersion(int* driverVersion) {
  if (!driverVersion) return record(cudaErrorInvalidValue);
  *driverVersion = 0;
  cudaError_t e = load_driver();
  if (e == cudaErrorInsufficientDriver) return cudaSuccess;
  if (!driver().cuDriverGetVersion) return record(e);
  return record(driver().cuDriverGetVersion(driverVersion));
}

FAKECUDA_API cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (!value) return record(cudaErrorInvalidValue);
  if (cudaError_t e = check_device(device)) return record(e);
  // cudaDeviceAttr and CUdevice_attribute share their numbering.
  return record(driver().cuDeviceGetAttribute(value, static_cast<CUdevice_attribute>(attr), device));
}

FAKECUDA_API cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (!prop) return record(cudaErrorInvalidValue);
  if (cudaError_t e = check_device(device)) return record(e);
  std::memset(prop, 0, sizeof(*prop));
  driver().cuDeviceGetName(prop->name, sizeof(prop->name), device);
  driver().cuDeviceTotalMem_v2(&prop->totalGlobalMem, device);
  prop->sharedMemPerBlock = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, device);
  prop->regsPerBlock = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, device);
  prop->warpSize = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE, device);
  prop->memPitch = attribute(CU_DEVICE_ATTRIBUTE_MAX_PITCH, device);
  prop->maxThreadsPerBlock = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, device);
  prop->maxThreadsDim[0] = attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, device);
  prop->maxThreadsDim[1] = attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, device);
  prop->maxThreadsDim[2] = attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, device);
  prop->maxGridSize[0] = attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, device);
  prop->maxGridSize[1] = attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, device);
  prop->maxGridSize[2] = attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, device);
  prop->totalConstMem = attribute(CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, device);
  prop->major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  prop->minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  prop->textureAlignment = attribute(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, device);
  prop->texturePitchAlignment = attribute(CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, device);
  prop->multiProcessorCount = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
  prop->canMapHostMemory = attribute(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, device);
  prop->concurrentKernels = attribute(CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, device);
  prop->pciBusID = attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, device);
  prop->asyncEngineCount = attribute(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, device);
  prop->unifiedAddressing = attribute(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, device);
  prop->memoryBusWidth = attribute(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, device);
  prop->l2CacheSize = attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device);
  prop->maxThreadsPerMultiProcessor = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, device);
  prop->streamPrioritiesSupported = attribute(CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED, device);
  prop->sharedMemPerMultiprocessor = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, device);
  prop->regsPerMultiprocessor = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, device);
  prop->managedMemory = attribute(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, device);
  prop->concurrentManagedAccess = attribute(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, device);
  prop->sharedMemPerBlockOptin = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device);
  prop->maxBlocksPerMultiProcessor = attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, device);
  prop->memoryPoolsSupported = attribute(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, device);
  prop->memoryPoolSupportedHandleTypes = attribute(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, device);
  prop->deviceNumaId = attribute(CU_DEVICE_ATTRIBUTE_NUMA_ID, device);
  prop->hostNumaId = attribute(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, device);
  return cudaSuccess;
}

// Driver initialization, version and device queries, and the test-only accounting probes.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "cuda_decls.h"
#include "device_state.h"

using namespace fakecuda;

namespace {

// Shaped like an H100-class part so code that sizes launches from attributes gets sane numbers.
int attribute_value(CUdevice_attribute attrib, int device) {
  switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 48 * 1024;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 64 * 1024;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1755000;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: return 512;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return 132;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return device + 1;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 2619000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 5120;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 50 * 1024 * 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 3;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: return 32;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return 0;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return 228 * 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return 227 * 1024;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: return 32;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES: return CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    case CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_NUMA_ID: return -1;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: return -1;
    default: return 0;  // a feature this simulated device does not have
  }
}

CUresult device_ready(CUdevice dev) {
  if (CUresult r = require_init()) return r;
  return valid_device(dev) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

}  // namespace

FAKECUDA_API CUresult cuInit(unsigned int Flags) {
  static CUresult result = CUDA_ERROR_NOT_INITIALIZED;
  static std::once_flag once;
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::call_once(once, [] {
    result = configure_devices();
    if (result == CUDA_SUCCESS) state().initialized.store(true, std::memory_order_release);
  });
  return result;
}

FAKECUDA_API CUresult cuDriverGetVersion(int* driverVersion) {
  if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = kDriverVersion;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceGetCount(int* count) {
  if (CUresult r = require_init()) return r;
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = static_cast<int>(state().devices.size());
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (CUresult r = require_init()) return r;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (CUresult r = device_ready(dev)) return r;
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, static_cast<size_t>(len), "fakecuda simulated GPU %d", dev);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  if (CUresult r = device_ready(dev)) return r;
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  *bytes = state().devices[dev].capacity;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  if (CUresult r = device_ready(dev)) return r;
  if (!pi || attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
  *pi = attribute_value(attrib, dev);
  return CUDA_SUCCESS;
}

// The PCI bus id a real GPU would report: bus 0x10 + its physical index. CUDA_VISIBLE_DEVICES, when
// it lists indices, renumbers ordinals as the real driver does, so that tests can check that NVML
// devices are matched by bus id rather than by ordinal (the fake NVML reads the same variable).
FAKECUDA_API CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  if (CUresult r = device_ready(dev)) return r;
  if (!pciBusId || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  int physical = dev;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) {
    for (int i = 0; *v && i <= dev; ++i) {
      char* end = nullptr;
      long n = std::strtol(v, &end, 10);
      if (end == v) break;
      if (i == dev) physical = static_cast<int>(n);
      v = *end == ',' ? end + 1 : end;
    }
  }
  std::snprintf(pciBusId, static_cast<size_t>(len), "00000000:%02X:00.0", 0x10 + physical);
  return CUDA_SUCCESS;
}

// Test probe: whether any context of this process is alive on `device` (what puts a process on
// the real NVML's compute-process list).
FAKECUDA_API int fakecuda_context_alive(int device) {
  if (require_init() != CUDA_SUCCESS) return 0;
  State& s = state();
  std::lock_guard lock(s.mu);
  for (CUctx_st* ctx : s.contexts)
    if (ctx->device == device && ctx->alive.load()) return 1;
  return 0;
}

FAKECUDA_API size_t fakecuda_live_bytes(int device) {
  if (require_init() != CUDA_SUCCESS) return 0;
  State& s = state();
  std::lock_guard lock(s.mu);
  return valid_device(device) ? s.devices[device].used : 0;
}

FAKECUDA_API size_t fakecuda_pinned_host_bytes(void) {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.pinned_host_bytes;
}

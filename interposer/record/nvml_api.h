// The few NVML declarations the sampler uses, written from NVML's public ABI (nvml.h is not part
// of the CUDA toolkit headers we build against). libnvidia-ml.so.1 is only ever dlopen'ed.
#pragma once

#include <cstdint>

namespace gmemhook::nvml {

using Return = int;  // nvmlReturn_t
inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorInsufficientSize = 7;  // NVML_ERROR_INSUFFICIENT_SIZE
using Device = struct nvmlDevice_st*;

// nvmlMemory_t (version 1): bytes.
struct Memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

// nvmlProcessInfo_v2_t, what nvmlDeviceGetComputeRunningProcesses_v3 fills.
struct ProcessInfo {
  unsigned int pid;
  unsigned long long used_gpu_memory;  // kValueNotAvailable where the driver cannot say
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
static_assert(sizeof(ProcessInfo) == 24);
inline constexpr unsigned long long kValueNotAvailable = ~0ull;  // NVML_VALUE_NOT_AVAILABLE
inline constexpr unsigned int kMigEnabled = 1;                   // NVML_DEVICE_MIG_ENABLE

using InitFn = Return (*)();
using GetHandleByStringFn = Return (*)(const char*, Device*);  // by PCI bus id or by UUID
using GetMemoryInfoFn = Return (*)(Device, Memory*);
using GetProcessesFn = Return (*)(Device, unsigned int*, ProcessInfo*);
using GetMigModeFn = Return (*)(Device, unsigned int*, unsigned int*);

}  // namespace gmemhook::nvml

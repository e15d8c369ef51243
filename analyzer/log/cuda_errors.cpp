// The error numbers of cudaError_t and CUresult that allocation entry points return (see
// cuda_errors.h); the two enums share most numbers but not their names.
#include "analyzer/log/cuda_errors.h"

#include "gmemhook/api_table.h"

namespace gmemhook::analysis {

namespace {

struct ErrorName {
  uint32_t number;
  const char* runtime;  // cudaError_t
  const char* driver;   // CUresult
};

constexpr ErrorName kErrors[] = {
    {1, "cudaErrorInvalidValue", "CUDA_ERROR_INVALID_VALUE"},
    {2, "cudaErrorMemoryAllocation", "CUDA_ERROR_OUT_OF_MEMORY"},
    {3, "cudaErrorInitializationError", "CUDA_ERROR_NOT_INITIALIZED"},
    {4, "cudaErrorCudartUnloading", "CUDA_ERROR_DEINITIALIZED"},
    {35, "cudaErrorInsufficientDriver", nullptr},
    {46, "cudaErrorDevicesUnavailable", nullptr},
    {100, "cudaErrorNoDevice", "CUDA_ERROR_NO_DEVICE"},
    {101, "cudaErrorInvalidDevice", "CUDA_ERROR_INVALID_DEVICE"},
    {201, "cudaErrorDeviceUninitialized", "CUDA_ERROR_INVALID_CONTEXT"},
    {400, "cudaErrorInvalidResourceHandle", "CUDA_ERROR_INVALID_HANDLE"},
    {700, "cudaErrorIllegalAddress", "CUDA_ERROR_ILLEGAL_ADDRESS"},
    {801, "cudaErrorNotSupported", "CUDA_ERROR_NOT_SUPPORTED"},
    {999, "cudaErrorUnknown", "CUDA_ERROR_UNKNOWN"},
};

}  // namespace

std::string cuda_error_text(uint8_t api, uint32_t result) {
  const format::ApiInfo* a = format::find_api(api);
  const bool driver = a && a->layer == format::Layer::Driver;
  for (const ErrorName& e : kErrors) {
    const char* name = driver ? e.driver : e.runtime;
    // Allocator-layer entries (PyTorch's) return nothing; the runtime's names are the closest.
    if (e.number == result && name && a)
      return std::string(name) + " (" + std::to_string(result) + ")";
  }
  return "error " + std::to_string(result);
}

}  // namespace gmemhook::analysis

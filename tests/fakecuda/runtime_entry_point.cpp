// cudaGetDriverEntryPoint[ByVersion]: forwarded to the driver's cuGetProcAddress_v2 with statuses mapped.
#include "runtime_state.h"

using namespace fakecudart;

namespace {

// `per_thread_default`: what cudaEnableDefault means for the variant being called (_ptsz or not).
cudaError_t entry_point(const char* symbol, void** funcPtr, unsigned int cudaVersion, unsigned long long flags,
                        cudaDriverEntryPointQueryResult* driverStatus, bool per_thread_default) {
  if (driverStatus) *driverStatus = cudaDriverEntryPointSymbolNotFound;
  if (!symbol || !funcPtr) return record(cudaErrorInvalidValue);
  *funcPtr = nullptr;
  cuuint64_t cu_flags;
  switch (flags) {
    case cudaEnableDefault:
      cu_flags = per_thread_default ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_LEGACY_STREAM;
      break;
    case cudaEnableLegacyStream: cu_flags = CU_GET_PROC_ADDRESS_LEGACY_STREAM; break;
    case cudaEnablePerThreadDefaultStream: cu_flags = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM; break;
    default: return record(cudaErrorInvalidValue);
  }
  if (cudaError_t e = load_driver()) return record(e);
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult r = driver().cuGetProcAddress_v2(symbol, funcPtr, static_cast<int>(cudaVersion), cu_flags, &status);
  if (driverStatus) {
    switch (status) {
      case CU_GET_PROC_ADDRESS_SUCCESS: *driverStatus = cudaDriverEntryPointSuccess; break;
      case CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT:
        *driverStatus = cudaDriverEntryPointVersionNotSufficent;
        break;
      default: *driverStatus = cudaDriverEntryPointSymbolNotFound; break;
    }
  }
  // Per the runtime's contract a miss is not an error: success, a NULL pointer, and the status.
  if (r == CUDA_ERROR_NOT_FOUND) return cudaSuccess;
  return record(r);
}

}  // namespace

FAKECUDA_API cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** funcPtr, unsigned long long flags,
                                                 cudaDriverEntryPointQueryResult* driverStatus) {
  return entry_point(symbol, funcPtr, CUDART_VERSION, flags, driverStatus, false);
}

FAKECUDA_API cudaError_t cudaGetDriverEntryPoint_ptsz(const char* symbol, void** funcPtr, unsigned long long flags,
                                                      cudaDriverEntryPointQueryResult* driverStatus) {
  return entry_point(symbol, funcPtr, CUDART_VERSION, flags, driverStatus, true);
}

FAKECUDA_API cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** funcPtr,
                                                          unsigned int cudaVersion, unsigned long long flags,
                                                          cudaDriverEntryPointQueryResult* driverStatus) {
  return entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus, false);
}

FAKECUDA_API cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char* symbol, void** funcPtr,
                                                               unsigned int cudaVersion, unsigned long long flags,
                                                               cudaDriverEntryPointQueryResult* driverStatus) {
  return entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus, true);
}

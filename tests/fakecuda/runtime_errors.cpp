// Runtime errors: driver-to-runtime code mapping, last-error tracking, names and descriptions.
#include "runtime_state.h"

namespace {

#define FAKECUDART_ERRORS(X)                                                                  \
  X(cudaSuccess, "no error")                                                                  \
  X(cudaErrorInvalidValue, "invalid argument")                                                \
  X(cudaErrorMemoryAllocation, "out of memory")                                               \
  X(cudaErrorInitializationError, "initialization error")                                     \
  X(cudaErrorCudartUnloading, "driver shutting down")                                         \
  X(cudaErrorInvalidConfiguration, "invalid configuration argument")                          \
  X(cudaErrorInvalidPitchValue, "invalid pitch argument")                                     \
  X(cudaErrorInvalidSymbol, "invalid device symbol")                                          \
  X(cudaErrorInvalidHostPointer, "invalid host pointer")                                      \
  X(cudaErrorInvalidDevicePointer, "invalid device pointer")                                  \
  X(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy")                     \
  X(cudaErrorMissingConfiguration, "__global__ function call is not configured")              \
  X(cudaErrorStubLibrary, "CUDA driver is a stub library")                                    \
  X(cudaErrorInsufficientDriver, "CUDA driver version is insufficient for CUDA runtime version") \
  X(cudaErrorCallRequiresNewerDriver, "API call requires a newer CUDA driver")                \
  X(cudaErrorInvalidDeviceFunction, "invalid device function")                                \
  X(cudaErrorNoDevice, "no CUDA-capable device is detected")                                  \
  X(cudaErrorInvalidDevice, "invalid device ordinal")                                         \
  X(cudaErrorStartupFailure, "initialization error")                                          \
  X(cudaErrorInvalidKernelImage, "device kernel image is invalid")                            \
  X(cudaErrorDeviceUninitialized, "invalid device context")                                   \
  X(cudaErrorMapBufferObjectFailed, "mapping of buffer object failed")                        \
  X(cudaErrorUnmapBufferObjectFailed, "unmapping of buffer object failed")                    \
  X(cudaErrorAlreadyMapped, "resource already mapped")                                        \
  X(cudaErrorNoKernelImageForDevice, "no kernel image is available for execution on the device") \
  X(cudaErrorNotMapped, "resource not mapped")                                                \
  X(cudaErrorInvalidResourceHandle, "invalid resource handle")                                \
  X(cudaErrorIllegalState, "the operation is not valid in the current state")                 \
  X(cudaErrorSymbolNotFound, "named symbol not found")                                        \
  X(cudaErrorNotReady, "device not ready")                                                    \
  X(cudaErrorIllegalAddress, "an illegal memory access was encountered")                      \
  X(cudaErrorLaunchOutOfResources, "too many resources requested for launch")                 \
  X(cudaErrorLaunchFailure, "unspecified launch failure")                                     \
  X(cudaErrorSetOnActiveProcess, "cannot set while device is active in this process")         \
  X(cudaErrorContextIsDestroyed, "context is destroyed")                                      \
  X(cudaErrorNotPermitted, "operation not permitted")                                         \
  X(cudaErrorNotSupported, "operation not supported")                                         \
  X(cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing")     \
  X(cudaErrorUnknown, "unknown error")

struct ErrorText {
  cudaError_t code;
  const char* name;
  const char* text;
};

constexpr ErrorText kErrors[] = {
#define FAKECUDART_ERROR_ROW(code, text) {code, #code, text},
    FAKECUDART_ERRORS(FAKECUDART_ERROR_ROW)
#undef FAKECUDART_ERROR_ROW
};

const ErrorText* find(int code) {
  for (const ErrorText& e : kErrors)
    if (e.code == code) return &e;
  return nullptr;
}

thread_local cudaError_t t_last_error = cudaSuccess;

}  // namespace

namespace fakecudart {

// CUDA keeps the two enumerations numerically aligned wherever a driver failure has a runtime
// counterpart (CUDA_ERROR_OUT_OF_MEMORY 2 = cudaErrorMemoryAllocation 2, INVALID_CONTEXT 201 =
// cudaErrorDeviceUninitialized 201, NOT_FOUND 500 = cudaErrorSymbolNotFound 500, ...), so the
// mapping is the identity over the codes both sides know; anything else is cudaErrorUnknown.
cudaError_t to_runtime_error(CUresult r) {
  const ErrorText* e = find(static_cast<int>(r));
  return e ? e->code : cudaErrorUnknown;
}

cudaError_t record(cudaError_t e) {
  if (e != cudaSuccess) t_last_error = e;
  return e;
}

cudaError_t take_last_error() {
  cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}

cudaError_t peek_last_error() { return t_last_error; }

}  // namespace fakecudart

FAKECUDA_API const char* cudaGetErrorName(cudaError_t error) {
  const ErrorText* e = find(error);
  return e ? e->name : "unrecognized error code";
}

FAKECUDA_API const char* cudaGetErrorString(cudaError_t error) {
  const ErrorText* e = find(error);
  return e ? e->text : "unrecognized error code";
}

FAKECUDA_API cudaError_t cudaGetLastError(void) { return fakecudart::take_last_error(); }

FAKECUDA_API cudaError_t cudaPeekAtLastError(void) { return fakecudart::peek_last_error(); }

// Driver error names and descriptions (cuGetErrorName / cuGetErrorString).
#include "cuda_decls.h"

namespace {

// Codes this simulated driver can return or that callers commonly print; others are unknown to it.
#define FAKECUDA_DRIVER_ERRORS(X)                                                 \
  X(CUDA_SUCCESS, "no error")                                                     \
  X(CUDA_ERROR_INVALID_VALUE, "invalid argument")                                 \
  X(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")                                    \
  X(CUDA_ERROR_NOT_INITIALIZED, "initialization error")                           \
  X(CUDA_ERROR_DEINITIALIZED, "driver shutting down")                             \
  X(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library")                     \
  X(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected")                   \
  X(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal")                          \
  X(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid")                   \
  X(CUDA_ERROR_INVALID_CONTEXT, "invalid device context")                         \
  X(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current")                \
  X(CUDA_ERROR_MAP_FAILED, "mapping of buffer object failed")                     \
  X(CUDA_ERROR_UNMAP_FAILED, "unmapping of buffer object failed")                 \
  X(CUDA_ERROR_ALREADY_MAPPED, "resource already mapped")                         \
  X(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for the device")  \
  X(CUDA_ERROR_NOT_MAPPED, "resource not mapped")                                 \
  X(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle")                         \
  X(CUDA_ERROR_ILLEGAL_STATE, "the operation is not valid in the current state")  \
  X(CUDA_ERROR_NOT_FOUND, "named symbol not found")                               \
  X(CUDA_ERROR_NOT_READY, "device not ready")                                     \
  X(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered")       \
  X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch") \
  X(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure")                       \
  X(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed")                      \
  X(CUDA_ERROR_NOT_PERMITTED, "operation not permitted")                          \
  X(CUDA_ERROR_NOT_SUPPORTED, "operation not supported")                          \
  X(CUDA_ERROR_UNKNOWN, "unknown error")

struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};

constexpr ErrorText kErrors[] = {
#define FAKECUDA_ERROR_ROW(code, text) {code, #code, text},
    FAKECUDA_DRIVER_ERRORS(FAKECUDA_ERROR_ROW)
#undef FAKECUDA_ERROR_ROW
};

const ErrorText* find(CUresult error) {
  for (const ErrorText& e : kErrors)
    if (e.code == error) return &e;
  return nullptr;
}

}  // namespace

// Like CUDA: unrecognized codes give CUDA_ERROR_INVALID_VALUE and a NULL string.
FAKECUDA_API CUresult cuGetErrorString(CUresult error, const char** pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = find(error);
  *pStr = e ? e->text : nullptr;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FAKECUDA_API CUresult cuGetErrorName(CUresult error, const char** pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = find(error);
  *pStr = e ? e->name : nullptr;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

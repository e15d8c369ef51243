// Entry points that hand out function pointers — dlsym, cuGetProcAddress, cudaGetDriverEntryPoint
// — hooked so that whatever they return for an allocation function is our wrapper.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

// cuda.h maps cuGetProcAddress to cuGetProcAddress_v2; libcuda exports both, and so do we.
#undef cuGetProcAddress

// cudaGetDriverEntryPoint is deprecated in CUDA 13, but programs built against 12 still call it.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

// X(NAME, LAYER): resolvers exported and substituted like the allocation entry points.
#define GMEMHOOK_FOR_EACH_RESOLVER(X)                                      \
  X(cuGetProcAddress, Driver)                                              \
  X(cuGetProcAddress_v2, Driver)                                           \
  X(cudaGetDriverEntryPoint, Runtime)                                      \
  X(cudaGetDriverEntryPoint_ptsz, Runtime)                                 \
  X(cudaGetDriverEntryPointByVersion, Runtime)                             \
  X(cudaGetDriverEntryPointByVersion_ptsz, Runtime)

extern "C" {
CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags);
CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* symbolStatus);
cudaError_t cudaGetDriverEntryPoint_ptsz(const char* symbol, void** funcPtr,
                                         unsigned long long flags,
                                         cudaDriverEntryPointQueryResult* driverStatus);
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char* symbol, void** funcPtr,
                                                  unsigned int cudaVersion,
                                                  unsigned long long flags,
                                                  cudaDriverEntryPointQueryResult* driverStatus);
}

// Shared pieces of the fakecuda self-test: the loaded libraries, call-by-name macros, fixtures.
#pragma once

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_decls.h"

// Runtime per-thread variants, declared only for their types; everything is reached through dlsym.
extern "C" {
cudaError_t cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaFreeAsync_ptsz(void* devPtr, cudaStream_t hStream);
}

namespace fakecuda_selftest {

inline constexpr size_t kMiB = size_t{1} << 20;
inline constexpr size_t kCapacity = 64 * kMiB;  // what main() configures
inline constexpr int kDevices = 3;

inline void* g_driver = nullptr;
inline void* g_runtime = nullptr;

// What the driver said before anyone called cuInit (captured in main, before any test runs).
inline CUresult g_alloc_before_init = CUDA_SUCCESS;
inline CUresult g_count_before_init = CUDA_SUCCESS;
inline CUresult g_procaddress_before_init = CUDA_ERROR_UNKNOWN;

inline void* symbol(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  if (!p) {
    std::fprintf(stderr, "fakecuda_selftest: missing export %s\n", name);
    std::abort();
  }
  return p;
}

#define DRV(fn) (reinterpret_cast<decltype(&::fn)>(symbol(g_driver, #fn)))
#define RT(fn) (reinterpret_cast<decltype(&::fn)>(symbol(g_runtime, #fn)))

inline size_t live(int device) { return DRV(fakecuda_live_bytes)(device); }
inline size_t pinned() { return DRV(fakecuda_pinned_host_bytes)(); }

inline CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

inline int ordinal_of(CUdeviceptr p) {
  int device = -99;
  EXPECT_EQ(DRV(cuPointerGetAttribute)(&device, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p), CUDA_SUCCESS);
  return device;
}

inline void clear_context_stack() {
  CUcontext ctx = nullptr;
  while (DRV(cuCtxPopCurrent_v2)(&ctx) == CUDA_SUCCESS) {
  }
}

// Driver tests run with an empty context stack and leave it empty.
class Driver : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(DRV(cuInit)(0), CUDA_SUCCESS);
    clear_context_stack();
  }
  void TearDown() override { clear_context_stack(); }

  // Makes device `d`'s primary context current for the rest of the test.
  void use_device(int d) {
    CUcontext ctx = nullptr;
    ASSERT_EQ(DRV(cuDevicePrimaryCtxRetain)(&ctx, d), CUDA_SUCCESS);
    retained_.push_back(d);
    ASSERT_EQ(DRV(cuCtxSetCurrent)(ctx), CUDA_SUCCESS);
  }

  ~Driver() override {
    for (int d : retained_) DRV(cuDevicePrimaryCtxRelease_v2)(d);
  }

 private:
  std::vector<int> retained_;
};

// Runtime tests start on device 0 with no driver context pushed, and go back there.
class Runtime : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_context_stack();
    ASSERT_EQ(RT(cudaSetDevice)(0), cudaSuccess);
    RT(cudaGetLastError)();
  }
  void TearDown() override {
    RT(cudaSetDevice)(0);
    RT(cudaGetLastError)();
  }
};

inline bool no_device_mode() { return std::getenv("FAKECUDA_SELFTEST_NO_DEVICE") != nullptr; }

}  // namespace fakecuda_selftest

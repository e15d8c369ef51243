// Self-test of the simulated device: loads both fake libraries by path and checks CUDA semantics.
#include <cstdlib>

#include "selftest_support.h"

using namespace fakecuda_selftest;

namespace {

TEST(Init, DriverRefusesWorkBeforeCuInit) {
  if (no_device_mode()) GTEST_SKIP();
  EXPECT_EQ(g_alloc_before_init, CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(g_count_before_init, CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(g_procaddress_before_init, CUDA_SUCCESS);  // cudart resolves everything before cuInit
  int version = 0;
  EXPECT_EQ(DRV(cuDriverGetVersion)(&version), CUDA_SUCCESS);
  EXPECT_EQ(version, 13000);
  EXPECT_EQ(DRV(cuInit)(1), CUDA_ERROR_INVALID_VALUE);
}

// Run by ctest as fakecuda_selftest_no_device, with zero devices configured.
TEST(NoDevice, DriverAndRuntimeReportNoDevice) {
  if (!no_device_mode()) GTEST_SKIP() << "needs FAKECUDA_SELFTEST_NO_DEVICE=1";
  EXPECT_EQ(DRV(cuInit)(0), CUDA_ERROR_NO_DEVICE);
  int count = -1;
  EXPECT_EQ(DRV(cuDeviceGetCount)(&count), CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(RT(cudaGetDeviceCount)(&count), cudaErrorNoDevice);
  EXPECT_EQ(count, 0);
  void* p = &count;
  EXPECT_EQ(RT(cudaMalloc)(&p, 16), cudaErrorNoDevice);
  EXPECT_EQ(p, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  // Configuration is read at cuInit, so it has to be in place before the first call.
  setenv("FAKECUDA_DEVICES", no_device_mode() ? "0" : "3", 1);
  setenv("FAKECUDA_CAPACITY", "64M", 1);
  g_driver = dlopen(FAKECUDA_LIB_DIR "/libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  g_runtime = dlopen(FAKECUDA_LIB_DIR "/libcudart.so.13", RTLD_NOW | RTLD_GLOBAL);
  if (!g_driver || !g_runtime) {
    std::fprintf(stderr, "fakecuda_selftest: cannot load the fake libraries: %s\n", dlerror());
    return 1;
  }
  CUdeviceptr p = 0;
  int count = 0;
  void* fn = nullptr;
  g_alloc_before_init = DRV(cuMemAlloc_v2)(&p, 16);
  g_count_before_init = DRV(cuDeviceGetCount)(&count);
  g_procaddress_before_init = DRV(cuGetProcAddress_v2)("cuInit", &fn, 13000, 0, nullptr);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

// Self-test of the fake runtime API and of its path through the driver.
#include <atomic>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "selftest_support.h"

using namespace fakecuda_selftest;

namespace {

TEST_F(Runtime, MallocIsCarriedOutByTheDriver) {
  size_t base = live(0);
  void* p = nullptr;
  ASSERT_EQ(RT(cudaMalloc)(&p, 1000), cudaSuccess);
  EXPECT_EQ(live(0), base + 1024);  // accounted by the driver, so it went through cuMemAlloc
  EXPECT_EQ(ordinal_of(dptr(p)), 0);
  CUcontext owner = nullptr, primary = nullptr;
  EXPECT_EQ(DRV(cuPointerGetAttribute)(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, dptr(p)), CUDA_SUCCESS);
  ASSERT_EQ(DRV(cuDevicePrimaryCtxRetain)(&primary, 0), CUDA_SUCCESS);
  EXPECT_EQ(owner, primary);  // made in the primary context, like cudart
  DRV(cuDevicePrimaryCtxRelease_v2)(0);
  EXPECT_EQ(RT(cudaFree)(p), cudaSuccess);
  EXPECT_EQ(live(0), base);
  EXPECT_EQ(RT(cudaFree)(p), cudaErrorInvalidValue);
  EXPECT_EQ(RT(cudaGetLastError)(), cudaErrorInvalidValue);
  EXPECT_EQ(RT(cudaGetLastError)(), cudaSuccess);

  EXPECT_EQ(RT(cudaMalloc)(&p, 0), cudaSuccess);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(RT(cudaFree)(nullptr), cudaSuccess);
  p = &base;
  EXPECT_EQ(RT(cudaMalloc)(&p, kCapacity + 1), cudaErrorMemoryAllocation);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(RT(cudaPeekAtLastError)(), cudaErrorMemoryAllocation);
  EXPECT_EQ(RT(cudaGetLastError)(), cudaErrorMemoryAllocation);
  EXPECT_EQ(live(0), base);
}

TEST_F(Runtime, SetDeviceIsPerThread) {
  int count = 0;
  ASSERT_EQ(RT(cudaGetDeviceCount)(&count), cudaSuccess);
  EXPECT_EQ(count, kDevices);
  ASSERT_EQ(RT(cudaSetDevice)(1), cudaSuccess);
  int device = -1;
  EXPECT_EQ(RT(cudaGetDevice)(&device), cudaSuccess);
  EXPECT_EQ(device, 1);
  size_t base1 = live(1);
  void* p = nullptr;
  ASSERT_EQ(RT(cudaMalloc)(&p, 4096), cudaSuccess);
  EXPECT_EQ(ordinal_of(dptr(p)), 1);
  EXPECT_EQ(live(1), base1 + 4096);
  EXPECT_EQ(RT(cudaSetDevice)(kDevices), cudaErrorInvalidDevice);
  EXPECT_EQ(RT(cudaGetDevice)(&device), cudaSuccess);
  EXPECT_EQ(device, 1);

  std::thread([] {
    int d = -1;
    EXPECT_EQ(RT(cudaGetDevice)(&d), cudaSuccess);
    EXPECT_EQ(d, 0);  // a new thread starts on device 0
    void* q = nullptr;
    ASSERT_EQ(RT(cudaMalloc)(&q, 512), cudaSuccess);
    EXPECT_EQ(ordinal_of(dptr(q)), 0);
    EXPECT_EQ(RT(cudaFree)(q), cudaSuccess);
  }).join();
  EXPECT_EQ(RT(cudaFree)(p), cudaSuccess);
  EXPECT_EQ(live(1), base1);
}

TEST_F(Runtime, StreamsPoolsAndStreamOrderedAllocation) {
  size_t base = live(0);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(RT(cudaStreamCreateWithFlags)(&stream, cudaStreamNonBlocking), cudaSuccess);
  void* p = nullptr;
  ASSERT_EQ(RT(cudaMallocAsync)(&p, 2 * kMiB, stream), cudaSuccess);
  EXPECT_EQ(live(0), base + 2 * kMiB);
  ASSERT_EQ(RT(cudaFreeAsync)(p, stream), cudaSuccess);
  ASSERT_EQ(RT(cudaStreamSynchronize)(stream), cudaSuccess);
  EXPECT_EQ(live(0), base + 2 * kMiB);  // still reserved by the default pool
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(RT(cudaDeviceGetDefaultMemPool)(&pool, 0), cudaSuccess);
  ASSERT_EQ(RT(cudaMemPoolTrimTo)(pool, 0), cudaSuccess);
  EXPECT_EQ(live(0), base);

  ASSERT_EQ(RT(cudaMallocAsync_ptsz)(&p, 1000, cudaStreamPerThread), cudaSuccess);
  EXPECT_EQ(RT(cudaFreeAsync_ptsz)(p, nullptr), cudaSuccess);
  EXPECT_EQ(RT(cudaFreeAsync)(p, stream), cudaErrorInvalidValue);

  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 2;
  cudaMemPool_t mine = nullptr;
  ASSERT_EQ(RT(cudaMemPoolCreate)(&mine, &props), cudaSuccess);
  size_t base2 = live(2);
  ASSERT_EQ(RT(cudaMallocFromPoolAsync)(&p, 700, mine, stream), cudaSuccess);
  EXPECT_EQ(ordinal_of(dptr(p)), 2);
  EXPECT_EQ(live(2), base2 + 1024);
  ASSERT_EQ(RT(cudaFree)(p), cudaSuccess);  // cudaFree accepts stream-ordered memory
  ASSERT_EQ(RT(cudaMemPoolDestroy)(mine), cudaSuccess);
  EXPECT_EQ(live(2), base2);
  EXPECT_EQ(RT(cudaStreamDestroy)(stream), cudaSuccess);
  EXPECT_EQ(RT(cudaStreamDestroy)(stream), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(RT(cudaMemPoolTrimTo)(pool, 0), cudaSuccess);
}

TEST_F(Runtime, HostManagedPitchedAndCopies) {
  size_t base = live(0), base_pinned = pinned();
  void* host = nullptr;
  ASSERT_EQ(RT(cudaMallocHost)(&host, 10000), cudaSuccess);
  void* host2 = nullptr;
  ASSERT_EQ(RT(cudaHostAlloc)(&host2, 100, cudaHostAllocMapped), cudaSuccess);
  EXPECT_EQ(pinned(), base_pinned + 10240 + 512);
  EXPECT_EQ(live(0), base);
  void* huge = nullptr;  // pinned host memory is not bounded by device capacity
  ASSERT_EQ(RT(cudaMallocHost)(&huge, 2 * kCapacity), cudaSuccess);
  EXPECT_EQ(RT(cudaFreeHost)(huge), cudaSuccess);

  void* managed = nullptr;
  ASSERT_EQ(RT(cudaMallocManaged)(&managed, 100, cudaMemAttachGlobal), cudaSuccess);
  void* rejected = &base;
  EXPECT_EQ(RT(cudaMallocManaged)(&rejected, 0, cudaMemAttachGlobal), cudaErrorInvalidValue);
  EXPECT_EQ(rejected, nullptr);
  void* pitched = nullptr;
  size_t pitch = 0;
  ASSERT_EQ(RT(cudaMallocPitch)(&pitched, &pitch, 300, 4), cudaSuccess);
  EXPECT_EQ(pitch, 512u);
  cudaPitchedPtr pp = {};
  ASSERT_EQ(RT(cudaMalloc3D)(&pp, cudaExtent{100, 2, 3}), cudaSuccess);
  EXPECT_EQ(pp.pitch, 512u);
  EXPECT_EQ(pp.xsize, 100u);
  EXPECT_EQ(live(0), base + 512 + 2048 + 3072);

  std::memset(host, 0x33, 10000);
  ASSERT_EQ(RT(cudaMemset)(pitched, 0x44, 2048), cudaSuccess);
  ASSERT_EQ(RT(cudaMemcpy)(pitched, host, 100, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(RT(cudaMemcpy)(pp.ptr, pitched, 200, cudaMemcpyDeviceToDevice), cudaSuccess);
  ASSERT_EQ(RT(cudaMemcpy)(host, pp.ptr, 200, cudaMemcpyDefault), cudaSuccess);
  auto* bytes = static_cast<unsigned char*>(host);
  EXPECT_EQ(bytes[99], 0x33);
  EXPECT_EQ(bytes[100], 0x44);
  EXPECT_EQ(RT(cudaMemcpy)(host, pitched, 4096, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_EQ(RT(cudaMemcpy)(host, pitched, 1, static_cast<cudaMemcpyKind>(9)),
            cudaErrorInvalidMemcpyDirection);
  size_t free = 0, total = 0;
  ASSERT_EQ(RT(cudaMemGetInfo)(&free, &total), cudaSuccess);
  EXPECT_EQ(total, kCapacity);
  EXPECT_EQ(free, kCapacity - live(0));

  EXPECT_EQ(RT(cudaFreeHost)(pitched), cudaErrorInvalidValue);
  EXPECT_EQ(RT(cudaFreeHost)(host), cudaSuccess);
  EXPECT_EQ(RT(cudaFreeHost)(host2), cudaSuccess);
  EXPECT_EQ(RT(cudaFree)(managed), cudaSuccess);
  EXPECT_EQ(RT(cudaFree)(pitched), cudaSuccess);
  EXPECT_EQ(RT(cudaFree)(pp.ptr), cudaSuccess);
  EXPECT_EQ(live(0), base);
  EXPECT_EQ(pinned(), base_pinned);
}

TEST_F(Runtime, DeviceResetFreesOnlyContextMemory) {
  ASSERT_EQ(RT(cudaSetDevice)(2), cudaSuccess);
  size_t base = live(2);
  void *plain = nullptr, *ordered = nullptr;
  ASSERT_EQ(RT(cudaMalloc)(&plain, kMiB), cudaSuccess);
  ASSERT_EQ(RT(cudaMallocAsync)(&ordered, kMiB, nullptr), cudaSuccess);
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 2;
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(DRV(cuMemCreate)(&handle, 2 * kMiB, &prop, 0), CUDA_SUCCESS);
  EXPECT_EQ(live(2), base + 4 * kMiB);

  ASSERT_EQ(RT(cudaDeviceReset)(), cudaSuccess);
  EXPECT_EQ(live(2), base + 3 * kMiB);
  EXPECT_EQ(RT(cudaFree)(plain), cudaErrorInvalidValue);  // gone with the reset
  EXPECT_EQ(RT(cudaFreeAsync)(ordered, nullptr), cudaSuccess);  // pool memory survived
  EXPECT_EQ(DRV(cuMemRelease)(handle), CUDA_SUCCESS);
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(RT(cudaDeviceGetDefaultMemPool)(&pool, 2), cudaSuccess);
  ASSERT_EQ(RT(cudaMemPoolTrimTo)(pool, 0), cudaSuccess);
  EXPECT_EQ(live(2), base);
  void* after = nullptr;
  EXPECT_EQ(RT(cudaMalloc)(&after, 64), cudaSuccess);  // the device is usable again
  EXPECT_EQ(RT(cudaFree)(after), cudaSuccess);
}

TEST_F(Runtime, DriverEntryPointsComeFromTheDriver) {
  // Declared deprecated in the header; reached by name so the test builds warning-free.
  using EntryPoint = cudaError_t (*)(const char*, void**, unsigned long long, cudaDriverEntryPointQueryResult*);
  using EntryPointByVersion =
      cudaError_t (*)(const char*, void**, unsigned int, unsigned long long, cudaDriverEntryPointQueryResult*);
  auto entry = reinterpret_cast<EntryPoint>(symbol(g_runtime, "cudaGetDriverEntryPoint"));
  auto entry_ptsz = reinterpret_cast<EntryPoint>(symbol(g_runtime, "cudaGetDriverEntryPoint_ptsz"));
  auto by_version = reinterpret_cast<EntryPointByVersion>(symbol(g_runtime, "cudaGetDriverEntryPointByVersion"));
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  EXPECT_EQ(entry("cuMemAlloc", &fn, cudaEnableDefault, &status), cudaSuccess);
  EXPECT_EQ(status, cudaDriverEntryPointSuccess);
  EXPECT_EQ(fn, dlsym(g_driver, "cuMemAlloc_v2"));
  EXPECT_EQ(entry("cuMemAllocAsync", &fn, cudaEnableDefault, nullptr), cudaSuccess);
  EXPECT_EQ(fn, dlsym(g_driver, "cuMemAllocAsync"));
  EXPECT_EQ(entry_ptsz("cuMemAllocAsync", &fn, cudaEnableDefault, nullptr), cudaSuccess);
  EXPECT_EQ(fn, dlsym(g_driver, "cuMemAllocAsync_ptsz"));
  EXPECT_EQ(by_version("cuMemFreeAsync", &fn, 12000, cudaEnablePerThreadDefaultStream, &status), cudaSuccess);
  EXPECT_EQ(fn, dlsym(g_driver, "cuMemFreeAsync_ptsz"));
  EXPECT_EQ(by_version("cuMemFreeAsync", &fn, 12000, cudaEnableLegacyStream, &status), cudaSuccess);
  EXPECT_EQ(fn, dlsym(g_driver, "cuMemFreeAsync"));

  // A miss is reported through the status with a NULL pointer, not as an error.
  fn = &status;
  EXPECT_EQ(by_version("cuMemAlloc", &fn, 3000, cudaEnableDefault, &status), cudaSuccess);
  EXPECT_EQ(status, cudaDriverEntryPointVersionNotSufficent);
  EXPECT_EQ(fn, nullptr);
  fn = &status;
  EXPECT_EQ(entry("cuNoSuchFunction", &fn, cudaEnableDefault, &status), cudaSuccess);
  EXPECT_EQ(status, cudaDriverEntryPointSymbolNotFound);
  EXPECT_EQ(fn, nullptr);
  EXPECT_EQ(entry("cuMemAlloc", &fn, 7, &status), cudaErrorInvalidValue);
}

TEST_F(Runtime, ManyThreadsAllocateConcurrently) {
  size_t base0 = live(0), base1 = live(1);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t, &failures] {
      if (RT(cudaSetDevice)(t % 2) != cudaSuccess) ++failures;
      for (int i = 0; i < 200; ++i) {
        void* p = nullptr;
        if (RT(cudaMalloc)(&p, 1000 + i) != cudaSuccess || RT(cudaFree)(p) != cudaSuccess) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(live(0), base0);
  EXPECT_EQ(live(1), base1);
}

TEST_F(Runtime, VersionsAndErrorText) {
  int v = 0;
  EXPECT_EQ(RT(cudaRuntimeGetVersion)(&v), cudaSuccess);
  EXPECT_EQ(v, 13000);
  EXPECT_EQ(RT(cudaDriverGetVersion)(&v), cudaSuccess);
  EXPECT_EQ(v, 13000);
  EXPECT_STREQ(RT(cudaGetErrorName)(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation");
  EXPECT_STREQ(RT(cudaGetErrorString)(cudaErrorInvalidValue), "invalid argument");
  EXPECT_STREQ(RT(cudaGetErrorName)(static_cast<cudaError_t>(4242)), "unrecognized error code");
  cudaDeviceProp prop;
  ASSERT_EQ(RT(cudaGetDeviceProperties)(&prop, 1), cudaSuccess);
  EXPECT_EQ(prop.totalGlobalMem, kCapacity);
  EXPECT_EQ(prop.warpSize, 32);
  EXPECT_EQ(RT(cudaGetDeviceProperties)(&prop, kDevices), cudaErrorInvalidDevice);
}

}  // namespace

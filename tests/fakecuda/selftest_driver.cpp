// Self-test of the fake driver API: devices, contexts, memory, pools, VMM, cuGetProcAddress.
#include <atomic>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "selftest_support.h"

using namespace fakecuda_selftest;

namespace {

TEST_F(Driver, DevicesFollowConfiguration) {
  int count = 0;
  ASSERT_EQ(DRV(cuDeviceGetCount)(&count), CUDA_SUCCESS);
  EXPECT_EQ(count, kDevices);
  CUdevice dev = -1;
  EXPECT_EQ(DRV(cuDeviceGet)(&dev, 2), CUDA_SUCCESS);
  EXPECT_EQ(dev, 2);
  EXPECT_EQ(DRV(cuDeviceGet)(&dev, kDevices), CUDA_ERROR_INVALID_DEVICE);
  size_t total = 0;
  EXPECT_EQ(DRV(cuDeviceTotalMem_v2)(&total, 1), CUDA_SUCCESS);
  EXPECT_EQ(total, kCapacity);
  char name[64] = {};
  EXPECT_EQ(DRV(cuDeviceGetName)(name, sizeof(name), 0), CUDA_SUCCESS);
  EXPECT_NE(std::strlen(name), 0u);
  int major = 0;
  EXPECT_EQ(DRV(cuDeviceGetAttribute)(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0), CUDA_SUCCESS);
  EXPECT_GE(major, 7);
  EXPECT_EQ(DRV(cuDeviceGetAttribute)(&major, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(Driver, AllocationNeedsCurrentContext) {
  CUdeviceptr p = 123;
  EXPECT_EQ(DRV(cuMemAlloc_v2)(&p, 1024), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(p, 0u);
  CUdevice dev = 0;
  EXPECT_EQ(DRV(cuCtxGetDevice)(&dev), CUDA_ERROR_INVALID_CONTEXT);
  CUcontext ctx = reinterpret_cast<CUcontext>(1);
  EXPECT_EQ(DRV(cuCtxGetCurrent)(&ctx), CUDA_SUCCESS);
  EXPECT_EQ(ctx, nullptr);
}

// bench/hook_bench's direct path: the aliases must be the entry points themselves (the same
// address, so the same work) and behave as them, errors included.
TEST_F(Driver, DirectAliasesAreTheAllocAndFreeEntryPoints) {
  EXPECT_EQ(symbol(g_driver, "fakecuda_direct_cuMemAlloc_v2"), symbol(g_driver, "cuMemAlloc_v2"));
  EXPECT_EQ(symbol(g_driver, "fakecuda_direct_cuMemFree_v2"), symbol(g_driver, "cuMemFree_v2"));
  use_device(1);
  size_t base = live(1);
  CUdeviceptr p = 0;
  ASSERT_EQ(DRV(fakecuda_direct_cuMemAlloc_v2)(&p, 4096), CUDA_SUCCESS);
  EXPECT_EQ(ordinal_of(p), 1);
  EXPECT_EQ(live(1), base + 4096);
  EXPECT_EQ(DRV(fakecuda_direct_cuMemFree_v2)(p), CUDA_SUCCESS);
  EXPECT_EQ(live(1), base);
  EXPECT_EQ(DRV(fakecuda_direct_cuMemFree_v2)(p), CUDA_ERROR_INVALID_VALUE);  // double free
}

TEST_F(Driver, AllocFreeAccountingAndBadFrees) {
  use_device(0);
  size_t base = live(0);
  CUdeviceptr p = 0;
  ASSERT_EQ(DRV(cuMemAlloc_v2)(&p, 1000), CUDA_SUCCESS);
  EXPECT_EQ(live(0), base + 1024);  // 512-byte accounting granularity
  EXPECT_EQ(p % 256, 0u);

  std::vector<unsigned char> in(1000, 0xab), out(1000, 0);
  EXPECT_EQ(DRV(cuMemcpyHtoD_v2)(p, in.data(), in.size()), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemsetD8_v2)(p, 0x5a, 10), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemcpyDtoH_v2)(out.data(), p, out.size()), CUDA_SUCCESS);
  EXPECT_EQ(out[0], 0x5a);
  EXPECT_EQ(out[10], 0xab);
  EXPECT_EQ(DRV(cuMemsetD8_v2)(p, 0, 1001), CUDA_ERROR_INVALID_VALUE);  // past the allocation

  EXPECT_EQ(DRV(cuMemFree_v2)(p + 16), CUDA_ERROR_INVALID_VALUE);  // interior pointer
  EXPECT_EQ(DRV(cuMemFree_v2)(p), CUDA_SUCCESS);
  EXPECT_EQ(live(0), base);
  EXPECT_EQ(DRV(cuMemFree_v2)(p), CUDA_ERROR_INVALID_VALUE);  // double free
  int on_stack = 0;
  EXPECT_EQ(DRV(cuMemFree_v2)(dptr(&on_stack)), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(DRV(cuMemFree_v2)(0), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemAlloc_v2)(&p, 0), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(Driver, OutOfMemoryAtCapacity) {
  use_device(1);
  ASSERT_EQ(live(1), 0u);
  CUdeviceptr a = 0, b = 7, c = 0;
  ASSERT_EQ(DRV(cuMemAlloc_v2)(&a, 48 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemAlloc_v2)(&b, 32 * kMiB), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(b, 0u);
  ASSERT_EQ(DRV(cuMemAlloc_v2)(&c, 16 * kMiB), CUDA_SUCCESS);  // exactly fills the device
  EXPECT_EQ(DRV(cuMemAlloc_v2)(&b, 1), CUDA_ERROR_OUT_OF_MEMORY);
  size_t free = 1, total = 0;
  EXPECT_EQ(DRV(cuMemGetInfo_v2)(&free, &total), CUDA_SUCCESS);
  EXPECT_EQ(free, 0u);
  EXPECT_EQ(total, kCapacity);
  use_device(2);
  EXPECT_EQ(DRV(cuMemAlloc_v2)(&b, kMiB), CUDA_SUCCESS);  // other devices still have room
  EXPECT_EQ(ordinal_of(b), 2);
  EXPECT_EQ(DRV(cuMemFree_v2)(b), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemFree_v2)(a), CUDA_SUCCESS);  // frees work from any device's context
  EXPECT_EQ(DRV(cuMemFree_v2)(c), CUDA_SUCCESS);
  EXPECT_EQ(live(1), 0u);
}

TEST_F(Driver, PointerAttributesWithoutContext) {
  use_device(1);
  CUdeviceptr dev = 0, managed = 0;
  void* host = nullptr;
  ASSERT_EQ(DRV(cuMemAlloc_v2)(&dev, 5000), CUDA_SUCCESS);
  ASSERT_EQ(DRV(cuMemAllocManaged)(&managed, 100, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(DRV(cuMemAllocHost_v2)(&host, 64), CUDA_SUCCESS);
  clear_context_stack();

  EXPECT_EQ(ordinal_of(dev + 100), 1);
  unsigned int type = 0;
  EXPECT_EQ(DRV(cuPointerGetAttribute)(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dev), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_MEMORYTYPE_DEVICE);
  CUdeviceptr start = 0;
  size_t size = 0;
  EXPECT_EQ(DRV(cuPointerGetAttribute)(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, dev + 4999), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuPointerGetAttribute)(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, dev + 4999), CUDA_SUCCESS);
  EXPECT_EQ(start, dev);
  EXPECT_EQ(size, 5000u);
  EXPECT_EQ(DRV(cuPointerGetAttribute)(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, dev + 5000),
            CUDA_ERROR_INVALID_VALUE);
  int on_stack = 0;
  EXPECT_EQ(DRV(cuPointerGetAttribute)(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dptr(&on_stack)),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(DRV(cuPointerGetAttribute)(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dptr(host)), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_MEMORYTYPE_HOST);
  int is_managed = 0;
  EXPECT_EQ(DRV(cuPointerGetAttribute)(&is_managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, managed), CUDA_SUCCESS);
  EXPECT_EQ(is_managed, 1);

  EXPECT_EQ(DRV(cuMemFree_v2)(dev), CUDA_ERROR_INVALID_CONTEXT);  // frees still need a context
  use_device(1);
  EXPECT_EQ(DRV(cuMemFree_v2)(dev), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemFree_v2)(managed), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemFreeHost)(host), CUDA_SUCCESS);
}

TEST_F(Driver, PitchManagedAndPinnedHost) {
  use_device(0);
  size_t base = live(0), base_pinned = pinned();
  CUdeviceptr p = 0;
  size_t pitch = 0;
  ASSERT_EQ(DRV(cuMemAllocPitch_v2)(&p, &pitch, 100, 10, 4), CUDA_SUCCESS);
  EXPECT_EQ(pitch, 512u);
  EXPECT_EQ(live(0), base + 5120);
  CUdeviceptr rejected_dev = 1;
  EXPECT_EQ(DRV(cuMemAllocPitch_v2)(&rejected_dev, &pitch, 100, 10, 3), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(rejected_dev, 0u);
  CUdeviceptr m = 0;
  EXPECT_EQ(DRV(cuMemAllocManaged)(&m, 64, 0), CUDA_ERROR_INVALID_VALUE);

  void* h = nullptr;
  ASSERT_EQ(DRV(cuMemHostAlloc)(&h, 4096, CU_MEMHOSTALLOC_PORTABLE), CUDA_SUCCESS);
  EXPECT_EQ(pinned(), base_pinned + 4096);
  EXPECT_EQ(live(0), base + 5120);  // pinned host memory is not device capacity
  void* rejected = &h;
  EXPECT_EQ(DRV(cuMemHostAlloc)(&rejected, 4096, 0x80), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(rejected, nullptr);
  EXPECT_EQ(DRV(cuMemFree_v2)(dptr(h)), CUDA_ERROR_INVALID_VALUE);  // pinned host is not cuMemFree's
  EXPECT_EQ(DRV(cuMemFreeHost)(reinterpret_cast<void*>(p)), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(DRV(cuMemFreeHost)(h), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemFreeHost)(h), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(DRV(cuMemFreeHost)(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemFree_v2)(p), CUDA_SUCCESS);
  EXPECT_EQ(live(0), base);
  EXPECT_EQ(pinned(), base_pinned);
}

TEST_F(Driver, ContextsArePerThreadAndOwnTheirMemory) {
  size_t base = live(2);
  CUcontext ctx = nullptr;
  ASSERT_EQ(DRV(cuCtxCreate_v4)(&ctx, nullptr, 0, 2), CUDA_SUCCESS);
  CUcontext current = nullptr;
  EXPECT_EQ(DRV(cuCtxGetCurrent)(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, ctx);
  std::thread([&] {
    CUcontext other = reinterpret_cast<CUcontext>(1);
    EXPECT_EQ(DRV(cuCtxGetCurrent)(&other), CUDA_SUCCESS);
    EXPECT_EQ(other, nullptr);
  }).join();
  CUdeviceptr p = 0;
  CUstream stream = nullptr;
  ASSERT_EQ(DRV(cuMemAlloc_v2)(&p, kMiB), CUDA_SUCCESS);
  ASSERT_EQ(DRV(cuStreamCreate)(&stream, 0), CUDA_SUCCESS);
  EXPECT_EQ(live(2), base + kMiB);
  EXPECT_EQ(DRV(cuCtxDestroy_v2)(ctx), CUDA_SUCCESS);
  EXPECT_EQ(live(2), base);  // destroying a context frees what it allocated
  EXPECT_EQ(DRV(cuCtxGetCurrent)(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, nullptr);
  EXPECT_EQ(DRV(cuCtxDestroy_v2)(ctx), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(DRV(cuStreamDestroy_v2)(stream), CUDA_ERROR_INVALID_HANDLE);  // died with the context
}

TEST_F(Driver, StreamOrderedAllocationUsesPools) {
  use_device(0);
  size_t base = live(0);
  CUstream stream = nullptr;
  ASSERT_EQ(DRV(cuStreamCreate)(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(DRV(cuDeviceGetDefaultMemPool)(&pool, 0), CUDA_SUCCESS);
  auto attr = [&](CUmemoryPool p, CUmemPool_attribute a) {
    cuuint64_t v = 0;
    EXPECT_EQ(DRV(cuMemPoolGetAttribute)(p, a, &v), CUDA_SUCCESS);
    return v;
  };

  CUdeviceptr p = 0;
  ASSERT_EQ(DRV(cuMemAllocAsync)(&p, kMiB, stream), CUDA_SUCCESS);
  EXPECT_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), kMiB);
  EXPECT_EQ(attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), kMiB);
  CUmemoryPool owner = nullptr;
  EXPECT_EQ(DRV(cuPointerGetAttribute)(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p), CUDA_SUCCESS);
  EXPECT_EQ(owner, pool);

  ASSERT_EQ(DRV(cuMemFreeAsync)(p, stream), CUDA_SUCCESS);
  EXPECT_EQ(attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0u);
  EXPECT_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), kMiB);  // kept by the pool
  EXPECT_EQ(live(0), base + kMiB);
  EXPECT_EQ(DRV(cuMemFreeAsync)(p, stream), CUDA_ERROR_INVALID_VALUE);  // double free

  CUdeviceptr again = 0;
  ASSERT_EQ(DRV(cuMemAllocAsync_ptsz)(&again, kMiB - 100, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  EXPECT_EQ(again, p);  // the freed block is reused
  EXPECT_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), kMiB);
  ASSERT_EQ(DRV(cuMemFreeAsync_ptsz)(again, nullptr), CUDA_SUCCESS);

  // Memory a pool keeps counts against the device: it is not available to cuMemAlloc.
  CUdeviceptr big = 0, blocked = 0;
  ASSERT_EQ(DRV(cuMemAllocAsync)(&big, 40 * kMiB, stream), CUDA_SUCCESS);
  ASSERT_EQ(DRV(cuMemFreeAsync)(big, stream), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemAlloc_v2)(&blocked, 30 * kMiB), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(DRV(cuMemPoolTrimTo)(pool, 0), CUDA_SUCCESS);
  EXPECT_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0u);
  EXPECT_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 41 * kMiB);
  EXPECT_EQ(live(0), base);
  ASSERT_EQ(DRV(cuMemAlloc_v2)(&blocked, 30 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemFree_v2)(blocked), CUDA_SUCCESS);

  CUstream bogus = reinterpret_cast<CUstream>(&base);
  EXPECT_EQ(DRV(cuMemAllocAsync)(&p, 64, bogus), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(DRV(cuMemPoolDestroy)(pool), CUDA_ERROR_INVALID_VALUE);  // default pools are permanent
  EXPECT_EQ(DRV(cuStreamDestroy_v2)(stream), CUDA_SUCCESS);
}

TEST_F(Driver, ExplicitPoolsAndStreamDevice) {
  use_device(0);
  CUmemPoolProps props = {};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 1;
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(DRV(cuMemPoolCreate)(&pool, &props), CUDA_SUCCESS);
  props.location.id = kDevices;
  CUmemoryPool bad = nullptr;
  EXPECT_EQ(DRV(cuMemPoolCreate)(&bad, &props), CUDA_ERROR_INVALID_DEVICE);

  size_t base1 = live(1);
  CUdeviceptr p = 0;
  ASSERT_EQ(DRV(cuMemAllocFromPoolAsync)(&p, 3000, pool, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(ordinal_of(p), 1);
  EXPECT_EQ(live(1), base1 + 3072);
  // Destroying a pool with an outstanding allocation is allowed; the memory goes when freed.
  ASSERT_EQ(DRV(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
  CUdeviceptr rejected = 0;
  EXPECT_EQ(DRV(cuMemAllocFromPoolAsync)(&rejected, 1, pool, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(live(1), base1 + 3072);
  EXPECT_EQ(ordinal_of(p + 1), 1);  // the allocation outlives its pool
  EXPECT_EQ(DRV(cuMemFreeAsync)(p, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(live(1), base1);

  // A stream created on device 2 allocates on device 2 even while device 0 is current.
  CUcontext ctx2 = nullptr;
  CUstream s2 = nullptr;
  ASSERT_EQ(DRV(cuDevicePrimaryCtxRetain)(&ctx2, 2), CUDA_SUCCESS);
  ASSERT_EQ(DRV(cuCtxPushCurrent_v2)(ctx2), CUDA_SUCCESS);
  ASSERT_EQ(DRV(cuStreamCreate)(&s2, 0), CUDA_SUCCESS);
  CUcontext popped = nullptr;
  ASSERT_EQ(DRV(cuCtxPopCurrent_v2)(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, ctx2);
  CUdeviceptr q = 0;
  ASSERT_EQ(DRV(cuMemAllocAsync)(&q, 100, s2), CUDA_SUCCESS);
  EXPECT_EQ(ordinal_of(q), 2);
  EXPECT_EQ(DRV(cuMemFreeAsync)(q, s2), CUDA_SUCCESS);
  CUmemoryPool pool2 = nullptr;
  ASSERT_EQ(DRV(cuDeviceGetMemPool)(&pool2, 2), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemPoolTrimTo)(pool2, 0), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuStreamDestroy_v2)(s2), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuDevicePrimaryCtxRelease_v2)(2), CUDA_SUCCESS);
}

TEST_F(Driver, VirtualMemoryManagement) {
  use_device(2);
  size_t base = live(2);
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 2;
  size_t granularity = 0;
  ASSERT_EQ(DRV(cuMemGetAllocationGranularity)(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_SUCCESS);
  ASSERT_EQ(granularity, 2 * kMiB);

  CUmemGenericAllocationHandle handle = 0;
  EXPECT_EQ(DRV(cuMemCreate)(&handle, 3 * kMiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  prop.location.id = kDevices;
  EXPECT_EQ(DRV(cuMemCreate)(&handle, 4 * kMiB, &prop, 0), CUDA_ERROR_INVALID_DEVICE);
  prop.location.id = 2;
  EXPECT_EQ(DRV(cuMemCreate)(&handle, 128 * kMiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(DRV(cuMemCreate)(&handle, 4 * kMiB, &prop, 0), CUDA_SUCCESS);
  EXPECT_EQ(live(2), base + 4 * kMiB);

  CUdeviceptr va = 0;
  ASSERT_EQ(DRV(cuMemAddressReserve)(&va, 16 * kMiB, 0, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(va % granularity, 0u);
  EXPECT_EQ(DRV(cuMemMap)(va + kMiB, 4 * kMiB, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);   // misaligned
  EXPECT_EQ(DRV(cuMemMap)(va + 14 * kMiB, 4 * kMiB, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);  // overruns
  EXPECT_EQ(DRV(cuMemMap)(va, 6 * kMiB, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);  // bigger than handle
  ASSERT_EQ(DRV(cuMemMap)(va, 4 * kMiB, 0, handle, 0), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemMap)(va + 2 * kMiB, 2 * kMiB, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);  // mapped
  ASSERT_EQ(DRV(cuMemMap)(va + 8 * kMiB, 4 * kMiB, 0, handle, 0), CUDA_SUCCESS);  // an alias

  EXPECT_EQ(DRV(cuMemsetD8_v2)(va, 1, 16), CUDA_ERROR_ILLEGAL_ADDRESS);  // no access granted yet
  CUmemAccessDesc access = {};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 2;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  ASSERT_EQ(DRV(cuMemSetAccess)(va, 4 * kMiB, &access, 1), CUDA_SUCCESS);
  ASSERT_EQ(DRV(cuMemSetAccess)(va + 8 * kMiB, 4 * kMiB, &access, 1), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemSetAccess)(va + 4 * kMiB, 2 * kMiB, &access, 1), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(DRV(cuMemsetD8_v2)(va + 100, 0x7e, 1), CUDA_SUCCESS);
  EXPECT_EQ(reinterpret_cast<unsigned char*>(va + 8 * kMiB)[100], 0x7e);  // same physical memory

  EXPECT_EQ(ordinal_of(va + 3 * kMiB), 2);
  CUdeviceptr start = 0;
  size_t size = 0;
  EXPECT_EQ(DRV(cuPointerGetAttribute)(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, va + 9 * kMiB),
            CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuPointerGetAttribute)(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, va + 9 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(start, va);
  EXPECT_EQ(size, 16 * kMiB);

  // Freed only once released and unmapped everywhere.
  ASSERT_EQ(DRV(cuMemRelease)(handle), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemRelease)(handle), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(live(2), base + 4 * kMiB);
  EXPECT_EQ(DRV(cuMemUnmap)(va, 2 * kMiB), CUDA_ERROR_INVALID_VALUE);  // part of a mapping
  ASSERT_EQ(DRV(cuMemUnmap)(va, 4 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(live(2), base + 4 * kMiB);
  EXPECT_EQ(DRV(cuMemAddressFree)(va, 16 * kMiB), CUDA_ERROR_INVALID_VALUE);  // still mapped
  ASSERT_EQ(DRV(cuMemUnmap)(va + 8 * kMiB, 4 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(live(2), base);
  EXPECT_EQ(DRV(cuMemAddressFree)(va, 8 * kMiB), CUDA_ERROR_INVALID_VALUE);  // wrong size
  EXPECT_EQ(DRV(cuMemAddressFree)(va, 16 * kMiB), CUDA_SUCCESS);

  // Host-located physical memory is pinned host memory, not device capacity.
  size_t base_pinned = pinned();
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
  prop.location.id = 0;
  ASSERT_EQ(DRV(cuMemCreate)(&handle, 2 * kMiB, &prop, 0), CUDA_SUCCESS);
  EXPECT_EQ(pinned(), base_pinned + 2 * kMiB);
  EXPECT_EQ(live(2), base);
  ASSERT_EQ(DRV(cuMemRelease)(handle), CUDA_SUCCESS);
  EXPECT_EQ(pinned(), base_pinned);
}

TEST_F(Driver, GetProcAddressSelectsVersionAndStreamMode) {
  auto get = [](const char* name, int version, cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
    void* fn = reinterpret_cast<void*>(1);
    CUresult r = DRV(cuGetProcAddress_v2)(name, &fn, version, flags, status);
    return std::make_pair(r, fn);
  };
  CUdriverProcAddressQueryResult status;
  auto r = get("cuMemAlloc", 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status);
  EXPECT_EQ(r.first, CUDA_SUCCESS);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS);
  EXPECT_EQ(r.second, dlsym(g_driver, "cuMemAlloc_v2"));  // the exported function itself

  r = get("cuMemAlloc", 3000, CU_GET_PROC_ADDRESS_DEFAULT, &status);
  EXPECT_EQ(r.first, CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  EXPECT_EQ(r.second, nullptr);

  EXPECT_EQ(get("cuMemAllocAsync", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status).second,
            dlsym(g_driver, "cuMemAllocAsync_ptsz"));
  EXPECT_EQ(get("cuMemAllocAsync", 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status).second,
            dlsym(g_driver, "cuMemAllocAsync"));
  EXPECT_EQ(get("cuMemAllocAsync", 12000, CU_GET_PROC_ADDRESS_DEFAULT, nullptr).second,
            dlsym(g_driver, "cuMemAllocAsync"));
  EXPECT_EQ(get("cuMemFreeAsync", 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status).second,
            dlsym(g_driver, "cuMemFreeAsync_ptsz"));
  EXPECT_EQ(get("cuMemAllocAsync", 11010, CU_GET_PROC_ADDRESS_DEFAULT, &status).first, CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  // Without a per-thread twin, the per-thread search falls back to the legacy function.
  EXPECT_EQ(get("cuMemAlloc", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status).second,
            dlsym(g_driver, "cuMemAlloc_v2"));
  EXPECT_EQ(get("cuCtxCreate", 12000, 0, &status).second, dlsym(g_driver, "cuCtxCreate_v2"));
  EXPECT_EQ(get("cuCtxCreate", 13000, 0, &status).second, dlsym(g_driver, "cuCtxCreate_v4"));
  EXPECT_EQ(get("cuMemsetD8", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status).second,
            dlsym(g_driver, "cuMemsetD8_v2_ptds"));

  r = get("cuNoSuchFunction", 13000, 0, &status);
  EXPECT_EQ(r.first, CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  EXPECT_EQ(get("cuMemAlloc_v2", 13000, 0, &status).first, CUDA_ERROR_NOT_FOUND);  // base names only
  EXPECT_EQ(get("cuMemAlloc", 13000, 4, &status).first, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(get("cuMemAlloc", 13010, 0, &status).first, CUDA_ERROR_INVALID_VALUE);  // newer than driver

  void* fn = nullptr;
  EXPECT_EQ(DRV(cuGetProcAddress)("cuMemFree", &fn, 13000, 0), CUDA_SUCCESS);  // legacy 4-arg ABI
  EXPECT_EQ(fn, dlsym(g_driver, "cuMemFree_v2"));
  EXPECT_EQ(get("cuGetProcAddress", 13000, 0, &status).second, dlsym(g_driver, "cuGetProcAddress_v2"));
  EXPECT_EQ(get("cuGetProcAddress", 11030, 0, &status).second, dlsym(g_driver, "cuGetProcAddress"));
}

TEST_F(Driver, ErrorNamesAndStrings) {
  const char* s = nullptr;
  EXPECT_EQ(DRV(cuGetErrorName)(CUDA_ERROR_OUT_OF_MEMORY, &s), CUDA_SUCCESS);
  EXPECT_STREQ(s, "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(DRV(cuGetErrorString)(CUDA_ERROR_INVALID_VALUE, &s), CUDA_SUCCESS);
  EXPECT_STREQ(s, "invalid argument");
  EXPECT_EQ(DRV(cuGetErrorName)(static_cast<CUresult>(12345), &s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(s, nullptr);
}

}  // namespace

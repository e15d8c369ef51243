// vmm.cu — the driver's virtual memory management calls: two physical handles, each mapped into
// an address range of its own; one is torn down properly, the other is left mapped.
//
// map_buffer() does the whole dance for one buffer: cuMemAddressReserve a range, cuMemCreate a
// physical handle, cuMemMap it into the range and cuMemSetAccess it for device 0. main() maps a
// cache (kept) and a scratch buffer, fills both with a kernel, then unmap_buffer() takes the
// scratch buffer apart (cuMemUnmap, cuMemRelease, cuMemAddressFree). The cache is never
// unmapped, released or freed. Each buffer is 16 MiB (rounded up to the allocation granularity,
// which is 2 MiB on an H200, so it stays 16 MiB).
//
// What the report should show (`gmemhook run build/bin/samples/vmm`, then `gmemhook leaks`):
//   1 physical handle still alive: cuMemCreate, 16.0 MiB (16777216 bytes), device 0, created in
//     map_buffer() called from main() at the line marked "leaked" in vmm.cu,
//     still mapped (cuMemMap) at one 16.0 MiB range that is still reserved (cuMemAddressReserve),
//     both also from map_buffer()
//   the scratch handle, its mapping and its range are all gone.
// The program prints the handle, the address and the exact size it used.
#include <cuda.h>

#include "sample_check.h"

#define CHECK_CU(call) check_cu((call), #call, __FILE__, __LINE__)

namespace {

constexpr std::size_t kWantedBytes = 16 * kMiB;

void check_cu(CUresult err, const char* what, const char* file, int line) {
  if (err == CUDA_SUCCESS) return;
  const char* name = "unknown error";
  const char* text = "";
  cuGetErrorName(err, &name);
  cuGetErrorString(err, &text);
  std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", file, line, what, name, text);
  std::exit(1);
}

struct Mapping {
  CUdeviceptr address = 0;
  std::size_t bytes = 0;
  CUmemGenericAllocationHandle handle = 0;
};

CUmemAllocationProp device_memory(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

}  // namespace

SAMPLE_FRAME Mapping map_buffer(std::size_t bytes, int device) {
  const CUmemAllocationProp prop = device_memory(device);
  Mapping m;
  m.bytes = bytes;
  CHECK_CU(cuMemAddressReserve(&m.address, bytes, 0, 0, 0));
  CHECK_CU(cuMemCreate(&m.handle, bytes, &prop, 0));
  CHECK_CU(cuMemMap(m.address, bytes, 0, m.handle, 0));
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CHECK_CU(cuMemSetAccess(m.address, bytes, &access, 1));
  return m;
}

SAMPLE_FRAME void unmap_buffer(const Mapping& m) {
  CHECK_CU(cuMemUnmap(m.address, m.bytes));
  CHECK_CU(cuMemRelease(m.handle));
  CHECK_CU(cuMemAddressFree(m.address, m.bytes));
}

int main() {
  const int ordinal = 0;
  CHECK_CU(cuInit(0));
  CUdevice device;
  CHECK_CU(cuDeviceGet(&device, ordinal));
  // The primary context is the one the runtime uses too, so the fill kernel below (launched
  // through the runtime) runs in the same context that owns the mappings.
  CUcontext context;
  CHECK_CU(cuDevicePrimaryCtxRetain(&context, device));
  CHECK_CU(cuCtxSetCurrent(context));

  const CUmemAllocationProp prop = device_memory(ordinal);
  std::size_t granularity = 0;
  CHECK_CU(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  if (granularity == 0) {
    std::fprintf(stderr, "vmm: the driver reported an allocation granularity of 0\n");
    return 1;
  }
  const std::size_t bytes = (kWantedBytes + granularity - 1) / granularity * granularity;

  const Mapping cache = map_buffer(bytes, ordinal);  // leaked: never unmapped or released
  const Mapping scratch = map_buffer(bytes, ordinal);
  fill(reinterpret_cast<void*>(cache.address), bytes, 1);
  fill(reinterpret_cast<void*>(scratch.address), bytes, 2);
  CHECK_CUDA(cudaDeviceSynchronize());
  unmap_buffer(scratch);

  std::printf("vmm: granularity %zu bytes, each buffer %zu bytes\n", granularity, bytes);
  std::printf("  released: scratch handle %#llx, range %#llx (%zu bytes)\n",
              static_cast<unsigned long long>(scratch.handle),
              static_cast<unsigned long long>(scratch.address), bytes);
  std::printf("  leaked:   cache handle %#llx still mapped at %#llx (%zu bytes), range reserved\n",
              static_cast<unsigned long long>(cache.handle),
              static_cast<unsigned long long>(cache.address), bytes);
  return 0;
}

// Driver virtual memory management: physical handles in memfds, reserved ranges, mappings, access.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <mutex>

#include "cuda_decls.h"
#include "device_state.h"

using namespace fakecuda;

namespace {

bool granular(size_t v) { return v % kVmmGranularity == 0; }

// Device ordinal the allocation lives on, or -1 for host memory.
CUresult location_of(const CUmemAllocationProp* prop, int* device) {
  if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  switch (prop->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      if (!valid_device(prop->location.id)) return CUDA_ERROR_INVALID_DEVICE;
      *device = prop->location.id;
      return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
      *device = -1;
      return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

size_t& charge_for(const PhysicalMemory& phys) {
  static size_t owners_charge = 0;  // imported memory is charged to the process that made it
  if (phys.imported) return owners_charge = 0;
  State& s = state();
  return phys.device < 0 ? s.pinned_host_bytes : s.devices[phys.device].used;
}

void destroy_physical(std::map<CUmemGenericAllocationHandle, PhysicalMemory>::iterator it) {
  close(it->second.fd);
  charge_for(it->second) -= it->second.size;
  state().handles.erase(it);
}

// Put inaccessible anonymous memory back so the range stays reserved and nothing else lands there.
void restore_reservation(uintptr_t base, size_t size) {
  mmap(reinterpret_cast<void*>(base), size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
       -1, 0);
}

// The mappings that exactly tile [ptr, ptr+size), or an empty list if they don't.
std::vector<std::map<uintptr_t, Mapping>::iterator> tiling_mappings(uintptr_t ptr, size_t size) {
  std::vector<std::map<uintptr_t, Mapping>::iterator> out;
  auto& mappings = state().mappings;
  uintptr_t cursor = ptr, end = ptr + size;
  for (auto it = mappings.find(ptr); it != mappings.end() && it->first == cursor && cursor < end; ++it) {
    out.push_back(it);
    cursor += it->second.size;
  }
  if (cursor != end) out.clear();
  return out;
}

bool overlaps_mapping(uintptr_t ptr, size_t size) {
  auto& mappings = state().mappings;
  auto next = mappings.lower_bound(ptr);
  if (next != mappings.end() && next->first < ptr + size) return true;
  if (next == mappings.begin()) return false;
  auto prev = std::prev(next);
  return prev->first + prev->second.size > ptr;
}

}  // namespace

FAKECUDA_API CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                                    CUmemAllocationGranularity_flags option) {
  if (CUresult r = require_init()) return r;
  if (!granularity ||
      (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
    return CUDA_ERROR_INVALID_VALUE;
  int device = 0;
  if (CUresult r = location_of(prop, &device)) return r;
  *granularity = kVmmGranularity;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                  const CUmemAllocationProp* prop, unsigned long long flags) {
  if (CUresult r = require_init()) return r;
  if (!handle || flags != 0 || size == 0 || !granular(size)) return CUDA_ERROR_INVALID_VALUE;
  int device = 0;
  if (CUresult r = location_of(prop, &device)) return r;
  State& s = state();
  std::lock_guard lock(s.mu);
  if (device >= 0 && size > s.devices[device].capacity - s.devices[device].used) return CUDA_ERROR_OUT_OF_MEMORY;
  int fd = memfd_create("fakecuda-vmm", MFD_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  PhysicalMemory phys;
  phys.size = size;
  phys.device = device;
  phys.fd = fd;
  phys.id = s.next_id++;
  charge_for(phys) += size;
  s.handles.emplace(phys.id, phys);
  *handle = phys.id;
  return CUDA_SUCCESS;
}

// Memory goes away once the handle is released and the last mapping of it is unmapped.
FAKECUDA_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  if (CUresult r = require_init()) return r;
  std::lock_guard lock(state().mu);
  auto it = state().handles.find(handle);
  if (it == state().handles.end() || it->second.released) return CUDA_ERROR_INVALID_VALUE;
  if (it->second.retains > 0) {  // a cuMemRetainAllocationHandle reference goes first
    --it->second.retains;
    return CUDA_SUCCESS;
  }
  it->second.released = true;
  if (it->second.mappings == 0) destroy_physical(it);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                          unsigned long long flags) {
  if (CUresult r = require_init()) return r;
  if (!ptr || flags != 0 || size == 0 || size % page_size() != 0 || addr % page_size() != 0 ||
      (alignment & (alignment - 1)) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  size_t align = std::max(alignment, kVmmGranularity);
  constexpr int kFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  uintptr_t base = 0;
  // The address is only a hint, as in CUDA: honour it when that spot is free and aligned.
  if (addr != 0 && addr % align == 0) {
    void* p = mmap(reinterpret_cast<void*>(addr), size, PROT_NONE, kFlags | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != MAP_FAILED && reinterpret_cast<uintptr_t>(p) == addr)
      base = addr;
    else if (p != MAP_FAILED)
      munmap(p, size);
  }
  if (base == 0) {
    if (size > SIZE_MAX - align) return CUDA_ERROR_OUT_OF_MEMORY;
    void* p = mmap(nullptr, size + align, PROT_NONE, kFlags, -1, 0);
    if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    uintptr_t raw = reinterpret_cast<uintptr_t>(p);
    base = round_up(raw, align);
    if (base > raw) munmap(p, base - raw);
    if (raw + align > base) munmap(reinterpret_cast<void*>(base + size), raw + align - base);
  }
  std::lock_guard lock(state().mu);
  state().reservations.emplace(base, size);
  *ptr = base;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  if (CUresult r = require_init()) return r;
  std::lock_guard lock(state().mu);
  auto it = state().reservations.find(ptr);
  if (it == state().reservations.end() || it->second != size || overlaps_mapping(ptr, size))
    return CUDA_ERROR_INVALID_VALUE;
  munmap(reinterpret_cast<void*>(ptr), size);
  state().reservations.erase(it);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                               unsigned long long flags) {
  if (CUresult r = require_init()) return r;
  if (flags != 0 || size == 0 || !granular(ptr) || !granular(size) || !granular(offset))
    return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard lock(s.mu);
  auto h = s.handles.find(handle);
  if (h == s.handles.end() || h->second.released) return CUDA_ERROR_INVALID_VALUE;
  PhysicalMemory& phys = h->second;
  if (offset > phys.size || size > phys.size - offset) return CUDA_ERROR_INVALID_VALUE;
  auto r = s.reservations.upper_bound(ptr);
  if (r == s.reservations.begin()) return CUDA_ERROR_INVALID_VALUE;
  --r;
  if (ptr + size < ptr || ptr + size > r->first + r->second) return CUDA_ERROR_INVALID_VALUE;
  if (overlaps_mapping(ptr, size)) return CUDA_ERROR_INVALID_VALUE;
  // Starts inaccessible: CUDA requires cuMemSetAccess before the range may be touched.
  void* p = mmap(reinterpret_cast<void*>(ptr), size, PROT_NONE, MAP_SHARED | MAP_FIXED, phys.fd,
                 static_cast<off_t>(offset));
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  s.mappings.emplace(ptr, Mapping{size, handle, PROT_NONE});
  ++phys.mappings;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  if (CUresult r = require_init()) return r;
  State& s = state();
  std::lock_guard lock(s.mu);
  auto covered = tiling_mappings(ptr, size);
  if (covered.empty()) return CUDA_ERROR_INVALID_VALUE;
  for (auto m : covered) {
    restore_reservation(m->first, m->second.size);
    auto h = s.handles.find(m->second.handle);
    if (--h->second.mappings == 0 && h->second.released) destroy_physical(h);
    s.mappings.erase(m);
  }
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  if (CUresult r = require_init()) return r;
  if (!desc || count == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  // Every device and the host share one address space here, so the widest grant wins.
  int prot = PROT_NONE;
  for (size_t i = 0; i < count; ++i) {
    const CUmemLocation& loc = desc[i].location;
    if (loc.type == CU_MEM_LOCATION_TYPE_DEVICE) {
      if (!valid_device(loc.id)) return CUDA_ERROR_INVALID_DEVICE;
    } else if (loc.type != CU_MEM_LOCATION_TYPE_HOST && loc.type != CU_MEM_LOCATION_TYPE_HOST_NUMA) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    switch (desc[i].flags) {
      case CU_MEM_ACCESS_FLAGS_PROT_NONE: break;
      case CU_MEM_ACCESS_FLAGS_PROT_READ: prot |= PROT_READ; break;
      case CU_MEM_ACCESS_FLAGS_PROT_READWRITE: prot |= PROT_READ | PROT_WRITE; break;
      default: return CUDA_ERROR_INVALID_VALUE;
    }
  }
  std::lock_guard lock(state().mu);
  auto covered = tiling_mappings(ptr, size);
  if (covered.empty()) return CUDA_ERROR_INVALID_VALUE;
  for (auto m : covered) {
    if (mprotect(reinterpret_cast<void*>(m->first), m->second.size, prot) != 0) return CUDA_ERROR_INVALID_VALUE;
    m->second.prot = prot;
  }
  return CUDA_SUCCESS;
}

// Shared memory on the simulated device: VMM handles exported as file descriptors and imported
// back, cuMemRetainAllocationHandle, CUDA IPC handles and pool pointer export/import. Imported
// memory is charged to its owner, never to this process's device.
//
// Simplification: an IPC handle or pool pointer opened in this process gets memory of its own
// (a fresh mapping of the exporter's size), not an alias of the exporter's bytes: the recorder's
// tests need the calls, addresses and sizes, not the shared contents. VMM handles do share
// their bytes (the memfd is passed along).
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <mutex>

#include "cuda_decls.h"
#include "device_state.h"

using namespace fakecuda;

namespace {

// What an IPC handle and a pool export carry here: the exporter's allocation.
struct SharedPointer {
  uint64_t magic;
  uint64_t base;
  uint64_t size;
  int32_t device;
};
constexpr uint64_t kSharedMagic = 0x66616b6563756461;  // "fakecuda"
static_assert(sizeof(SharedPointer) <= sizeof(CUipcMemHandle::reserved));
static_assert(sizeof(SharedPointer) <= sizeof(CUmemPoolPtrExportData::reserved));

CUresult export_pointer(void* out, CUdeviceptr dptr) {
  if (CUresult r = require_init()) return r;
  std::lock_guard lock(state().mu);
  auto it = state().allocations.find(dptr);
  if (it == state().allocations.end() || it->second.kind == AllocKind::Host ||
      it->second.kind == AllocKind::Imported)
    return CUDA_ERROR_INVALID_VALUE;
  SharedPointer sp{kSharedMagic, dptr, it->second.size, it->second.device};
  std::memcpy(out, &sp, sizeof sp);
  return CUDA_SUCCESS;
}

CUresult open_pointer(CUdeviceptr* out, const void* data) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  *out = 0;
  SharedPointer sp;
  std::memcpy(&sp, data, sizeof sp);
  if (sp.magic != kSharedMagic || sp.size == 0) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  if (CUresult r = current_context(&ctx)) return r;
  std::lock_guard lock(state().mu);
  const size_t charged = round_up(sp.size, kAllocAlignment);
  void* p = map_backing(charged);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  Allocation a;
  a.base = reinterpret_cast<uintptr_t>(p);
  a.size = sp.size;
  a.charged = charged;
  a.kind = AllocKind::Imported;
  a.device = valid_device(sp.device) ? sp.device : ctx->device;
  a.ctx = ctx;
  a.id = state().next_id++;
  state().allocations.emplace(a.base, a);
  *out = a.base;
  return CUDA_SUCCESS;
}

}  // namespace

FAKECUDA_API CUresult cuMemExportToShareableHandle(void* shareable, CUmemGenericAllocationHandle handle,
                                                   CUmemAllocationHandleType type, unsigned long long flags) {
  if (CUresult r = require_init()) return r;
  if (!shareable || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_NOT_SUPPORTED;
  std::lock_guard lock(state().mu);
  auto it = state().handles.find(handle);
  if (it == state().handles.end() || it->second.released) return CUDA_ERROR_INVALID_VALUE;
  int fd = dup(it->second.fd);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *static_cast<int*>(shareable) = fd;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* osHandle,
                                                     CUmemAllocationHandleType type) {
  if (CUresult r = require_init()) return r;
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_NOT_SUPPORTED;
  // For file descriptors CUDA passes the descriptor itself in the pointer.
  const int fd = static_cast<int>(reinterpret_cast<intptr_t>(osHandle));
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size <= 0) return CUDA_ERROR_INVALID_VALUE;
  int own = dup(fd);
  if (own < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard lock(state().mu);
  PhysicalMemory phys;
  phys.size = static_cast<size_t>(st.st_size);
  phys.device = 0;
  phys.fd = own;
  phys.id = state().next_id++;
  phys.imported = true;
  state().handles.emplace(phys.id, phys);
  *handle = phys.id;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  if (CUresult r = require_init()) return r;
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  auto& mappings = state().mappings;
  auto it = mappings.upper_bound(reinterpret_cast<uintptr_t>(addr));
  if (it == mappings.begin()) return CUDA_ERROR_INVALID_VALUE;
  --it;
  if (reinterpret_cast<uintptr_t>(addr) >= it->first + it->second.size) return CUDA_ERROR_INVALID_VALUE;
  auto h = state().handles.find(it->second.handle);
  if (h == state().handles.end()) return CUDA_ERROR_INVALID_VALUE;
  ++h->second.retains;
  if (h->second.released) {  // mapped but released: the retain brings a reference back
    h->second.released = false;
    --h->second.retains;
  }
  *handle = h->first;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuIpcGetMemHandle(CUipcMemHandle* handle, CUdeviceptr dptr) {
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  return export_pointer(handle->reserved, dptr);
}

FAKECUDA_API CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int flags) {
  if (flags & ~CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) return CUDA_ERROR_INVALID_VALUE;
  return open_pointer(pdptr, handle.reserved);
}

FAKECUDA_API CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  if (CUresult r = require_init()) return r;
  std::lock_guard lock(state().mu);
  auto it = state().allocations.find(dptr);
  if (it == state().allocations.end() || it->second.kind != AllocKind::Imported) return CUDA_ERROR_INVALID_VALUE;
  remove_allocation(it);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData* shareData, CUdeviceptr ptr) {
  if (!shareData) return CUDA_ERROR_INVALID_VALUE;
  return export_pointer(shareData->reserved, ptr);
}

// Freed by cuMemFree / cuMemFreeAsync, as in CUDA.
FAKECUDA_API CUresult cuMemPoolImportPointer(CUdeviceptr* ptr_out, CUmemoryPool pool,
                                             CUmemPoolPtrExportData* shareData) {
  if (!pool || !shareData) return CUDA_ERROR_INVALID_VALUE;
  return open_pointer(ptr_out, shareData->reserved);
}

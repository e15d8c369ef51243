// Driver memset/memcpy: device memory is host memory, so these validate the range and then copy.
#include <cstring>
#include <mutex>

#include "cuda_decls.h"
#include "device_state.h"

using namespace fakecuda;

namespace {

CUresult access_error(Access a) {
  switch (a) {
    case Access::Ok: return CUDA_SUCCESS;
    case Access::Fault: return CUDA_ERROR_ILLEGAL_ADDRESS;  // VMM range without cuMemSetAccess
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

// `host_ok`: with unified addressing, cuMemcpy accepts plain host pointers on either side.
CUresult check(uintptr_t ptr, size_t bytes, bool write, bool host_ok) {
  Access a = check_range(ptr, bytes, write);
  if (a == Access::Unknown && host_ok) return CUDA_SUCCESS;
  return access_error(a);
}

CUresult memset_d8(CUdeviceptr dst, unsigned char value, size_t n) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = current_context(&ctx)) return r;
  if (n == 0) return CUDA_SUCCESS;
  std::lock_guard lock(state().mu);  // held so a concurrent free cannot unmap mid-copy
  if (CUresult r = check(dst, n, true, false)) return r;
  std::memset(reinterpret_cast<void*>(dst), value, n);
  return CUDA_SUCCESS;
}

CUresult copy(uintptr_t dst, bool dst_host, uintptr_t src, bool src_host, size_t n) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = current_context(&ctx)) return r;
  if (n == 0) return CUDA_SUCCESS;
  if ((dst_host && !dst) || (src_host && !src)) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  if (CUresult r = check(dst, n, true, dst_host)) return r;
  if (CUresult r = check(src, n, false, src_host)) return r;
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
  return CUDA_SUCCESS;
}

uintptr_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

}  // namespace

FAKECUDA_API CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  return memset_d8(dstDevice, uc, N);
}
FAKECUDA_API CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  return memset_d8(dstDevice, uc, N);
}

FAKECUDA_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  return copy(dstDevice, false, addr(srcHost), true, ByteCount);
}
FAKECUDA_API CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  return copy(dstDevice, false, addr(srcHost), true, ByteCount);
}

FAKECUDA_API CUresult cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  return copy(addr(dstHost), true, srcDevice, false, ByteCount);
}
FAKECUDA_API CUresult cuMemcpyDtoH_v2_ptds(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  return copy(addr(dstHost), true, srcDevice, false, ByteCount);
}

FAKECUDA_API CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  return copy(dstDevice, false, srcDevice, false, ByteCount);
}
FAKECUDA_API CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  return copy(dstDevice, false, srcDevice, false, ByteCount);
}

FAKECUDA_API CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  return copy(dst, true, src, true, ByteCount);
}
FAKECUDA_API CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  return copy(dst, true, src, true, ByteCount);
}

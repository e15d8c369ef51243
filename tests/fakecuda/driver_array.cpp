// CUDA arrays on the simulated device: opaque handles charged to their device with the bytes
// their descriptor asks for (the real driver pads them; nothing here reads their contents).
#include <mutex>
#include <unordered_map>

#include "cuda_decls.h"
#include "device_state.h"

using namespace fakecuda;

struct CUarray_st {
  size_t bytes = 0;
  int device = 0;
};
struct CUmipmappedArray_st {
  size_t bytes = 0;
  int device = 0;
};

namespace {

size_t format_bytes(CUarray_format f) {
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: return 4;
    default: return 0;  // the other formats are not simulated
  }
}

size_t one_if_zero(size_t v) { return v ? v : 1; }

// Bytes of `levels` mip levels; 0 for a descriptor the simulation refuses.
size_t descriptor_bytes(size_t w, size_t h, size_t d, CUarray_format f, unsigned channels, unsigned levels) {
  const size_t element = format_bytes(f) * channels;
  if (w == 0 || element == 0 || (channels != 1 && channels != 2 && channels != 4)) return 0;
  size_t total = 0;
  for (unsigned l = 0; l < levels; ++l) {
    total += one_if_zero(w) * one_if_zero(h) * one_if_zero(d) * element;
    w = w > 1 ? w / 2 : w;
    h = h > 1 ? h / 2 : h;
    d = d > 1 ? d / 2 : d;
  }
  return total;
}

template <typename Array>
CUresult create(Array** out, size_t bytes) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  *out = nullptr;
  CUctx_st* ctx = nullptr;
  if (CUresult r = current_context(&ctx)) return r;
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  Device& dev = state().devices[ctx->device];
  if (bytes > dev.capacity - dev.used) return CUDA_ERROR_OUT_OF_MEMORY;
  dev.used += bytes;
  *out = new Array{bytes, ctx->device};
  return CUDA_SUCCESS;
}

// Handles are checked against the live ones before they are dereferenced.
std::unordered_map<void*, bool> g_live;  // guarded by state().mu

template <typename Array>
CUresult track(Array** out, CUresult r) {
  if (r == CUDA_SUCCESS) {
    std::lock_guard lock(state().mu);
    g_live[*out] = true;
  }
  return r;
}

template <typename Array>
CUresult destroy(Array* a) {
  if (CUresult r = require_init()) return r;
  std::lock_guard lock(state().mu);
  if (g_live.erase(a) == 0) return CUDA_ERROR_INVALID_HANDLE;
  state().devices[a->device].used -= a->bytes;
  delete a;
  return CUDA_SUCCESS;
}

}  // namespace

FAKECUDA_API CUresult cuArrayCreate_v2(CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR* d) {
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  return track(pHandle, create(pHandle, descriptor_bytes(d->Width, d->Height, 0, d->Format, d->NumChannels, 1)));
}

FAKECUDA_API CUresult cuArray3DCreate_v2(CUarray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* d) {
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  return track(pHandle,
               create(pHandle, descriptor_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels, 1)));
}

FAKECUDA_API CUresult cuMipmappedArrayCreate(CUmipmappedArray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* d,
                                             unsigned int levels) {
  if (!d || levels == 0) return CUDA_ERROR_INVALID_VALUE;
  return track(pHandle, create(pHandle, descriptor_bytes(d->Width, d->Height, d->Depth, d->Format,
                                                         d->NumChannels, levels)));
}

FAKECUDA_API CUresult cuArrayDestroy(CUarray hArray) { return destroy(hArray); }
FAKECUDA_API CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
  return destroy(hMipmappedArray);
}

// Array sizes from descriptors (see array_size.h).
#include "interposer/hooks/array_size.h"

namespace gmemhook {
namespace {

// Bytes of one element of a driver array format with `channels` channels; 0 for the video and
// block-compressed formats, whose size is not a whole number of bytes per element (they are
// counted as 0 rather than guessed).
uint64_t element_bytes(CUarray_format format, unsigned channels) {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      return channels;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return 2ull * channels;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
      return 4ull * channels;
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X1:
      return 1;
    case CU_AD_FORMAT_UNORM_INT8X2:
    case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X1:
      return 2;
    case CU_AD_FORMAT_UNORM_INT8X4:
    case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X2:
    case CU_AD_FORMAT_UNORM_INT_101010_2:
      return 4;
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT16X4:
      return 8;
    default:
      return 0;
  }
}

uint64_t at_least_one(uint64_t v) { return v ? v : 1; }

// Elements over `levels` mip levels of a width × height × depth array (0 = dimension absent).
uint64_t elements(uint64_t w, uint64_t h, uint64_t d, unsigned levels) {
  uint64_t total = 0;
  for (unsigned l = 0; l < (levels ? levels : 1); ++l) {
    total += at_least_one(w) * at_least_one(h) * at_least_one(d);
    if (w <= 1 && h <= 1 && d <= 1) break;  // every further level is 1 element too: CUDA refuses them
    w = w > 1 ? w / 2 : w;
    h = h > 1 ? h / 2 : h;
    d = d > 1 ? d / 2 : d;
  }
  return total;
}

}  // namespace

uint64_t array_bytes(const cudaChannelFormatDesc* desc, cudaExtent extent, unsigned levels) {
  if (!desc) return 0;
  const int bits = desc->x + desc->y + desc->z + desc->w;
  if (bits <= 0) return 0;
  return elements(extent.width, extent.height, extent.depth, levels) * static_cast<uint64_t>(bits) /
         8;
}

uint64_t array_bytes(const CUDA_ARRAY_DESCRIPTOR* desc) {
  if (!desc) return 0;
  return elements(desc->Width, desc->Height, 0, 1) * element_bytes(desc->Format, desc->NumChannels);
}

uint64_t array_bytes(const CUDA_ARRAY3D_DESCRIPTOR* desc, unsigned levels) {
  if (!desc) return 0;
  return elements(desc->Width, desc->Height, desc->Depth, levels) *
         element_bytes(desc->Format, desc->NumChannels);
}

}  // namespace gmemhook

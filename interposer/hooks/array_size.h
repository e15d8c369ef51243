// Bytes of a CUDA array, computed from the descriptor the program passed. A lower
// bound: the driver lays arrays out in its own tiled format, padded and aligned as it likes, and
// says nowhere how much it took; format::size_is_lower_bound() marks these entry points.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace gmemhook {

// Runtime arrays: width × height × depth elements of the channel format's bits, over `levels`
// mip levels (each half the previous in every dimension, at least 1). Height or depth 0 means a
// 1D or 2D array.
uint64_t array_bytes(const cudaChannelFormatDesc* desc, cudaExtent extent, unsigned levels);
// Driver arrays.
uint64_t array_bytes(const CUDA_ARRAY_DESCRIPTOR* desc);
uint64_t array_bytes(const CUDA_ARRAY3D_DESCRIPTOR* desc, unsigned levels);

}  // namespace gmemhook

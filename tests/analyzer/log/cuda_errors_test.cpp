// CUDA error numbers with their names, per layer: the runtime and the driver name 2 differently.
#include "analyzer/log/cuda_errors.h"

#include <gtest/gtest.h>

#include "gmemhook/api_table.h"

namespace gmemhook::analysis {
namespace {

uint8_t id(format::ApiId api) { return static_cast<uint8_t>(api); }

TEST(CudaErrors, NamedByTheLayerOfTheEntryPoint) {
  EXPECT_EQ(cuda_error_text(id(format::ApiId::cudaMalloc), 2), "cudaErrorMemoryAllocation (2)");
  EXPECT_EQ(cuda_error_text(id(format::ApiId::cuMemCreate), 2), "CUDA_ERROR_OUT_OF_MEMORY (2)");
  EXPECT_EQ(cuda_error_text(id(format::ApiId::cudaMalloc), 1), "cudaErrorInvalidValue (1)");
}

TEST(CudaErrors, UnknownNumbersAndApisStayNumbers) {
  EXPECT_EQ(cuda_error_text(id(format::ApiId::cudaMalloc), 12345), "error 12345");
  EXPECT_EQ(cuda_error_text(250, 2), "error 2");
}

}  // namespace
}  // namespace gmemhook::analysis

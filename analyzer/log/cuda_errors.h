// CUDA's names for the error numbers an entry point returns, so a report says
// "cudaErrorMemoryAllocation (2)" rather than "error 2".
#pragma once

#include <cstdint>
#include <string>

namespace gmemhook::analysis {

// "cudaErrorMemoryAllocation (2)" for a runtime entry point, "CUDA_ERROR_OUT_OF_MEMORY (2)" for a
// driver one; "error 12345" for a number (or an api id) this table does not know.
std::string cuda_error_text(uint8_t api, uint32_t result);

}  // namespace gmemhook::analysis

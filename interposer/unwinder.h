// Native call stacks of the calling thread, captured with libunwind (linked in statically).
#pragma once

#include <cstddef>
#include <cstdint>

namespace gmemhook {

// Prepares libunwind's per-thread caches and learns this library's own address range.
void init_unwinder();

// Fills `out` with up to `max` return addresses, innermost first, starting at the first frame
// outside libgmemhook.so (the recorder's own frames are never recorded). Returns the count.
size_t capture_stack(uint64_t* out, size_t max);

// True when `address` lies inside libgmemhook.so.
bool is_own_address(uint64_t address);

}  // namespace gmemhook

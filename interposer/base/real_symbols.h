// Finding the real CUDA functions behind our wrappers, and glibc's own dlsym (which we interpose);
// which addresses are our own, so that neither a lookup nor a recorded stack ever ends in them.
#pragma once

#include <cstdint>

#include "gmemhook/format.h"

namespace gmemhook {

// libgmemhook.so's address range, [lo, hi): set by find_own_range() (the unwinder's start-up);
// empty until then.
struct OwnRange {
  uint64_t lo = 0, hi = 0;
};
inline constinit OwnRange g_own_range;

// True when `address` lies inside libgmemhook.so. Inline: asked of every frame recorded.
inline bool is_own_address(uint64_t address) {
  return address - g_own_range.lo < g_own_range.hi - g_own_range.lo;
}

// Learns libgmemhook.so's address range from its program headers.
void find_own_range();

// glibc's dlsym, never ours.
void* real_dlsym(void* handle, const char* name);
// Its address, for the dlsym trampoline's RTLD_NEXT path (resolvers.cpp).
void* glibc_dlsym_address();

// What every copy of libgmemhook.so exports and no other library does: the program's switch
// (include/gmemhook/control.h), which programs look up through RTLD_DEFAULT.
inline constexpr char kHookSymbol[] = "gmemhook_pause_events";

// The file of another copy of libgmemhook.so that comes before this one in the loader's global
// scope (an earlier LD_PRELOAD entry), where the program's calls land first; nullptr when this
// copy is the first.
const char* earlier_hook_copy();

// The definition of `name` in a loaded library other than a copy of libgmemhook.so, or nullptr.
// Also finds libraries loaded with RTLD_LOCAL (torch loads libcudart that way), which
// dlsym(RTLD_NEXT) cannot see.
void* find_real_symbol(const char* name, format::Layer layer);

// The definition of `name` in the library that contains `sibling` (e.g. the libcuda that
// returned a pointer from cuGetProcAddress), or nullptr.
void* find_symbol_beside(const void* sibling, const char* name);

}  // namespace gmemhook

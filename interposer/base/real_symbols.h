// Finding the real CUDA functions behind our wrappers, and glibc's own dlsym (which we interpose).
#pragma once

#include "gmemhook/format.h"

namespace gmemhook {

// glibc's dlsym, never ours.
void* real_dlsym(void* handle, const char* name);
// Its address, for the dlsym trampoline's RTLD_NEXT path (resolvers.cpp).
void* glibc_dlsym_address();

// The definition of `name` in a loaded library other than libgmemhook.so, or nullptr.
// Also finds libraries loaded with RTLD_LOCAL (torch loads libcudart that way), which
// dlsym(RTLD_NEXT) cannot see.
void* find_real_symbol(const char* name, format::Layer layer);

// The definition of `name` in the library that contains `sibling` (e.g. the libcuda that
// returned a pointer from cuGetProcAddress), or nullptr.
void* find_symbol_beside(const void* sibling, const char* name);

}  // namespace gmemhook

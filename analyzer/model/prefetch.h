// Starting the load of a cache line the replay will touch a few events later.
#pragma once

namespace gmemhook::analysis {

inline void prefetch(const void* p) {
#if defined(__x86_64__)
  // GCC 12 drops a __builtin_prefetch whose address depends on a std::vector's size (seen in
  // AddressMap: the prefetch compiled to nothing); asm it cannot drop.
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

}  // namespace gmemhook::analysis

// The scenario's part for a library unloaded and another loaded in its place (dlclose, then
// dlopen): allocations from library A (reload_variant.S), dlclose, the same from library B, which
// the loader usually maps at A's addresses. Each allocation's stack runs through the library's
// function at the same return address in both, from the same call sites, with other frame layouts (recorder_test.cpp,
// Stacks.ReloadedLibraryIsWalkedWithItsOwnRules). Sizes tell the libraries' events apart: A's
// are 1000 + i, B's 2000 + i. Prints "loaded <name> at <load bias>" for each.
#include <link.h>

#include "scenario.h"

namespace {

using Allocate = int (*)(void**, size_t);

// `calls` allocations through `function` of library `path`, then it is closed. noinline: the
// frame above the library's function is this one, in both rounds.
__attribute__((noinline)) void allocate_through(const char* path, const char* function,
                                                size_t first_size, int calls) {
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!library) die(dlerror(), -1);
  link_map* map = nullptr;
  if (dlinfo(library, RTLD_DI_LINKMAP, &map) != 0) die("dlinfo", -1);
  std::printf("loaded %s at 0x%" PRIx64 "\n", function, static_cast<uint64_t>(map->l_addr));
  auto allocate = reinterpret_cast<Allocate>(dlsym(library, function));
  if (!allocate) die(function, -1);
  for (int i = 0; i < calls; ++i) {
    void* p = nullptr;
    CHECK_RT(static_cast<cudaError_t>(allocate(&p, first_size + static_cast<size_t>(i))));
    CHECK_RT(cudaFree(p));
  }
  if (dlclose(library) != 0) die("dlclose", -1);
}

}  // namespace

int reload_library(int calls) {
  struct Library {
    const char* path;
    const char* function;
    size_t first_size;
  };
  const Library libraries[] = {{RELOAD_LIBRARY_A, "allocate_in_a", 1000},
                               {RELOAD_LIBRARY_B, "allocate_in_b", 2000}};
  // One call site for both (volatile: a loop of two unrolled is two call sites): B's stacks are
  // A's, frame for frame.
  volatile int count = 2;
  for (int i = 0; i < count; ++i)
    allocate_through(libraries[i].path, libraries[i].function, libraries[i].first_size, calls);
  return 0;
}

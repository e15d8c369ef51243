// The scenario's part for a library unloaded and another loaded in its place (dlclose, then
// dlopen): allocations from library A (reload_variant.S), dlclose, the same from library B, which
// the loader usually maps at A's addresses. Each allocation's stack runs through the library's
// function at the same return address in both, from the same call sites, with other frame layouts
// (recorder_test.cpp, Stacks.ReloadedLibraryIsWalkedWithItsOwnRules). Sizes tell the libraries'
// events apart: A's are 1000 + i, B's 2000 + i. Prints "loaded <name> at <load bias>" for each.
// `leak_last`: each library's last allocation is never freed, so that `gmemhook leaks` shows one
// of each (the analyzer must name A's after A, though B's stack has the same id and addresses).
#include <link.h>

#include <cerrno>

#include "scenario.h"

namespace {

using Allocate = int (*)(void**, size_t);

// `calls` allocations through `function` of library `path`, then it is closed. noinline: the
// frame above the library's function is this one, in both rounds.
__attribute__((noinline)) void allocate_through(const char* path, const char* function,
                                                size_t first_size, int calls, bool leak_last) {
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
    if (!leak_last || i + 1 < calls) CHECK_RT(cudaFree(p));
  }
  if (dlclose(library) != 0) die("dlclose", -1);
}

}  // namespace

int reload_library(int calls, bool leak_last) {
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
    allocate_through(libraries[i].path, libraries[i].function, libraries[i].first_size, calls,
                     leak_last);
  return 0;
}

// What dlclose returns and leaves in errno and dlerror, for a library opened twice: the first
// close leaves it loaded, the second unloads it (errno set to 1234 before each call: dlclose may
// leave it as it was). The same under the hook's dlclose as without it. Prints "<case> <result>
// <errno> <dlerror or ->" and whether the library is still loaded (RTLD_NOLOAD).
int dlclose_results() {
  auto report = [](const char* name, void* handle) {
    dlerror();
    errno = 1234;
    const int result = dlclose(handle);
    const int after = errno;
    const char* error = dlerror();
    std::printf("%s %d %d %s\n", name, result, after, error ? error : "-");
  };
  void* library = dlopen(RELOAD_LIBRARY_A, RTLD_NOW | RTLD_LOCAL);
  if (!library || dlopen(RELOAD_LIBRARY_A, RTLD_NOW | RTLD_LOCAL) != library) die("dlopen", -1);
  auto loaded = [] {
    void* h = dlopen(RELOAD_LIBRARY_A, RTLD_NOW | RTLD_NOLOAD);
    if (h) dlclose(h);  // NOLOAD took a reference too
    return h != nullptr;
  };
  report("still-referenced", library);
  std::printf("loaded %d\n", loaded());
  report("last", library);
  std::printf("loaded %d\n", loaded());
  return 0;
}

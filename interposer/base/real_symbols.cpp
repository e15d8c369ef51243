// Symbol lookup that skips our own wrappers. Runs the first time each wrapper is called.
#include "interposer/base/real_symbols.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstring>

namespace gmemhook {

namespace {
int find_self(dl_phdr_info* info, size_t, void* data) {
  auto self_base = reinterpret_cast<uintptr_t>(data);
  if (info->dlpi_addr != self_base) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    uint64_t lo = info->dlpi_addr + ph.p_vaddr;
    uint64_t hi = lo + ph.p_memsz;
    if (!g_own_range.lo || lo < g_own_range.lo) g_own_range.lo = lo;
    if (hi > g_own_range.hi) g_own_range.hi = hi;
  }
  return 1;
}
using DlsymFn = void* (*)(void*, const char*);

// dlsym is interposed by us, so glibc's is reached by version: GLIBC_2.34 where libdl was merged
// into libc, GLIBC_2.2.5 on older x86-64 systems.
DlsymFn glibc_dlsym() {
  static std::atomic<DlsymFn> fn{nullptr};
  DlsymFn f = fn.load(std::memory_order_acquire);
  if (!f) {
    f = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34"));
    if (!f) f = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5"));
    fn.store(f, std::memory_order_release);
  }
  return f;
}

// Whether `p` lies in a copy of libgmemhook.so: its object defines the hook's own symbol itself
// (a lookup through a handle also searches what the object needs, hence the object compared).
// Another copy defines every hooked name and only forwards the call: taking its wrapper for the
// real function, a copy would hear of calls that reach nothing (and with no definition behind
// either, two copies would forward each call to the other until the stack ran out).
bool in_hook_copy(const void* p) {
  Dl_info at{};
  if (!dladdr(p, &at) || !at.dli_fname || !*at.dli_fname) return false;
  void* h = dlopen(at.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return false;
  Dl_info marker{};
  void* m = real_dlsym(h, kHookSymbol);
  const bool copy = m && dladdr(m, &marker) && marker.dli_fbase == at.dli_fbase;
  dlclose(h);
  return copy;
}

struct Candidates {
  static constexpr int kMax = 16;
  char paths[kMax][512];
  int count = 0;
  const char* prefix;  // basename prefix to prefer, or nullptr for any object
};

int collect(dl_phdr_info* info, size_t, void* data) {
  auto* c = static_cast<Candidates*>(data);
  const char* name = info->dlpi_name;
  if (!name || !*name || c->count >= Candidates::kMax) return 0;
  if (is_own_address(info->dlpi_addr)) return 0;
  const char* base = std::strrchr(name, '/');
  base = base ? base + 1 : name;
  if (c->prefix && std::strncmp(base, c->prefix, std::strlen(c->prefix)) != 0) return 0;
  size_t n = std::strlen(name);
  if (n >= sizeof(c->paths[0])) return 0;
  std::memcpy(c->paths[c->count++], name, n + 1);
  return 0;
}

void* search(const char* prefix, const char* name) {
  Candidates c;
  c.prefix = prefix;
  dl_iterate_phdr(collect, &c);  // collect first: dlopen must not run inside the callback
  for (int i = 0; i < c.count; ++i) {
    void* h = dlopen(c.paths[i], RTLD_LAZY | RTLD_NOLOAD);
    if (!h) continue;
    void* p = real_dlsym(h, name);
    dlclose(h);
    if (p && !is_own_address(reinterpret_cast<uint64_t>(p)) && !in_hook_copy(p)) return p;
  }
  return nullptr;
}
}  // namespace

void find_own_range() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&find_own_range), &info) && info.dli_fbase) {
    // dli_fbase is the mapping start, which for a shared object equals its load bias.
    dl_iterate_phdr(find_self, info.dli_fbase);
  }
}

const char* earlier_hook_copy() {
  void* first = real_dlsym(RTLD_DEFAULT, kHookSymbol);
  Dl_info theirs{}, mine{};
  if (!first || !dladdr(first, &theirs) ||
      !dladdr(reinterpret_cast<void*>(&earlier_hook_copy), &mine))
    return nullptr;
  // By object, not by our address range: this runs before the unwinder learns it.
  return theirs.dli_fbase != mine.dli_fbase ? theirs.dli_fname : nullptr;
}

void* glibc_dlsym_address() { return reinterpret_cast<void*>(glibc_dlsym()); }

void* real_dlsym(void* handle, const char* name) {
  DlsymFn f = glibc_dlsym();
  return f ? f(handle, name) : nullptr;
}

void* find_real_symbol(const char* name, format::Layer layer) {
  void* p = real_dlsym(RTLD_NEXT, name);
  if (p && !is_own_address(reinterpret_cast<uint64_t>(p)) && !in_hook_copy(p)) return p;
  // The library most likely to define it first: RTLD_NEXT misses libraries loaded RTLD_LOCAL,
  // as Python loads extension modules (and with them libc10.so) and torch loads libcudart.
  const char* prefix = layer == format::Layer::Runtime  ? "libcudart"
                       : layer == format::Layer::Driver ? "libcuda.so"
                                                        : "libc10.so";
  p = search(prefix, name);
  return p ? p : search(nullptr, name);
}

void* find_symbol_beside(const void* sibling, const char* name) {
  Dl_info info{};
  if (!dladdr(sibling, &info) || !info.dli_fname) return nullptr;
  void* h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return nullptr;
  void* p = real_dlsym(h, name);
  dlclose(h);
  return p && !is_own_address(reinterpret_cast<uint64_t>(p)) ? p : nullptr;
}

}  // namespace gmemhook

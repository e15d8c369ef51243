// The dlclose wrapper: after glibc's dlclose returns, a change of the loader's counter of unloads
// moves the unload generation (unload_watch.h), so each thread drops its frame rules and recent
// walks before its next walk. Rule lookups check the counter too (object_table.cpp): that covers
// unloads that never pass through this symbol (glibc's own closes, a namespace's own libc).
#include "interposer/capture/unload_watch.h"

#include <dlfcn.h>

#include <cerrno>

#include "interposer/log/module_map.h"

namespace gmemhook {
namespace {

DlcloseFn real_dlclose() {
  DlcloseFn f = g_unload_watch.real_dlclose.load(std::memory_order_acquire);
  if (!f) {
    // Called before our constructor (another preloaded library's): through the dlsym trampoline
    // with RTLD_NEXT, glibc's definition, the one after ours.
    f = reinterpret_cast<DlcloseFn>(dlsym(RTLD_NEXT, "dlclose"));
    g_unload_watch.real_dlclose.store(f, std::memory_order_release);
  }
  return f;
}

}  // namespace

void init_unload_watch() {
  real_dlclose();
  g_unload_watch.subs_seen.store(current_load_counters().subs, std::memory_order_relaxed);
}

}  // namespace gmemhook

// No allocation and no lock of ours: dl_iterate_phdr (current_load_counters) takes the loader's
// own lock, which glibc's dlclose has released by now (and which is recursive, for a dlclose
// called from a destructor that another dlclose runs). The result and errno are dlclose's.
extern "C" __attribute__((visibility("default"))) int dlclose(void* handle) {
  namespace gm = gmemhook;
  const gm::DlcloseFn f = gm::real_dlclose();
  if (!f) {
    errno = ENOSYS;  // unreachable with glibc: dlclose is always there
    return -1;
  }
  const int result = f(handle);
  const int saved = errno;
  gm::note_unload_counter(gm::current_load_counters().subs);
  errno = saved;
  return result;
}

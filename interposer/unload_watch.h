// Noticing that the loader unloaded an object, so that no thread walks a stack with what it
// learnt from the unloaded code: another object loaded at the same addresses has other frames.
#pragma once

#include <atomic>
#include <cstdint>

#include "event_globals.h"

namespace gmemhook {

// The loader's count of objects unloaded as last seen (event_globals.h). Every event compares
// it with the count its thread's walks were learnt at: one load of a line it reads anyway.
inline uint64_t unloads_seen() { return g_event_globals.unloads.load(std::memory_order_acquire); }

// `subs`: the loader's count now (dlpi_subs). Raises the count seen, never lowers it: a thread
// reading an older count after a newer one was published would drop its rules twice, never
// keep stale ones.
inline void note_unloads(uint64_t subs) {
  std::atomic<uint64_t>& seen = g_event_globals.unloads;
  uint64_t was = seen.load(std::memory_order_relaxed);
  while (subs > was && !seen.compare_exchange_weak(was, subs, std::memory_order_release,
                                                   std::memory_order_relaxed)) {
  }
}

// Resolves glibc's dlclose for the wrapper (unload_watch.cpp); from the library's constructor.
void init_unload_watch();

}  // namespace gmemhook

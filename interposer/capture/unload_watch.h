// Noticing that the loader unloaded an object, so that no thread walks a stack with what it
// learnt from the unloaded code: another object loaded at the same addresses has other frames.
#pragma once

#include <atomic>
#include <cstdint>

#include "interposer/base/event_globals.h"

namespace gmemhook {

// Every event compares the unload generation (event_globals.h) with the one its thread's walks
// were learnt at: one load of a line the event reads anyway.
inline uint64_t unload_generation() {
  return g_event_globals.unload_generation.load(std::memory_order_acquire);
}

using DlcloseFn = int (*)(void*);

// What the watch keeps, off the events' line: read only where the loader's counters are, and by
// the dlclose wrapper.
struct UnloadWatch {
  std::atomic<uint64_t> subs_seen{0};  // glibc's dlpi_subs as last seen
  std::atomic<DlcloseFn> real_dlclose{nullptr};
};
inline constinit UnloadWatch g_unload_watch;

// `subs`: glibc's dlpi_subs now. glibc reports it as objects added minus objects loaded in the
// first namespace, so it is no count: a dlmopen into another namespace moves it too, even
// backwards (seen on glibc 2.36). Any change moves the generation, once the caller's value is
// the one kept. Two callers that read it at different times both move it: an extra generation
// (every thread relearns once), never a missed one (the dlclose wrapper reads it after the
// unload, and returns after moving the generation).
inline void note_unload_counter(uint64_t subs) {
  uint64_t was = g_unload_watch.subs_seen.load(std::memory_order_relaxed);
  while (was != subs) {
    if (g_unload_watch.subs_seen.compare_exchange_weak(was, subs, std::memory_order_relaxed)) {
      g_event_globals.unload_generation.fetch_add(1, std::memory_order_release);
      return;
    }
  }
}

// Resolves glibc's dlclose for the wrapper (unload_watch.cpp) and reads the counter as it is at
// start; from the library's constructor.
void init_unload_watch();

}  // namespace gmemhook

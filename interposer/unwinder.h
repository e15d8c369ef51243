// Native call stacks of the calling thread: the fast unwinder where it can follow every frame,
// libunwind (linked in statically) where it cannot.
#pragma once

#include <cstddef>
#include <cstdint>

#include "config.h"
#include "fast_unwinder.h"

namespace gmemhook {

// Prepares libunwind's per-thread caches and learns this library's own address range.
void init_unwinder();

// Room `scratch` must have for capture_stack: the recorder's own frames come first.
inline constexpr size_t kCaptureScratch = kMaxDepth + 16;

// Up to `max` return addresses, innermost first, starting at the first frame outside
// libgmemhook.so (the recorder's own frames are never recorded). Returns the count and sets
// *frames to where they are: inside `scratch` (kCaptureScratch entries), or inside the fast
// unwinder's copy of a recent walk (valid until the thread's next capture; no copy made).
// `rules` is the calling thread's cache for the fast unwinder (null: libunwind only). The stack
// ends at the first frame whose return address lies in `stop` (fast_unwinder.h), whichever walk
// took it. `salt`: fast_backtrace's (what tells this call path from others, e.g. its Python frame).
// *note: the note of the recent walk that holds the frames (fast_unwinder.h, WalkNote), null when
// the stack is not one; the caller may write it. When its key is `note_key` (not 0) the capture
// ends at once and returns 0 without frames: what the caller noted for this walk still holds.
size_t capture_stack(FrameRuleCache* rules, uint64_t* scratch, const uint64_t** frames, size_t max,
                     StopRange stop, uint64_t salt, uint64_t note_key, WalkNote** note);

// libgmemhook.so's address range, [lo, hi): set by init_unwinder().
inline uint64_t g_self_lo = 0, g_self_hi = 0;

// True when `address` lies inside libgmemhook.so. Inline: asked of every frame recorded.
inline bool is_own_address(uint64_t address) { return address - g_self_lo < g_self_hi - g_self_lo; }

}  // namespace gmemhook

// Native call stacks of the calling thread: the fast unwinder where it can follow every frame,
// libunwind (linked in statically) where it cannot.
#pragma once

#include <cstddef>
#include <cstdint>

#include "interposer/base/config.h"
#include "interposer/base/real_symbols.h"
#include "interposer/base/thread_state.h"
#include "interposer/capture/fast_unwinder.h"

namespace gmemhook {

// Prepares libunwind's per-thread caches and learns this library's own address range
// (real_symbols.h, is_own_address).
void init_unwinder();

// Objects were unloaded (unload_watch.h): libunwind forgets what it decoded from their code, and
// the calling thread's libunwind walks step from now on (below).
void forget_unloaded_code_in_libunwind();

// Room `scratch` must have for capture_stack: the recorder's own frames come first.
inline constexpr size_t kCaptureScratch = kMaxDepth + 16;

// unw_backtrace's fast path keeps a per-thread trace cache that libunwind maps and fills (a few
// hundred KiB) at a thread's first capture and unmaps when the thread exits: for a thread that
// makes one allocation that was most of its cost (2000 short-lived threads took 40× the plain
// run). A thread's first captures step through the frames instead, which needs no per-thread
// memory; only a thread that keeps allocating pays for the cache, once.
// The count is ThreadState::captures (thread_state.h): the recorder loads that struct's TLS offset
// anyway, a thread_local of its own cost a load of one more.
inline constexpr uint32_t kStepCaptures = 32;

// Frames a capture of `max` asks the walk for: the recorder's own come first.
inline int capture_want(size_t max) {
  return static_cast<int>(max + 16 < kCaptureScratch ? max + 16 : kCaptureScratch);
}

// The `n` frames of a walk at `walked` less the recorder's own first ones, at most `max`.
inline size_t own_frames_skipped(const uint64_t* walked, int n, size_t max,
                                 const uint64_t** frames) {
  if (n <= 0) return 0;
  size_t first = 0;
  while (first < static_cast<size_t>(n) && is_own_address(walked[first])) ++first;
  *frames = walked + first;
  return static_cast<size_t>(n) - first < max ? static_cast<size_t>(n) - first : max;
}

// capture_stack apart from its usual case (the fast walk; `fast_tried`: it gave up already).
size_t capture_stack_apart(FrameRuleCache* rules, uint64_t* scratch, const uint64_t** frames,
                           size_t max, StopRange stop, uint64_t salt, uint64_t note_key,
                           WalkNote** note, bool fast_tried);

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
// Inline: the usual case (the fast walk, a recent walk found) is on every allocation's path.
// With GMEMHOOK_STACK_STATS=1 the recorder calls capture_stack_apart instead (it counts walks).
// `fast_unwind`: g_config.fast_unwind, or true where the caller knows it is on (one test less).
__attribute__((always_inline)) inline size_t capture_stack(FrameRuleCache* rules, uint64_t* scratch,
                                                           const uint64_t** frames, size_t max,
                                                           StopRange stop, uint64_t salt,
                                                           uint64_t note_key, WalkNote** note,
                                                           bool fast_unwind) {
  // The thread's first captures went through capture_stack_apart, which also told the cache
  // whether to use recent walks.
  const bool usual = t_state.captures >= kStepCaptures && rules && fast_unwind;
  if (usual) [[likely]] {
    WalkView view{scratch, nullptr};
    const int n = fast_backtrace(*rules, scratch, capture_want(max), stop, salt, &view);
    if (n >= 0) {
      *note = view.note;
      if (view.note && note_key && view.note->key == note_key) return 0;
      return own_frames_skipped(view.frames, n, max, frames);
    }
  }
  return capture_stack_apart(rules, scratch, frames, max, stop, salt, note_key, note, usual);
}

}  // namespace gmemhook

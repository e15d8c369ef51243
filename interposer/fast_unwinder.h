// A walk of the calling thread's stack with cached frame rules (frame_rules.h): on the common
// path no libunwind at all, a table lookup and two loads per frame.
#pragma once

#include <cstddef>
#include <cstdint>

#include "frame_rules.h"

namespace gmemhook {

// One thread's rules by return address and the bounds of the stack it runs on. Its memory comes
// from mmap at the first walk (never malloc: hooks), zeroed = empty. Not thread-safe: each thread
// walks with its own (the recorder keeps one in each thread's log).
class FrameRuleCache {
 public:
  // The cache moves to another thread (a thread log handed on): its rules stay true for the
  // whole process, the stack bounds do not.
  void forget_stack() { stack_lo_ = stack_hi_ = 0; }
  void release();

  // The rule of the frame whose return address is `pc`, looked up at the first meeting. Inline:
  // the hit is the whole per-frame cost of the walk.
  FrameRule rule_at(uint64_t pc) {
    if (entries_) {
      const Entry& e = entries_[(pc * 0x9e3779b97f4a7c15ull) >> (64 - kIndexBits)];
      if (e.pc == pc && e.rule.kind != FrameRule::kUnknown) return e.rule;
    }
    return learn(pc);
  }
  // Sets [*lo, *hi) to the stack mapping that holds `sp`; false when that is unknown.
  bool stack_bounds(uint64_t sp, uint64_t* lo, uint64_t* hi);

 private:
  struct Entry {
    uint64_t pc;
    FrameRule rule;
  };
  static constexpr unsigned kIndexBits = 12;
  static constexpr size_t kEntries = size_t{1} << kIndexBits;  // direct-mapped: 64 KiB, pages
                                                               // touched as used
  FrameRule learn(uint64_t pc);
  Entry* entries_ = nullptr;
  bool failed_ = false;  // mmap failed once: do not retry on every event
  uint64_t stack_lo_ = 0, stack_hi_ = 0;
};

// Writes up to `max` return addresses of the calling thread, innermost first (the first is the
// return address of this call), and returns their count. Returns -1 when a frame needs libunwind:
// no rule of the simple shape (signal frames, DWARF expressions, code without unwind tables), a
// step that would not move outward or would leave the thread's stack mapping. Every load stays
// inside that mapping, between this frame and its top: a wrong rule gives a wrong frame, never a
// fault.
int fast_backtrace(FrameRuleCache& cache, uint64_t* out, int max);

}  // namespace gmemhook

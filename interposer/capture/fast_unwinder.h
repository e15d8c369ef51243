// A walk of the calling thread's stack with cached frame rules (frame_rules.h): on the common
// path no libunwind at all, a table lookup and two loads per frame.
#pragma once

#include <cstddef>
#include <cstdint>

#include "interposer/capture/frame_rules.h"

namespace gmemhook {

// What the walk's user keeps with a recent walk (the recorder: the stack id it interned for the
// walk's frames, and a key of what else that id depends on). The cache never reads it; it is
// zeroed whenever the walk it belongs to is made or replaced, so a note never outlives its walk.
struct WalkNote {
  uint64_t key;  // 0: empty
  uint32_t id;
};

// Where a walk's frames are, and the note of the recent walk they belong to (null: the walk was
// not kept among the recent walks).
struct WalkView {
  const uint64_t* frames = nullptr;
  WalkNote* note = nullptr;
};

// Code where a walk stops: the frame whose return address lies in [lo, hi) is the last one taken
// (the innermost CPython interpreter loop when the event has Python frames, which carry the
// callers from there). lo == hi: the walk goes to the end.
struct StopRange {
  uint64_t lo = 0, hi = 0;
  // One compare: an empty range holds nothing. `pc` is a return address: the call is at pc - 1.
  bool holds(uint64_t pc) const { return pc - 1 - lo < hi - lo; }
  bool operator==(const StopRange&) const = default;
};

class FrameRuleCache;
// The walk of fast_backtrace below, compiled for SSE2 (any x86-64) and for AVX2: a cache walks
// with the one its CPU runs (FrameRuleCache::backtrace_).
using BacktraceFn = int (*)(FrameRuleCache& cache, uint64_t* out, int max, const StopRange& stop,
                            uint64_t salt, WalkView* view);
int fast_backtrace_sse2(FrameRuleCache& cache, uint64_t* out, int max, const StopRange& stop,
                        uint64_t salt, WalkView* view);
int fast_backtrace_avx2(FrameRuleCache& cache, uint64_t* out, int max, const StopRange& stop,
                        uint64_t salt, WalkView* view);

// One thread's rules by return address, the bounds of the stack it runs on, its last walk and
// its recent whole walks.
// A rule is kept until its entry is reused or an object is unloaded: then forget_code() drops
// every rule and walk (the recorder calls it when the unload generation moved,
// unload_watch.h), since an object loaded at the unloaded one's addresses has other frames.
// Its memory comes from mmap at the first walk (never malloc: hooks), zeroed = empty. Not
// thread-safe: each thread walks with its own (the recorder keeps one in each thread's log).
class FrameRuleCache {
 public:
  // The cache moves to another thread (a thread log handed on): its rules stay true for the
  // whole process, the stack bounds and the last walk do not.
  void forget_stack() {
    stack_lo_ = stack_hi_ = 0;
    last_count_ = 0;
    last_frames_hash_ = last_walk_hash();
    last_recent_ = 0;
    hint_ = 0;
    ++generation_;  // the recent walks were made on another stack
  }
  void release();
  // Objects were unloaded since the rules and walks were learnt: all of them go (an unload is
  // rare, and telling which came from the unloaded code would need its range at each entry).
  // The stack bounds stay; the table of objects checks the loader's counts itself.
  void forget_code();
  // fast_backtrace's walk (below), compiled for this CPU.
  int backtrace(uint64_t* out, int max, const StopRange& stop, uint64_t salt, WalkView* view) {
    return backtrace_(*this, out, max, stop, salt, view);
  }
  // Walks with the SSE2 compilation whatever the CPU (tests: both compilations walk alike). The
  // recent walks kept so far are dropped: each compilation finds only its own.
  void walk_with_sse2() {
    backtrace_ = fast_backtrace_sse2;
    forget_stack();
  }
  bool walks_with_avx2() const { return backtrace_ == fast_backtrace_avx2; }
  // Walks that ended by reusing the last walk's frames (for tests and stack statistics).
  uint64_t reused_walks() const { return reused_walks_; }
  // Walks found whole among the recent walks, no rule looked up (tests and stack statistics).
  uint64_t recent_walks_used() const { return recent_used_; }
  // Of those, the walks found by looking them up rather than as the hinted one (stack stats).
  uint64_t recent_walks_looked_up() const { return recent_looked_up_; }
  // A hash of the frames of the last walk when it is among the recent walks (found there or
  // kept; then its view has a note): the same for every recent walk with the same frames.
  uint64_t last_walk_hash() const {
    // A walk found through the hint leaves last_frames_hash_ as it was: the walk used last has it.
    return last_recent_ ? tables_->recent_walks[last_recent_ - 1].frames_hash : last_frames_hash_;
  }
  // Off: no recent walks are looked up or kept (GMEMHOOK_RECENT_WALKS=0, for measuring them).
  void use_recent_walks(bool on) {
    if (recent_off_ != on) return;
    recent_off_ = !on;
    last_frames_hash_ = last_walk_hash();
    last_recent_ = 0;
    hint_ = 0;  // fast_backtrace's usual case is the hinted recent walk
  }
  // Where the tables lie, null before the first walk (tests: how the kernel backs them).
  const void* tables_address() const { return tables_; }
  // Rules learnt from the unwind tables, and times the table of objects was made (stack stats).
  uint64_t rules_learnt() const { return rules_learnt_; }
  uint64_t object_tables_made() const { return tables_ ? tables_->objects.made : 0; }
  // Why the last walk that returned -1 gave up, and at which return address (0: no frame).
  const char* gave_up(uint64_t* pc) const {
    *pc = gave_up_pc_;
    return gave_up_why_;
  }

 private:
  friend int fast_backtrace_sse2(FrameRuleCache& cache, uint64_t* out, int max,
                                 const StopRange& stop, uint64_t salt, WalkView* view);
  friend int fast_backtrace_avx2(FrameRuleCache& cache, uint64_t* out, int max,
                                 const StopRange& stop, uint64_t salt, WalkView* view);

  struct Entry {
    uint64_t pc;
    FrameRule rule;
  };
  // How a walk ended: at the thread's first frame, at a return address of 0, at `max`, or at a
  // frame in its StopRange.
  enum class End : uint8_t { kOutermost, kZero, kMax, kStopped };
  // Rules sit in sets of four, one cache line each, by a hash of the return address: a torch
  // process's stacks meet thousands of return addresses, and a direct-mapped table re-learnt
  // (microseconds each) wherever two of them shared an entry.
  static constexpr unsigned kSetBits = 11;
  static constexpr int kWays = 4;
  static constexpr size_t kMaxSteps = 512;
  // A load from the stack a walk made: where, and what it found.
  struct Load {
    uint64_t at, value;
  };
  // One walk: the registers on entering each frame, and the loads of each step to a caller.
  struct Walk {
    uint64_t rsp[kMaxSteps], rbp[kMaxSteps], pc[kMaxSteps];
    uint32_t first_load[kMaxSteps + 1];  // frame m's loads: [first_load[m], first_load[m + 1])
    Load loads[3 * kMaxSteps];   // a DRAP frame's step loads its CFA, rbp and return address
    bool unused[3 * kMaxSteps];  // a saved rbp that no later rule read (see fast_backtrace)
  };
  struct alignas(64) Set {
    Entry ways[kWays];  // the newest first; a zeroed entry (pc 0) matches no return address
  };
  // A whole walk kept for reuse, found by where it started (the first frame's rsp and return
  // address, and the caller's salt). A training loop repeats the same call paths at the same
  // stack depths, but one after another rather than twice in a row: the last walk alone rarely
  // matches, and walking frame by frame is a chain of dependent rule lookups that the program's
  // own work between two events has evicted from the caches (~40 ns a frame on the H200).
  // Checking a recent walk's loads instead is a run of independent reads of the hot
  // stack. Same argument as for the last walk: equal registers and equal loaded values make the
  // same walk. The first frame is the recorder's own, so its registers tell little more than
  // the depth: the salt (the innermost Python frame, when there is one) tells paths apart, and
  // so does the order a loop repeats: a walk's set is chosen by its start and by the frames of
  // the walk used before it (so more paths at one depth than a set has ways do not evict each
  // other), and each walk remembers which walk came after it, tried first next time.
  static constexpr unsigned kRecentBits = 6;
  static constexpr int kRecentWays = 8;
  static constexpr int kRecentFrames = 80;
  static constexpr int kRecentLoads = 162;  // a walk's loads, and the first frame's two words
  // What a hit reads comes first: the first line says whether the walk starts here, the second
  // holds the note the recorder reads next, and the loads' values and places follow with no gap
  // (a hit reads every line of them, and a walk the program's work pushed out of the near caches
  // costs a miss a line). The first frame's return address and rbp are
  // fast_backtrace's own saved words: they are checked among the loads (rbp only when
  // `uses_rbp`), not apart.
  struct alignas(64) RecentWalk {
    uint64_t generation;  // 0 (zeroed) or not the cache's: empty
    uint64_t rsp, salt;   // the first frame's rsp, and the caller's salt
    StopRange stop;
    uint64_t frames_hash;  // of out[0, count): the same for every copy of one path
    int32_t max;
    uint32_t next;  // the walk used after this one last time: its index + 1 (0: none)
    uint16_t count;
    // The loads in twos at adjacent addresses and alone (stack_words.h). The loads made in
    // this stack's mapping's generation stay inside it: the bounds change only with the
    // generation.
    uint16_t pairs, singles;
    WalkNote note;  // the user's, zeroed when the walk is made
    // What the loads found (a two's values side by side: one operand), then where they were:
    // their places from the walk's own frame (rsp - 16), 4 bytes each, one per two, right after
    // the last value: words() and places().
    alignas(16) uint64_t checked[kRecentLoads + (kRecentLoads + 1) / 2];
    uint64_t out[kRecentFrames];
    // To 43 lines: an odd count spreads the walks' first lines over every set of the caches,
    // and GCC finds a walk from its index with one multiply (at 42 it took three instructions,
    // twice on every hit).
    uint64_t spare[8];
    const uint64_t* words() const { return checked; }
    // How many words the check reads.
    uint32_t words_checked() const { return uint32_t{pairs} * 2 + singles; }
    const uint32_t* places() const {
      return reinterpret_cast<const uint32_t*>(checked + words_checked());
    }
    uint32_t* places() { return reinterpret_cast<uint32_t*>(checked + words_checked()); }
  };
  struct RecentSet {
    // The ways' keys in one cache line: only a way that starts here is read.
    uint64_t key[kRecentWays];
    uint32_t next;  // the way replaced next (round robin)
  };
  static_assert(sizeof(RecentWalk) == 43 * 64);
  static constexpr size_t kRecentSets = size_t{1} << kRecentBits;
  struct Tables {
    Set sets[size_t{1} << kSetBits];  // 128 KiB, pages touched as used
    Walk walks[2];                    // the last walk and the one being made
    ObjectTable objects;              // where learn() finds each object's unwind tables
    RecentSet recent[kRecentSets];
    // Way k of set s is recent_walks[s * kRecentWays + k] (its index): found from an index with
    // one multiply. 1.3 MiB, pages touched as used.
    RecentWalk recent_walks[kRecentSets * kRecentWays];
  };

  // The rule of the frame whose return address is `pc` (never 0), learnt at the first meeting.
  FrameRule rule_at(uint64_t pc) {
    Set& set = tables_->sets[(pc * 0x9e3779b97f4a7c15ull) >> (64 - kSetBits)];
    for (const Entry& e : set.ways)
      if (e.pc == pc) return e.rule;
    return learn(pc, set);
  }
  FrameRule learn(uint64_t pc, Set& set);
  int give_up(uint64_t pc, const char* why) {
    gave_up_pc_ = pc;
    gave_up_why_ = why;
    return -1;
  }
  bool ensure_tables();
  // Sets [*lo, *hi) to the stack mapping that holds `sp`; false when that is unknown.
  bool stack_bounds(uint64_t sp, uint64_t* lo, uint64_t* hi);
  // The rest of a walk that has reached frame `j` of the last walk in the same state: that walk's
  // frames, if every value it loaded from the stack is still there. Returns the new count, or
  // -1 (then the walk goes on frame by frame).
  // `loads`: the loads `cur` holds so far.
  int reuse_last(int j, Walk& cur, uint32_t loads, uint64_t* out, int n, int max, End* end);
  // The registers and salt of a walk's start, as the recent walks look them up (never 0).
  struct Start {
    uint64_t rsp, pc, rbp, salt, key;  // key: recent_key(rsp, pc, salt), 0 until needed
    uint64_t frame;  // where the walk's own frame saved rbp and pc (pc at frame + 8)
  };
  static uint64_t recent_key(uint64_t rsp, uint64_t pc, uint64_t salt) {
    const uint64_t h = ((rsp ^ (pc << 7)) * 0x9e3779b97f4a7c15ull ^ salt) * 0xff51afd7ed558ccdull;
    return h | 1;
  }
  // The walk frame by frame from `s` (fast_backtrace's own frame), when no recent walk is it: a
  // function of its own, so that finding a recent walk pays for none of its registers.
  int walk(const Start& s, uint64_t* out, int max, StopRange stop, uint64_t lo, uint64_t span,
           WalkView* view);
  // fast_backtrace with `Words` checking stack words (stack_words.h): the walk hinted first (the
  // one that came after the last one used, last time), and the rest apart. Inline in its two
  // compilations, fast_backtrace_sse2 and fast_backtrace_avx2.
  template <class Words>
  int backtrace_with(uint64_t* out, int max, const StopRange& stop, uint64_t salt, WalkView* view);
  // Any recent walk that starts at `s`, looked up by s.key (which it sets): its count, or -1. Its
  // frames are copied to `out`, or when `view` is given, it points at the walk's own copy and note.
  int reuse_recent(Start& s, int max, StopRange stop, uint64_t* out, WalkView* view);
  // Recent walk `index` is used now: its count.
  int use_recent(uint32_t index, uint64_t* out, WalkView* view);
  // fast_backtrace apart from its usual case (the hinted recent walk, tried already): `frame`
  // is the walk's own frame address (its caller's rbp and pc are saved there), `rsp` its
  // caller's stack pointer.
  int backtrace_from(uint64_t frame, uint64_t rsp, uint64_t* out, int max, StopRange stop,
                     uint64_t salt, WalkView* view);
  // Whether recent walk `r` is the walk that starts at `rsp` with `salt`, `max` and `stop` now
  // (the first frame's pc and rbp are among its loads), with `Words` checking stack words.
  template <class Words>
  bool recent_holds(const RecentWalk& r, uint64_t rsp, uint64_t salt, int max,
                    const StopRange& stop) const;
  // Keeps the walk just made (walks[which_ ^ 1], `n` frames) among the recent ones; returns its
  // note, or null when it could not be kept.
  WalkNote* keep_recent(const Start& s, int n, int max, StopRange stop, bool uses_rbp);
  // The walk at `index` was used now: the one used before it learns that it came next.
  void follow(uint32_t index);
  // The set of a walk that starts with `key` after the walk last used.
  uint32_t recent_set_index(uint64_t key) const {
    const uint64_t h = (key ^ (last_walk_hash() * 0x9e3779b97f4a7c15ull)) * 0xc4ceb9fe1a85ec53ull;
    return static_cast<uint32_t>(h >> (64 - kRecentBits));
  }
  RecentWalk& recent_at(uint32_t index) { return tables_->recent_walks[index]; }
  static BacktraceFn backtrace_for_this_cpu();

  // What every walk reads first, together: the walk its CPU runs, the tables, the hinted walk.
  // Chosen when the cache is made: a recent walk is only found by the compilation that kept it
  // (the two may lay out the walk's own frame apart).
  BacktraceFn backtrace_ = backtrace_for_this_cpu();
  Tables* tables_ = nullptr;
  uint32_t hint_ = 0;         // the recent walk that came after the last one used: index + 1
  uint32_t last_recent_ = 0;  // the recent walk used last: its index + 1 (0: none)
  uint64_t generation_ = 1;   // recent walks of another generation are ignored
  uint64_t recent_used_ = 0;
  uint64_t recent_looked_up_ = 0;
  bool failed_ = false;  // mmap failed once: do not retry on every event
  uint64_t stack_lo_ = 0, stack_hi_ = 0;
  int which_ = 0;       // walks[which_ ^ 1] is the last walk
  int last_count_ = 0;  // its frames; 0: none to reuse
  End last_end_ = End::kMax;
  StopRange last_stop_;  // the range the last walk stopped at: another range cannot reuse it
  uint64_t reused_walks_ = 0;
  bool recent_off_ = false;
  // The frames_hash of the recent walk used last, set when it was found or kept through the
  // lookup; one found through the hint has it (last_walk_hash()).
  uint64_t last_frames_hash_ = 0;
  uint64_t rules_learnt_ = 0;
  uint64_t gave_up_pc_ = 0;
  const char* gave_up_why_ = nullptr;
};

// Writes up to `max` return addresses of the calling thread, innermost first (the first is the
// return address of this call), and returns their count. Where the walk reaches a frame of the
// last walk in the same state (rsp, rbp, return address), the rest is that walk's frames once
// every return address and rbp it read further up is checked to be unchanged: independent loads
// instead of a chain of dependent ones (a shadow stack). Returns -1 when a frame needs
// libunwind: no rule of the simple shape (signal frames, DWARF expressions, code without unwind
// tables), a step that would not move outward or would leave the thread's stack mapping. Every load
// stays inside that mapping, between this frame and its top: a wrong rule gives a wrong frame,
// never a fault. The walk ends after the first frame whose return address lies in `stop`. `salt`
// tells walks that start alike apart among the recent walks (any value that differs between call
// paths helps; it never changes what a walk returns). `view` (when given) is set to where the
// frames are: `out`, or the cache's own copy of a recent walk found whole, valid until the cache's
// next walk (most walks in a loop: copying them cost more than finding them); and to the note of
// the recent walk found or kept, valid as long as the frames (null when none).
// Inline: one indirect call to the walk compiled for this CPU, whose frame is the walk's first.
inline int fast_backtrace(FrameRuleCache& cache, uint64_t* out, int max, StopRange stop = {},
                          uint64_t salt = 0, WalkView* view = nullptr) {
  return cache.backtrace(out, max, stop, salt, view);
}

}  // namespace gmemhook

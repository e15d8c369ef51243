// The fast unwinder (interposer/capture/fast_unwinder.h) against libunwind's full walk on many
// stacks: -O0 and -O2 frames, with and without frame pointers, frames addressed from rbp, deep
// recursion, other threads, signal handlers (which must go to libunwind). Wherever the fast walk
// answers, its frames must be exactly libunwind's.
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <libunwind.h>
#include <signal.h>

#include <array>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "interposer/capture/fast_unwinder.h"
#include "interposer/capture/frame_rules.h"
#include "interposer/capture/stack_words.h"
#include "unwind_shapes.h"

namespace {

using gmemhook::FrameRule;
using gmemhook::FrameRuleCache;

constexpr int kMax = 300;

// What the probe saw at the bottom of a recursion.
struct Seen {
  int fast_count = 0;
  std::vector<uint64_t> fast;  // from the probe's caller outward
  std::vector<uint64_t> slow;  // libunwind's, from the same frame outward (empty: not found)
  std::set<int> kinds;         // rule kinds of the fast walk's frames
  int max = kMax;
  gmemhook::StopRange stop;
  gmemhook::WalkNote* note = nullptr;  // probe_view's: the note of the walk's recent walk
};

thread_local FrameRuleCache t_cache;
thread_local Seen* t_seen = nullptr;

// Both walks from one frame. fast[0] and libunwind's first frames are inside this function (at
// different calls), so they are compared from this function's caller on.
__attribute__((noinline)) void probe() {
  Seen& s = *t_seen;
  uint64_t fast[kMax];
  void* slow[kMax + 8];
  s.fast_count = gmemhook::fast_backtrace(t_cache, fast, s.max, s.stop);
  int n = unw_backtrace(slow, s.max + 8);
  if (s.fast_count <= 1) return;
  s.fast.assign(fast + 1, fast + s.fast_count);
  for (int i = 0; i < n; ++i) {
    if (reinterpret_cast<uint64_t>(slow[i]) != s.fast[0]) continue;
    // libunwind also walked a few frames of its own and of this probe: cut to the same length.
    int take = n - i < s.max - 1 ? n - i : s.max - 1;
    for (int j = i; j < i + take; ++j) s.slow.push_back(reinterpret_cast<uint64_t>(slow[j]));
    break;
  }
  for (uint64_t pc : s.fast) s.kinds.insert(gmemhook::find_frame_rule(pc - 1).kind);
}

// probe() with a WalkView: the frames may be the cache's own copy, and the walk's note is kept.
__attribute__((noinline)) void probe_view() {
  Seen& s = *t_seen;
  uint64_t fast[kMax];
  void* slow[kMax + 8];
  gmemhook::WalkView view;
  s.fast_count = gmemhook::fast_backtrace(t_cache, fast, s.max, s.stop, 0, &view);
  s.note = view.note;
  int n = unw_backtrace(slow, s.max + 8);
  if (s.fast_count <= 1) return;
  s.fast.assign(view.frames + 1, view.frames + s.fast_count);
  for (int i = 0; i < n; ++i) {
    if (reinterpret_cast<uint64_t>(slow[i]) != s.fast[0]) continue;
    int take = n - i < s.max - 1 ? n - i : s.max - 1;
    for (int j = i; j < i + take; ++j) s.slow.push_back(reinterpret_cast<uint64_t>(slow[j]));
    break;
  }
}

Seen walk(const std::vector<int>& shape, int depth, int max = kMax, gmemhook::StopRange stop = {}) {
  Seen s;
  s.max = max;
  s.stop = stop;
  t_seen = &s;
  unwind_shapes::Walk w{shape.data(), static_cast<int>(shape.size()), probe};
  unwind_shapes::step(depth, w);
  t_seen = nullptr;
  return s;
}

std::string describe(const std::vector<int>& shape, int depth) {
  std::string d = "depth " + std::to_string(depth) + " shape";
  for (int k : shape) d += " " + std::to_string(k);
  return d;
}

void expect_same_as_libunwind(const Seen& s, const std::string& what) {
  ASSERT_GT(s.fast_count, 1) << what << ": the fast walk gave up on ordinary frames";
  ASSERT_FALSE(s.slow.empty()) << what << ": libunwind never passed the probe's caller";
  EXPECT_EQ(s.fast, s.slow) << what;
}

TEST(FastUnwind, MatchesLibunwindOnEachShape) {
  for (int shape : {0, 1, 2, 3, 4}) {
    for (int depth : {1, 2, 8, 33}) {
      Seen s = walk({shape}, depth);
      expect_same_as_libunwind(s, describe({shape}, depth));
    }
  }
}

TEST(FastUnwind, MatchesLibunwindOnMixedStacks) {
  std::mt19937 rng(14);
  std::set<int> kinds;
  for (int round = 0; round < 60; ++round) {
    std::vector<int> shape(1 + rng() % 7);
    for (int& k : shape) k = static_cast<int>(rng() % 5);
    int depth = static_cast<int>(rng() % 120);
    // Twice: the first walk learns the rules, the second reads them from the cache.
    for (int pass = 0; pass < 2; ++pass) {
      Seen s = walk(shape, depth);
      expect_same_as_libunwind(s, describe(shape, depth) + " pass " + std::to_string(pass));
      kinds.insert(s.kinds.begin(), s.kinds.end());
    }
  }
  // The stacks really mixed both kinds of rule (else this test would prove less than it says).
  EXPECT_TRUE(kinds.count(FrameRule::kFromRsp));
  EXPECT_TRUE(kinds.count(FrameRule::kFromRbp));
  EXPECT_TRUE(kinds.count(FrameRule::kDerefRbp));
}

// Two callers alike in every frame below them (same sizes, same return addresses), so the second
// walk meets the first one's frames in the same state: the shadow stack must notice that the
// frame above differs.
__attribute__((noinline)) Seen walk_from_a(const std::vector<int>& shape, int depth) {
  volatile int marker = 1;
  Seen s = walk(shape, depth);
  s.max += marker - 1;
  return s;
}
__attribute__((noinline)) Seen walk_from_b(const std::vector<int>& shape, int depth) {
  volatile int marker = 2;
  Seen s = walk(shape, depth);
  s.max += marker - 2;
  return s;
}

TEST(FastUnwind, ShadowStackNoticesChangedCallers) {
  const std::vector<int> shape{1, 2, 3, 0};
  const uint64_t before = t_cache.reused_walks() + t_cache.recent_walks_used();
  Seen a[2];
  for (Seen& s : a) s = walk_from_a(shape, 20);  // one call site: equal stacks
  expect_same_as_libunwind(a[1], "second walk from a");
  EXPECT_EQ(a[0].fast, a[1].fast);
  const Seen& a2 = a[1];
  EXPECT_GT(t_cache.reused_walks() + t_cache.recent_walks_used(), before)
      << "the repeated walk did not reuse the last one";
  Seen b = walk_from_b(shape, 20);
  expect_same_as_libunwind(b, "walk from b");
  EXPECT_NE(a2.fast, b.fast);
  // A shallower and a deeper stack after it: reuse from a walk that is too short or too long.
  expect_same_as_libunwind(walk_from_a(shape, 3), "shallow");
  expect_same_as_libunwind(walk_from_a(shape, 40), "deep");
  Seen cut_short = walk(shape, 40, 7);
  EXPECT_EQ(cut_short.fast_count, 7);
  expect_same_as_libunwind(cut_short, "max 7 after a full walk");
  Seen full_again = walk(shape, 40);
  expect_same_as_libunwind(full_again, "full walk after a cut one");
}

// Two call paths in turn, as a training loop's allocations come: each walk starts where the
// one before the last did, and is taken whole from the recent walks once its loads are checked —
// while the other path, alike in its first frames, never is.
TEST(FastUnwind, RecentWalksServePathsThatComeInTurn) {
  const std::vector<int> shape{1, 2, 3, 0, 4};
  Seen first_a, first_b;
  uint64_t before = 0;
  for (int round = 0; round < 5; ++round) {
    Seen a = walk_from_a(shape, 10);
    Seen b = walk_from_b(shape, 10);
    expect_same_as_libunwind(a, "a, round " + std::to_string(round));
    expect_same_as_libunwind(b, "b, round " + std::to_string(round));
    if (round == 0) {
      first_a = a;
      first_b = b;
      before = t_cache.recent_walks_used();
      continue;
    }
    EXPECT_EQ(a.fast, first_a.fast);
    EXPECT_EQ(b.fast, first_b.fast);
  }
  EXPECT_NE(first_a.fast, first_b.fast);
  // The first walk after the first pass follows another walk than it did then: it may be
  // walked again.
  EXPECT_GE(t_cache.recent_walks_used() - before, 7u) << "the later rounds' walks were recent ones";
}

// More paths at one depth than a set of recent walks has ways, in a repeating order (as the
// backward pass's allocations come on PyTorch's autograd thread, with no Python frame to tell
// them apart): each is still found whole, and each is its own.
template <int kPath>
__attribute__((noinline)) Seen walk_from_path(const std::vector<int>& shape, int depth) {
  volatile int marker = kPath;
  Seen s = walk(shape, depth);
  s.max += marker - kPath;
  return s;
}

template <int... kPaths>
std::vector<Seen> walk_paths(const std::vector<int>& shape, int depth,
                             std::integer_sequence<int, kPaths...>) {
  return {walk_from_path<kPaths>(shape, depth)...};
}

// walk_from_path's twins for probe_view: the path's frame, then the shape at depth 8.
volatile int g_path_sink = 0;
template <int kPath>
__attribute__((noinline)) void walk_from_path_view(const unwind_shapes::Walk& w) {
  volatile int marker = kPath;
  // Work after the call: a tail call would leave no frame of the path's own.
  g_path_sink = g_path_sink + unwind_shapes::step(8 + marker - kPath, w);
}
using ViewPath = void (*)(const unwind_shapes::Walk&);
template <int... kPaths>
constexpr std::array<ViewPath, sizeof...(kPaths)> view_paths(
    std::integer_sequence<int, kPaths...>) {
  return {walk_from_path_view<kPaths>...};
}
constexpr auto kViewPaths = view_paths(std::make_integer_sequence<int, 12>());

TEST(FastUnwind, RecentWalksServeManyPathsAtOneDepth) {
  const std::vector<int> shape{1, 3, 0};
  std::vector<Seen> first;
  uint64_t before = 0;
  for (int round = 0; round < 4; ++round) {
    std::vector<Seen> paths = walk_paths(shape, 8, std::make_integer_sequence<int, 20>());
    for (size_t p = 0; p < paths.size(); ++p)
      expect_same_as_libunwind(paths[p], "path " + std::to_string(p));
    if (round == 0) {
      first = paths;
      before = t_cache.recent_walks_used();
      continue;
    }
    for (size_t p = 0; p < paths.size(); ++p) EXPECT_EQ(paths[p].fast, first[p].fast) << p;
  }
  for (size_t p = 1; p < first.size(); ++p) EXPECT_NE(first[p].fast, first[0].fast) << p;
  EXPECT_GE(t_cache.recent_walks_used() - before, 3 * 20u - 2) << "later rounds found whole";
}

// Walks that differ only in a return address stored next to a saved rbp that a later frame's
// rule reads (frames with frame pointers): recent walks check such neighbours as one 16-byte
// value, and both halves must count. Each path twice in a row: the walk tried first for the
// other path (the one that came next last time) is then this path's, which must not hold.
Seen walk_via(int (*entry)(int, const unwind_shapes::Walk&), const std::vector<int>& shape,
              int depth) {
  Seen s;
  t_seen = &s;
  unwind_shapes::Walk w{shape.data(), static_cast<int>(shape.size()), probe};
  entry(depth, w);
  t_seen = nullptr;
  return s;
}

TEST(FastUnwind, RecentWalksCheckNeighbouringLoadsWhole) {
  const std::vector<int> shape{3};  // frame pointers all the way down
  Seen first_a, first_b;
  uint64_t before = 0;
  for (int round = 0; round < 4; ++round) {
    // One call site for all four: the paths differ in fp_path_a/b's return address alone.
    Seen walks[4];
    for (int k = 0; k < 4; ++k)
      walks[k] = walk_via(k < 2 ? unwind_shapes::fp_path_a : unwind_shapes::fp_path_b, shape, 12);
    const Seen &a = walks[0], &a2 = walks[1], &b = walks[2], &b2 = walks[3];
    expect_same_as_libunwind(a, "a, round " + std::to_string(round));
    expect_same_as_libunwind(b, "b, round " + std::to_string(round));
    EXPECT_EQ(a.fast, a2.fast);
    EXPECT_EQ(b.fast, b2.fast);
    if (round == 0) {
      first_a = a;
      first_b = b;
      before = t_cache.recent_walks_used();
      continue;
    }
    EXPECT_EQ(a.fast, first_a.fast);
    EXPECT_EQ(b.fast, first_b.fast);
  }
  EXPECT_NE(first_a.fast, first_b.fast);
  EXPECT_GE(t_cache.recent_walks_used() - before, 10u)
      << "the later rounds' walks were recent ones";
}

// Two calls of the walk at one stack depth, from two places in one function: their walks differ
// in the first frame's return address alone, which is fast_backtrace's own saved word (checked
// among the stack words, not as a register). A B A B ... then A A B B ...: at each change of
// order the walk tried first is the other place's (the one that came next last time), which must
// not hold.
struct Sites {
  int site = 0;
  int count = 0;
  uint64_t first = 0;  // the first frame's return address: inside probe_two_sites
  std::vector<uint64_t> rest;
};
thread_local Sites* t_sites = nullptr;

__attribute__((noinline)) void probe_two_sites() {
  Sites& s = *t_sites;
  uint64_t fast_a[kMax], fast_b[kMax];
  const uint64_t* fast = fast_a;
  // Each call followed by code of its own: the compiler cannot make them one call.
  if (s.site == 0) {
    s.count = gmemhook::fast_backtrace(t_cache, fast_a, kMax);
    asm volatile("nop" ::: "memory");
  } else {
    s.count = gmemhook::fast_backtrace(t_cache, fast_b, kMax);
    asm volatile("nop; nop" ::: "memory");
    fast = fast_b;
  }
  if (s.count < 2) return;
  s.first = fast[0];
  s.rest.assign(fast + 1, fast + s.count);
}

void expect_sites_apart() {
  const std::vector<int> shape{3, 1};  // frame pointers below, then rsp-based frames
  Sites first[2];
  std::vector<int> order;
  for (int k = 0; k < 4; ++k) order.insert(order.end(), {0, 1});
  for (int k = 0; k < 3; ++k) order.insert(order.end(), {0, 0, 1, 1});
  for (int k = 0; k < 3; ++k) order.insert(order.end(), {0, 1});
  const uint64_t before = t_cache.recent_walks_used();
  for (size_t i = 0; i < order.size(); ++i) {
    Sites s;
    s.site = order[i];
    t_sites = &s;
    unwind_shapes::step(12, unwind_shapes::Walk{shape.data(), 2, probe_two_sites});
    t_sites = nullptr;
    ASSERT_GT(s.count, 2) << i;
    Sites& f = first[s.site];
    if (f.count == 0) {
      f = s;
      continue;
    }
    EXPECT_EQ(s.first, f.first) << "walk " << i << ": the other call's first frame";
    EXPECT_EQ(s.rest, f.rest) << "walk " << i;
  }
  EXPECT_NE(first[0].first, first[1].first);
  EXPECT_EQ(first[0].rest, first[1].rest);
  EXPECT_GE(t_cache.recent_walks_used() - before, order.size() / 2) << "recent walks were used";
}

TEST(FastUnwind, FirstFrameTellsRecentWalksApart) { expect_sites_apart(); }

// The walk compiled for SSE2 (any x86-64) against libunwind and with its recent walks, on a
// thread of its own (each thread has its cache): on an AVX2 machine nothing else runs it.
TEST(FastUnwind, SseCompilationWalksAlike) {
  std::thread([] {
    t_cache.walk_with_sse2();
    EXPECT_FALSE(t_cache.walks_with_avx2());
    for (int shape : {0, 1, 2, 3, 4}) {
      for (int depth : {1, 8, 33}) {
        for (int pass = 0; pass < 3; ++pass) {
          Seen s = walk({shape}, depth);
          expect_same_as_libunwind(s, describe({shape}, depth) + " pass " + std::to_string(pass));
        }
      }
    }
    expect_sites_apart();
  }).join();
}

// What the recorder keeps with a recent walk (its stack id, in a WalkNote) is handed back only
// with that same walk. Each walk's note is written as the recorder writes it (when empty, with its
// path's key) and must hold that path's key whenever it is found again: two paths that differ in
// one return address next to a saved rbp, a walk cut at another depth, and a walk made again after
// the cache forgot its stack (whose note starts empty).
TEST(FastUnwind, NotesStayWithTheirWalks) {
  const std::vector<int> shape{3};
  // Every walk from this one call site: the paths differ only where fp_path_a/b were entered.
  enum Step { kA, kB, kACut, kForget };
  const std::vector<Step> steps{kA, kB, kA, kB, kA, kB, kA, kB, kACut, kA, kForget, kA, kB, kA};
  int found_noted = 0;
  std::vector<uint64_t> first_a, first_b;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i] == kForget) {
      t_cache.forget_stack();  // a thread log handed to another thread
      continue;
    }
    Seen s;
    s.max = steps[i] == kACut ? 7 : kMax;
    t_seen = &s;
    unwind_shapes::Walk w{shape.data(), static_cast<int>(shape.size()), probe_view};
    (steps[i] == kB ? unwind_shapes::fp_path_b : unwind_shapes::fp_path_a)(12, w);
    t_seen = nullptr;
    const std::string what = "step " + std::to_string(i);
    expect_same_as_libunwind(s, what);
    ASSERT_NE(s.note, nullptr) << what << ": a walk kept among the recent ones has a note";
    const uint64_t key = steps[i] == kA ? 0xa : steps[i] == kB ? 0xb : 0xc;
    if (i > 0 && steps[i - 1] == kForget) {
      EXPECT_EQ(s.note->key, 0u) << what << ": a note outlived the cache's generation";
    }
    if (s.note->key == 0) {
      *s.note = gmemhook::WalkNote{key, 1};
    } else {
      EXPECT_EQ(s.note->key, key) << what << ": another walk's note";
      ++found_noted;
    }
    auto& first = steps[i] == kB ? first_b : first_a;
    if (steps[i] != kACut) {
      if (first.empty()) first = s.fast;
      EXPECT_EQ(s.fast, first) << what;
    }
  }
  EXPECT_NE(first_a, first_b);
  EXPECT_GE(found_noted, 5) << "walks found again with their notes";
}

// Twelve paths at one depth, path 0 every other time and the others in turn between: the walks
// of paths 1-11 all follow path 0's and compete for one set of recent walks, more of them than it
// has ways, so they replace each other. A walk that takes another's place starts with an empty
// note: the recorder's key is the same for every native-only stack of a thread, so a note left
// behind would hand the old walk's stack id to the new one.
TEST(FastUnwind, NotesDoNotPassToTheWalkThatTakesTheirPlace) {
  const std::vector<int> shape{1, 3, 0};
  int found_noted = 0;
  std::map<int, std::vector<uint64_t>> stacks;  // by path
  for (int round = 0; round < 3; ++round) {
    for (int k = 1; k < 12; ++k) {
      for (int path : {0, k}) {
        Seen s;
        t_seen = &s;
        unwind_shapes::Walk w{shape.data(), static_cast<int>(shape.size()), probe_view};
        (path == 0 ? walk_from_path_view<0> : kViewPaths[path])(w);
        t_seen = nullptr;
        const std::string what = "round " + std::to_string(round) + " path " + std::to_string(path);
        expect_same_as_libunwind(s, what);
        ASSERT_NE(s.note, nullptr) << what;
        auto [known, first] = stacks.emplace(path, s.fast);
        if (!first) {
          EXPECT_EQ(s.fast, known->second) << what;
        }
        if (s.note->key == 0) {
          *s.note = gmemhook::WalkNote{0x100u + static_cast<uint64_t>(path), 1};
        } else {
          EXPECT_EQ(s.note->key, 0x100u + static_cast<uint64_t>(path)) << what;
          ++found_noted;
        }
      }
    }
  }
  EXPECT_GE(found_noted, 11) << "walks found again with their notes";
  std::set<std::vector<uint64_t>> distinct;
  for (const auto& [path, frames] : stacks) distinct.insert(frames);
  EXPECT_EQ(distinct.size(), 12u) << "each path a stack of its own";
}

// The check behind every recent walk reused: SSE2 and, where the CPU has it, AVX2 say the same —
// nothing differs when nothing changed, and a change to any one word checked, in any position
// (each half of a two, a lone word, the tails after the four-two and two-two steps, and after
// the eight-word, four-word and two-word steps of lone words), is seen.
TEST(StackWords, EveryChangedWordIsSeen) {
  alignas(32) uint64_t stack[512];
  alignas(32) uint64_t value[200];
  uint32_t at[200];  // places from the base, the stack's start
  const auto base = reinterpret_cast<uint64_t>(stack);
  std::mt19937_64 rng(14);
  for (uint64_t& w : stack) w = rng();
  const bool avx2 = gmemhook::cpu_runs_avx2();
  int layouts = 0;
  for (int pairs = 0; pairs <= 19; ++pairs) {
    for (int singles : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 17}) {
      // Twos at 16-byte-aligned spots apart from each other, lone words between them. A two
      // keeps one address, its two values side by side; the lone words follow.
      std::vector<uint64_t*> words;  // every word checked, to change each in turn
      for (int p = 0; p < pairs; ++p) {
        uint64_t* w = &stack[8 + p * 12 + (p % 3) * 2];
        at[p] = static_cast<uint32_t>((w - stack) * 8);
        value[2 * p] = w[0];
        value[2 * p + 1] = w[1];
        words.push_back(w);
        words.push_back(w + 1);
      }
      for (int k = 0; k < singles; ++k) {
        uint64_t* w = &stack[300 + k * 7];
        at[pairs + k] = static_cast<uint32_t>((w - stack) * 8);
        value[2 * pairs + k] = *w;
        words.push_back(w);
      }
      ++layouts;
      EXPECT_EQ(gmemhook::stack_words_differ_sse2(base, at, value, pairs, singles), 0u)
          << pairs << " " << singles;
      if (avx2) {
        EXPECT_EQ(gmemhook::stack_words_differ_avx2(base, at, value, pairs, singles), 0u);
      }
      for (size_t i = 0; i < words.size(); ++i) {
        const uint64_t keep = *words[i];
        *words[i] ^= uint64_t{1} << (i % 64);
        EXPECT_NE(gmemhook::stack_words_differ_sse2(base, at, value, pairs, singles), 0u)
            << "word " << i << " of " << words.size() << ", " << pairs << " twos";
        if (avx2) {
          EXPECT_NE(gmemhook::stack_words_differ_avx2(base, at, value, pairs, singles), 0u)
              << "word " << i << " of " << words.size() << ", " << pairs << " twos";
        }
        *words[i] = keep;
      }
      // A word next to a two or between lone words is not checked: changing it changes nothing.
      stack[7] ^= 1;
      stack[301] ^= 1;
      EXPECT_EQ(gmemhook::stack_words_differ_sse2(base, at, value, pairs, singles), 0u);
      if (avx2) {
        EXPECT_EQ(gmemhook::stack_words_differ_avx2(base, at, value, pairs, singles), 0u);
      }
    }
  }
  EXPECT_EQ(layouts, 260);
  if (!avx2) GTEST_SKIP() << "no AVX2 here: only the SSE2 check was tried";
}

// The recorder stops a walk at the innermost interpreter-loop call: the frame whose return
// address lies in the range is the last, whether the walk steps or reuses the last walk's frames,
// and a walk with another range (or none) never reuses a stopped one.
TEST(FastUnwind, StopsAtTheFirstFrameInItsRange) {
  const std::vector<int> shape{1, 2, 3, 0};
  // Every walk from one call site (the loop below), so that a whole walk can be compared.
  struct Case {
    const char* what;
    int max;
    uint64_t lo, hi;  // the range as offsets from `at`: filled in after the first walk
    bool stops;
  };
  const Case cases[] = {
      {"full", kMax, 0, 0, false},
      {"stopped", kMax, 1, 0, true},
      {"stopped again (reusing the last walk)", kMax, 1, 0, true},
      {"no range after a stopped walk", kMax, 0, 0, false},
      {"the range after a full walk", kMax, 1, 0, true},
      {"a range holding no frame", kMax, 0, 1, false},
      {"max reached at the frame in the range", -1, 1, 0, true},
  };
  std::vector<uint64_t> full, expected;
  uint64_t at = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const gmemhook::StopRange stop =
        c.lo || c.hi ? gmemhook::StopRange{at - c.lo, at + c.hi} : gmemhook::StopRange{};
    const int max = c.max > 0 ? c.max : static_cast<int>(expected.size()) + 1;
    Seen s = walk(shape, 20, max, stop);
    if (full.empty()) {
      expect_same_as_libunwind(s, "full");
      full = s.fast;
      ASSERT_GT(full.size(), 12u);
      at = full[10];
      size_t first = 0;  // a recursion repeats return addresses: the first one stops the walk
      while (full[first] != at) ++first;
      expected.assign(full.begin(), full.begin() + static_cast<long>(first) + 1);
      continue;
    }
    EXPECT_EQ(s.fast, c.stops ? expected : full);
  }
}

TEST(FastUnwind, DeepRecursionStopsAtMax) {
  Seen full = walk({0, 1, 2, 3}, 280);
  EXPECT_EQ(full.fast_count, kMax);
  expect_same_as_libunwind(full, "depth 280");
  Seen cut = walk({1, 3}, 50, 6);
  EXPECT_EQ(cut.fast_count, 6);
  expect_same_as_libunwind(cut, "max 6");
}

TEST(FastUnwind, MatchesLibunwindOnOtherThreads) {
  // A thread's outermost frame (clone3's) ends the walk as it does for libunwind.
  for (int t = 0; t < 4; ++t) {
    Seen s;
    std::thread([&] { s = walk({t % 4, (t + 1) % 4}, 10 + 20 * t); }).join();
    expect_same_as_libunwind(s, "thread " + std::to_string(t));
  }
}

// The kernel's account of the mapping that holds `address` (/proc/self/smaps): its "VmFlags:"
// line and its KiB in huge pages.
struct Mapping {
  std::string flags;
  long huge_kib = -1;
};
Mapping mapping_of(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uint64_t>(address);
  bool inside = false;
  Mapping m;
  for (std::string line; std::getline(smaps, line);) {
    uint64_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64 " ", &lo, &hi) == 2 &&
        line.find(':') > line.find('-') + 1) {
      if (inside) break;
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      m.huge_kib = std::stol(line.substr(14));
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      m.flags = line;
    }
  }
  return m;
}

// A thread's tables are large and used sparsely (the recent walks alone are 1.4 MiB): where
// transparent huge pages are "always", the kernel backed each 2 MiB of them that a walk touched
// with a huge page, ~2 MiB of memory for each thread that records. They opt out ("nh"), so only
// the pages walks touch are memory. (Only the flag tells: this machine's setting may not be
// "always", and the mapping merges with other threads' tables, so its size says nothing.)
TEST(FastUnwind, TablesAreNeverBackedByHugePages) {
  Mapping m;
  std::thread([&] {
    for (int depth : {4, 20, 60}) walk({1, 2}, depth);
    ASSERT_NE(t_cache.tables_address(), nullptr);
    m = mapping_of(t_cache.tables_address());
  }).join();
  EXPECT_NE(m.flags.find(" nh"), std::string::npos) << m.flags;
  EXPECT_EQ(m.huge_kib, 0) << "-1: the tables' mapping was not found";
}

// In a signal handler the walk meets the kernel's signal frame: no simple rule there, so the
// fast walk hands the stack to libunwind (-1) rather than guess. On an alternate signal stack it
// must first find that stack's bounds, and still never read outside them.
volatile int g_handler_fast_count = 0;

void on_signal(int) {
  static const int shape[] = {1, 2};
  Seen s;
  t_seen = &s;
  unwind_shapes::step(5, unwind_shapes::Walk{shape, 2, probe});
  t_seen = nullptr;
  g_handler_fast_count = s.fast_count;
}

void raise_with_handler(bool alternate_stack) {
  std::vector<char> alt(1 << 16);
  stack_t ss{};
  if (alternate_stack) {
    ss.ss_sp = alt.data();
    ss.ss_size = alt.size();
    ASSERT_EQ(sigaltstack(&ss, nullptr), 0);
  }
  struct sigaction sa {
  }, old{};
  sa.sa_handler = on_signal;
  sa.sa_flags = alternate_stack ? SA_ONSTACK : 0;
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  g_handler_fast_count = 0;
  raise(SIGUSR1);
  sigaction(SIGUSR1, &old, nullptr);
  if (alternate_stack) {
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, nullptr);
  }
  EXPECT_EQ(g_handler_fast_count, -1);
}

TEST(FastUnwind, SignalFramesGoToLibunwind) {
  raise_with_handler(false);
  raise_with_handler(true);
  // The thread's own stack again afterwards: its bounds are found anew.
  expect_same_as_libunwind(walk({1, 2}, 12), "after the handlers");
}

// The rules themselves on frames whose shape is known.
TEST(FrameRules, KnownShapes) {
  Seen o2 = walk({1}, 4);
  Seen vla = walk({2}, 4);
  ASSERT_GT(o2.fast_count, 3);
  ASSERT_GT(vla.fast_count, 3);
  // fast[1] is the frame inside frame_o2 / frame_vla (after its call of step).
  FrameRule r = gmemhook::find_frame_rule(o2.fast[1] - 1);
  EXPECT_EQ(r.kind, FrameRule::kFromRsp);
  EXPECT_EQ(r.ra_offset, -8);
  r = gmemhook::find_frame_rule(vla.fast[1] - 1);
  EXPECT_EQ(r.kind, FrameRule::kFromRbp);
  EXPECT_EQ(r.cfa_offset, 16);
  EXPECT_EQ(r.rbp_offset, -16);
  Seen drap = walk({4}, 4);
  ASSERT_GT(drap.fast_count, 3);
  r = gmemhook::find_frame_rule(drap.fast[1] - 1);
  EXPECT_EQ(r.kind, FrameRule::kDerefRbp);
  EXPECT_EQ(r.cfa_offset, -8);
  EXPECT_EQ(r.rbp_offset, 0);
  // Addresses without unwind tables: nothing mapped, and a data object.
  EXPECT_EQ(gmemhook::find_frame_rule(16).kind, FrameRule::kUnsupported);
  static const char data[64] = {};
  EXPECT_EQ(gmemhook::find_frame_rule(reinterpret_cast<uint64_t>(data)).kind,
            FrameRule::kUnsupported);
}

bool same_rule(const FrameRule& a, const FrameRule& b) {
  return a.kind == b.kind && a.ra_offset == b.ra_offset && a.rbp_offset == b.rbp_offset &&
         a.cfa_offset == b.cfa_offset;
}

// The remembered table of objects answers as a scan of every object does; it is made again when
// an object is loaded, and never reads one that was unloaded.
TEST(FrameRules, ObjectTableFollowsLoadsAndUnloads) {
  auto table = std::make_unique<gmemhook::ObjectTable>();
  Seen s = walk({0, 1, 2, 3, 4}, 30);
  ASSERT_GT(s.fast_count, 20);
  for (uint64_t pc : s.fast)
    EXPECT_TRUE(same_rule(gmemhook::find_frame_rule(pc - 1, nullptr, table.get()),
                          gmemhook::find_frame_rule(pc - 1)));
  EXPECT_EQ(table->made, 1u) << "made once, then answered from";
  EXPECT_TRUE(table->valid);

  void* lib = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) GTEST_SKIP() << "libz.so.1 not found: " << dlerror();
  auto code = reinterpret_cast<uint64_t>(dlsym(lib, "crc32"));
  ASSERT_NE(code, 0u);
  const FrameRule scanned = gmemhook::find_frame_rule(code + 1);
  EXPECT_NE(scanned.kind, FrameRule::kUnsupported) << "crc32 has unwind tables";
  EXPECT_TRUE(same_rule(gmemhook::find_frame_rule(code + 1, nullptr, table.get()), scanned));
  EXPECT_EQ(table->made, 2u) << "a loaded object makes the table again";
  // Unloaded: nothing is there any more, whatever the table held.
  Dl_info info{};
  const bool unloaded = dlclose(lib) == 0 && !dladdr(reinterpret_cast<void*>(code), &info);
  if (!unloaded) GTEST_SKIP() << "libz.so.1 stayed loaded (another user holds it)";
  const char* why = nullptr;
  EXPECT_EQ(gmemhook::find_frame_rule(code + 1, &why, table.get()).kind, FrameRule::kUnsupported);
  EXPECT_STREQ(why, "not in any loaded object");
  EXPECT_EQ(table->made, 3u);
  EXPECT_TRUE(same_rule(gmemhook::find_frame_rule(s.fast[0] - 1, nullptr, table.get()),
                        gmemhook::find_frame_rule(s.fast[0] - 1)));
}

}  // namespace

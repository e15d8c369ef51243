// The fast stack walk and its per-thread rule cache (see fast_unwinder.h).
#include "interposer/capture/fast_unwinder.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include "interposer/capture/stack_words.h"

namespace gmemhook {

namespace {

// Parses "lo-hi perms ..." of one /proc/self/maps line; true when it is a readable mapping that
// holds `sp`.
bool line_holds(const char* s, const char* end, uint64_t sp, uint64_t* lo, uint64_t* hi) {
  uint64_t v[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    for (; s < end; ++s) {
      char c = *s;
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) break;
      v[k] = v[k] << 4 | static_cast<uint64_t>(d);
    }
    if (s == end || *s != (k == 0 ? '-' : ' ')) return false;
    ++s;
  }
  if (s == end || *s != 'r' || sp < v[0] || sp >= v[1]) return false;
  *lo = v[0];
  *hi = v[1];
  return true;
}

// The readable mapping that holds `sp`, from /proc/self/maps with plain system calls: no
// malloc, no stdio lock (pthread_getattr_np mallocs, and reads this same file for the main thread).
bool read_stack_mapping(uint64_t sp, uint64_t* lo, uint64_t* hi) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  size_t have = 0;
  bool skipping = false;  // inside a line longer than the buffer (its start was already seen)
  bool found = false;
  while (!found) {
    ssize_t n = read(fd, buf + have, sizeof(buf) - have);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    have += static_cast<size_t>(n);
    size_t start = 0;
    for (size_t i = 0; i < have && !found; ++i) {
      if (buf[i] != '\n') continue;
      if (!skipping) found = line_holds(buf + start, buf + i, sp, lo, hi);
      skipping = false;
      start = i + 1;
    }
    if (start == 0 && have == sizeof(buf)) {
      if (!skipping) found = line_holds(buf, buf + have, sp, lo, hi);
      skipping = true;
      have = 0;
      continue;
    }
    std::memmove(buf, buf + start, have - start);
    have -= start;
  }
  close(fd);
  return found;
}

}  // namespace

BacktraceFn FrameRuleCache::backtrace_for_this_cpu() {
  return cpu_runs_avx2() ? fast_backtrace_avx2 : fast_backtrace_sse2;
}

void FrameRuleCache::release() {
  forget_stack();
  if (tables_) munmap(tables_, sizeof(Tables));
  tables_ = nullptr;
  failed_ = false;
}

void FrameRuleCache::forget_code() {
  last_count_ = 0;
  last_frames_hash_ = 0;
  last_recent_ = 0;
  hint_ = 0;
  ++generation_;  // the recent walks, and the notes on them
  if (!tables_) return;
  // The rule sets are the tables' first 128 KiB, whole pages: given back, they read as zeroes
  // (empty) again, without touching a page the thread never used.
  static_assert(offsetof(Tables, sets) == 0 && sizeof(Tables::sets) % 4096 == 0);
  if (madvise(tables_->sets, sizeof(tables_->sets), MADV_DONTNEED) != 0)
    for (Set& set : tables_->sets) set = Set{};
}

bool FrameRuleCache::ensure_tables() {
  if (tables_) return true;
  if (failed_) return false;
  // 2.2 MiB, the recent walks 1.4 MiB of it, of which a thread's walks touch a few pages. Where
  // transparent huge pages are "always", the kernel would back every 2 MiB of it that is touched
  // with a huge page (and khugepaged would collapse the rest): ~2 MiB of memory for each thread
  // that records. Not reserved either: memory is what the walks touch.
  void* m = mmap(nullptr, sizeof(Tables), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) {
    failed_ = true;
    return false;
  }
  madvise(m, sizeof(Tables), MADV_NOHUGEPAGE);  // fails only where the kernel has no THP
  tables_ = static_cast<Tables*>(m);
  return true;
}

FrameRule FrameRuleCache::learn(uint64_t pc, Set& set) {
  // pc - 1: a return address may be the first byte after the function that made the call.
  const FrameRule rule = find_frame_rule(pc - 1, nullptr, &tables_->objects);
  ++rules_learnt_;
  // The oldest of the set makes room (insertion order: no bookkeeping on the hits).
  for (int w = kWays - 1; w > 0; --w) set.ways[w] = set.ways[w - 1];
  set.ways[0] = Entry{pc, rule};
  return rule;
}

bool FrameRuleCache::stack_bounds(uint64_t sp, uint64_t* lo, uint64_t* hi) {
  if (sp < stack_lo_ || sp >= stack_hi_) {
    // A new thread, a main stack that grew, or a signal handler on an alternate stack. The last
    // walk's loads were checked against the old bounds only.
    last_count_ = 0;
    ++generation_;
    if (!read_stack_mapping(sp, &stack_lo_, &stack_hi_)) {
      forget_stack();
      return false;
    }
  }
  *lo = stack_lo_;
  *hi = stack_hi_;
  return true;
}

int FrameRuleCache::reuse_last(int j, Walk& cur, uint32_t loads, uint64_t* out, int n, int max,
                               End* end) {
  const Walk& last = tables_->walks[which_ ^ 1];
  const int available = last_count_ - j;
  const int take = available < max - n ? available : max - n;
  // Cut short by its own max, the last walk does not know the frames this one needs.
  if (take < max - n && last_end_ == End::kMax) return -1;
  // From equal registers the walk repeats the last one's steps as long as what it loads is
  // equal: the loads of the steps between the frames taken, and when the last walk's end is
  // reached, those that ended it. All at addresses known now, inside the same stack mapping.
  const uint32_t from = last.first_load[j];
  const uint32_t to = last.first_load[take == available ? last_count_ : j + take - 1];
  uint64_t differ = 0;
  for (uint32_t i = from; i < to; ++i)
    differ |= *reinterpret_cast<const uint64_t*>(last.loads[i].at) ^ last.loads[i].value;
  if (differ) return -1;
  *end = take == available ? last_end_ : End::kMax;
  if (n == 0 && j == 0 && take == available) {
    // The same stack as last time: the last walk stays the last walk.
    std::memcpy(out, last.pc, static_cast<size_t>(take) * sizeof(uint64_t));
    which_ ^= 1;  // fast_backtrace flips it back
    return take;
  }
  for (int m = 0; m < take; ++m) {
    cur.rsp[n + m] = last.rsp[j + m];
    cur.rbp[n + m] = last.rbp[j + m];
    cur.pc[n + m] = out[n + m] = last.pc[j + m];
    cur.first_load[n + m] = loads + (last.first_load[j + m] - from);
  }
  std::memcpy(cur.loads + loads, last.loads + from, (to - from) * sizeof(Load));
  std::memcpy(cur.unused + loads, last.unused + from, (to - from) * sizeof(bool));
  cur.first_load[n + take] = loads + (to - from);
  return n + take;
}

// The stack-word checks of the walk's two compilations (stack_words.h).
// Inline in the walk: a call made it spill what it holds around the check.
struct SseWords {
  __attribute__((always_inline)) static uint64_t differ(uint64_t base, const uint32_t* at,
                                                        const uint64_t* value, int pairs,
                                                        int singles) {
    return stack_words_differ_sse2(base, at, value, pairs, singles);
  }
};
struct Avx2Words {
  __attribute__((always_inline)) static uint64_t differ(uint64_t base, const uint32_t* at,
                                                        const uint64_t* value, int pairs,
                                                        int singles) {
    return stack_words_differ_avx2(base, at, value, pairs, singles);
  }
};

template <class Words>
__attribute__((always_inline)) inline bool FrameRuleCache::recent_holds(
    const RecentWalk& r, uint64_t rsp, uint64_t salt, int max, const StopRange& stop) const {
  // One branch for the start: a walk of this stack's generation loaded inside its bounds, which
  // change only with the generation. Then independent loads (checking is most of a hit's cost):
  // equal registers and equal loaded values make the same walk.
  const uint64_t start_differs = (r.generation ^ generation_) | (r.rsp ^ rsp) | (r.salt ^ salt) |
                                 static_cast<uint64_t>(r.max ^ max) | (r.stop.lo ^ stop.lo) |
                                 (r.stop.hi ^ stop.hi);
  // The places are from the walk's own frame, 16 bytes below the first frame's rsp.
  return start_differs == 0 &&
         Words::differ(rsp - 16, r.places(), r.words(), r.pairs, r.singles) == 0;
}

void FrameRuleCache::follow(uint32_t index) {
  // Usually already so (the loop repeats): then the line stays clean.
  if (last_recent_) {
    uint32_t& next = recent_at(last_recent_ - 1).next;
    if (next != index + 1) next = index + 1;
  }
  last_recent_ = index + 1;
  last_frames_hash_ = recent_at(index).frames_hash;
  hint_ = recent_at(index).next;
}

int FrameRuleCache::reuse_recent(Start& s, int max, StopRange stop, uint64_t* out, WalkView* view) {
  s.key = recent_key(s.rsp, s.pc, s.salt);
  const uint32_t set_index = recent_set_index(s.key);
  const RecentSet& set = tables_->recent[set_index];
  for (int k = 0; k < kRecentWays; ++k) {
    const uint32_t index = set_index * kRecentWays + static_cast<uint32_t>(k);
    if (set.key[k] != s.key) continue;
    const RecentWalk& r = recent_at(index);
    const bool holds = walks_with_avx2() ? recent_holds<Avx2Words>(r, s.rsp, s.salt, max, stop)
                                         : recent_holds<SseWords>(r, s.rsp, s.salt, max, stop);
    if (holds) {
      ++recent_looked_up_;
      follow(index);
      return use_recent(index, out, view);
    }
  }
  return -1;
}

__attribute__((always_inline)) inline int FrameRuleCache::use_recent(uint32_t index, uint64_t* out,
                                                                     WalkView* view) {
  RecentWalk& r = recent_at(index);
  if (view) {
    view->frames = r.out;
    view->note = &r.note;
  } else {
    std::memcpy(out, r.out, r.count * sizeof(uint64_t));
  }
  ++recent_used_;
  return r.count;
}

WalkNote* FrameRuleCache::keep_recent(const Start& s, int n, int max, StopRange stop,
                                      bool uses_rbp) {
  const Walk& w = tables_->walks[which_ ^ 1];
  const auto not_kept = [this] {
    last_recent_ = 0;
    last_frames_hash_ = 0;
    hint_ = 0;
    return nullptr;
  };
  if (n <= 0 || n > kRecentFrames) return not_kept();
  // The oldest way makes room: a loop's paths come back in turn.
  const uint32_t set_index = recent_set_index(s.key);
  RecentSet& set = tables_->recent[set_index];
  const uint32_t k = set.next++ % kRecentWays;
  const uint32_t index = set_index * kRecentWays + k;
  RecentWalk& r = recent_at(index);
  set.key[k] = 0;  // empty until complete
  r.generation = 0;
  r.note = WalkNote{};  // the user's note was about the walk this one replaces
  r.pairs = r.singles = 0;
  if (last_recent_ == index + 1) last_recent_ = 0;
  // The first frame's pc and rbp are the walk's own frame's saved words: loads like the others,
  // rbp only when a rule read it.
  Load start_words[2] = {{s.frame, s.rbp}, {s.frame + 8, s.pc}};
  const uint32_t start_loads = uses_rbp ? 2 : 1;
  const Load* first_load = start_words + (2 - start_loads);
  const uint32_t loads = w.first_load[n];
  uint32_t kept = start_loads;
  for (uint32_t i = 0; i < loads; ++i) kept += !w.unused[i];
  if (kept > kRecentLoads) return not_kept();
  // Adjacent loads in twos (one place each) first, the others after them. Their places are
  // counted from the walk's own frame in 4 bytes: a walk with a load below it (a wrong rule
  // that stayed inside the mapping) or 4 GiB above it is not kept.
  const auto load_at = [&](uint32_t i) -> const Load& {
    return i < start_loads ? first_load[i] : w.loads[i - start_loads];
  };
  const auto used = [&](uint32_t i) { return i < start_loads || !w.unused[i - start_loads]; };
  const uint32_t all = start_loads + loads;
  // Calls two(first load, second load) and one(load) for the loads to check, in order.
  const auto pair_up = [&](auto&& two, auto&& one) {
    for (uint32_t i = 0; i < all; ++i) {
      if (!used(i)) continue;
      uint32_t next = i + 1;
      while (next < all && !used(next)) ++next;
      if (next < all && load_at(next).at == load_at(i).at + 8) {
        two(load_at(i), load_at(next));
        i = next;
      } else {
        one(load_at(i));
      }
    }
  };
  uint32_t pairs = 0, singles = 0;
  bool placeable = true;
  const auto fits = [&](const Load& a) { return a.at >= s.frame && a.at - s.frame <= UINT32_MAX; };
  pair_up([&](const Load& a, const Load&) { ++pairs, placeable &= fits(a); },
          [&](const Load& a) { ++singles, placeable &= fits(a); });
  if (!placeable) return not_kept();
  r.pairs = static_cast<uint16_t>(pairs);
  r.singles = static_cast<uint16_t>(singles);
  uint64_t* value = r.checked;
  uint32_t* place = r.places();
  uint32_t twos = 0, lone = 0;
  pair_up(
      [&](const Load& a, const Load& b) {
        value[2 * twos] = a.value;
        value[2 * twos + 1] = b.value;
        place[twos++] = static_cast<uint32_t>(a.at - s.frame);
      },
      [&](const Load& a) {
        value[2 * pairs + lone] = a.value;
        place[pairs + lone++] = static_cast<uint32_t>(a.at - s.frame);
      });
  r.generation = generation_;
  r.rsp = s.rsp;
  r.salt = s.salt;
  r.next = 0;
  r.stop = stop;
  r.max = max;
  r.count = static_cast<uint16_t>(n);
  std::memcpy(r.out, w.pc, static_cast<size_t>(n) * sizeof(uint64_t));
  uint64_t h = static_cast<uint64_t>(n);
  for (int i = 0; i < n; ++i) h = (h ^ w.pc[i]) * 0x100000001b3ull;
  r.frames_hash = h;
  set.key[k] = s.key;
  follow(index);
  return &r.note;
}

template <class Words>
__attribute__((always_inline)) inline int FrameRuleCache::backtrace_with(uint64_t* out, int max,
                                                                         const StopRange& stop,
                                                                         uint64_t salt,
                                                                         WalkView* view) {
  // __builtin_frame_address gives the function this is inlined into a frame pointer whatever the
  // flags: rbp points at the caller's saved rbp, the return address sits above it, the caller's
  // rsp above that. (A function holding 256-bit values may realign its stack, with a copy of
  // the return address and no fixed place for the caller's rsp: neither compilation holds any.)
  const auto frame = reinterpret_cast<uint64_t>(__builtin_frame_address(0));
  const uint64_t rsp = frame + 16;
  // The usual case first, with nothing else in the way: the walk that came next last time (so
  // tables made and recent walks on).
  if (hint_) {
    const RecentWalk& r = recent_at(hint_ - 1);
    if (recent_holds<Words>(r, rsp, salt, max, stop)) {
      // The walk used before it already names it as its next: nothing to write there.
      last_recent_ = hint_;
      hint_ = r.next;
      return use_recent(last_recent_ - 1, out, view);
    }
  }
  // This frame stays below the walk's first frame while the rest runs.
  return backtrace_from(frame, rsp, out, max, stop, salt, view);
}

// The walk's two compilations: each is the walk's own frame (noinline).
__attribute__((noinline)) int fast_backtrace_sse2(FrameRuleCache& cache, uint64_t* out, int max,
                                                  const StopRange& stop, uint64_t salt,
                                                  WalkView* view) {
  return cache.backtrace_with<SseWords>(out, max, stop, salt, view);
}

__attribute__((noinline)) int fast_backtrace_avx2(FrameRuleCache& cache, uint64_t* out, int max,
                                                  const StopRange& stop, uint64_t salt,
                                                  WalkView* view) {
  return cache.backtrace_with<Avx2Words>(out, max, stop, salt, view);
}

__attribute__((noinline)) int FrameRuleCache::backtrace_from(uint64_t frame, uint64_t rsp,
                                                             uint64_t* out, int max, StopRange stop,
                                                             uint64_t salt, WalkView* view) {
  if (view) *view = WalkView{out, nullptr};
  const auto* saved = reinterpret_cast<const uint64_t*>(frame);
  Start start{rsp, saved[1], saved[0], salt, 0, frame};
  uint64_t lo = 0, hi = 0;
  if (!ensure_tables() || !stack_bounds(frame, &lo, &hi))
    return give_up(0, "no memory or stack bounds");
  if (max > static_cast<int>(kMaxSteps)) max = static_cast<int>(kMaxSteps);
  // A load at `a` is safe when a - lo < span: inside the mapping, all 8 bytes (one compare).
  const uint64_t span = hi - lo - 7;
  if (start.pc != 0 && !recent_off_) {
    const int got = reuse_recent(start, max, stop, out, view);
    if (got >= 0) return got;
  }
  if (start.key == 0) start.key = recent_key(start.rsp, start.pc, start.salt);
  return walk(start, out, max, stop, lo, span, view);
}

__attribute__((noinline)) int FrameRuleCache::walk(const Start& start, uint64_t* out, int max,
                                                   StopRange stop, uint64_t lo, uint64_t span,
                                                   WalkView* view) {
  FrameRuleCache& cache = *this;
  Walk& cur = tables_->walks[which_];
  const Walk& last = tables_->walks[which_ ^ 1];
  // A walk that stopped elsewhere (or not at all) ends elsewhere: its frames above the meeting
  // point are not this walk's.
  int last_count = last_stop_ == stop ? last_count_ : 0;
  int j = 0;  // the first frame of the last walk not below the current one
  uint32_t loads = 0;
  uint64_t rsp = start.rsp;
  uint64_t pc = start.pc;
  uint64_t rbp = start.rbp;
  End end = End::kZero;
  int n = 0;
  bool reused = false;
  // Which load rbp came from (-1: it is still the first frame's register), and whether a rule
  // read the first frame's rbp (then a recent walk is only the same walk with the same rbp). A
  // saved rbp that no rule reads is often data (code without frame pointers uses rbp as any
  // register): it is marked unused, and recent walks do not require it unchanged.
  int64_t rbp_load = -1;
  bool uses_rbp = false;
  auto rbp_read = [&] {
    if (rbp_load < 0)
      uses_rbp = true;
    else
      cur.unused[rbp_load] = false;
  };
  while (pc != 0) {
    if (n == max) {
      end = End::kMax;
      break;
    }
    while (j < last_count && last.rsp[j] < rsp) ++j;
    if (j < last_count && last.rsp[j] == rsp && last.pc[j] == pc && last.rbp[j] == rbp) {
      int got = cache.reuse_last(j, cur, loads, out, n, max, &end);
      if (got >= 0) {
        n = got;
        reused = true;
        rbp_read();  // the last walk's frames from here may read it
        ++cache.reused_walks_;
        break;
      }
      last_count = 0;  // changed further up: walk on frame by frame
    }
    out[n] = pc;
    cur.rsp[n] = rsp;
    cur.rbp[n] = rbp;
    cur.pc[n] = pc;
    cur.first_load[n] = loads;
    ++n;
    if (n == max) {
      end = End::kMax;
      break;
    }
    if (stop.holds(pc)) {
      end = End::kStopped;
      break;
    }
    const FrameRule rule = cache.rule_at(pc);
    if (rule.kind == FrameRule::kOutermost) {
      end = End::kOutermost;
      break;
    }
    const uint64_t cfa_offset = static_cast<uint64_t>(static_cast<int64_t>(rule.cfa_offset));
    const uint64_t rbp_offset = static_cast<uint64_t>(static_cast<int64_t>(rule.rbp_offset));
    uint64_t cfa = 0;
    if (rule.kind == FrameRule::kFromRbp || rule.kind == FrameRule::kDerefRbp) rbp_read();
    if (rule.kind == FrameRule::kFromRsp) {
      cfa = rsp + cfa_offset;
    } else if (rule.kind == FrameRule::kFromRbp) {
      cfa = rbp + cfa_offset;
    } else if (rule.kind == FrameRule::kDerefRbp) {
      // A realigned frame (DRAP): the CFA was saved below rbp, the caller's rbp at rbp itself.
      const uint64_t cfa_at = rbp + cfa_offset, rbp_at = rbp + rbp_offset;
      if (cfa_at - lo >= span || rbp_at - lo >= span)
        return cache.give_up(pc, "step would leave the stack");
      cfa = *reinterpret_cast<const uint64_t*>(cfa_at);
      cur.unused[loads] = false;
      cur.loads[loads++] = {cfa_at, cfa};
      rbp = *reinterpret_cast<const uint64_t*>(rbp_at);
      cur.unused[loads] = true;
      rbp_load = loads;
      cur.loads[loads++] = {rbp_at, rbp};
    } else {
      return cache.give_up(pc, "no simple rule");
    }
    // The caller's frame lies above this one, and what is read of it inside the stack mapping:
    // anything else is a rule that does not fit (or a corrupt stack), and libunwind decides.
    const uint64_t ra_at = cfa + static_cast<uint64_t>(static_cast<int64_t>(rule.ra_offset));
    if (cfa <= rsp || ra_at - lo >= span) return cache.give_up(pc, "step would leave the stack");
    if (rule.rbp_offset && rule.kind != FrameRule::kDerefRbp) {
      const uint64_t rbp_at = cfa + static_cast<uint64_t>(static_cast<int64_t>(rule.rbp_offset));
      if (rbp_at - lo >= span) return cache.give_up(pc, "step would leave the stack");
      rbp = *reinterpret_cast<const uint64_t*>(rbp_at);
      cur.unused[loads] = true;
      rbp_load = loads;
      cur.loads[loads++] = {rbp_at, rbp};
    }
    pc = *reinterpret_cast<const uint64_t*>(ra_at);
    cur.unused[loads] = false;
    cur.loads[loads++] = {ra_at, pc};
    rsp = cfa;
  }
  if (!reused) cur.first_load[n] = loads;
  cache.which_ ^= 1;
  cache.last_count_ = n;
  cache.last_end_ = end;
  cache.last_stop_ = stop;
  if (!cache.recent_off_) {
    WalkNote* note = cache.keep_recent(start, n, max, stop, uses_rbp);
    if (view) view->note = note;
  }
  return n;
}

}  // namespace gmemhook

// The fast stack walk and its per-thread rule cache (see fast_unwinder.h).
#include "fast_unwinder.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "stack_words.h"

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

void FrameRuleCache::release() {
  if (tables_) munmap(tables_, sizeof(Tables));
  tables_ = nullptr;
  failed_ = false;
  forget_stack();
}

bool FrameRuleCache::ensure_tables() {
  if (tables_) return true;
  if (failed_) return false;
  void* m =
      mmap(nullptr, sizeof(Tables), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    failed_ = true;
    return false;
  }
  tables_ = static_cast<Tables*>(m);
  avx2_ = cpu_runs_avx2();
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

__attribute__((always_inline)) inline bool FrameRuleCache::recent_holds(const RecentWalk& r,
                                                                        const Start& s, int max,
                                                                        StopRange stop, uint64_t lo,
                                                                        uint64_t span) const {
  // The key is a hash of rsp, pc and salt: equal when they are.
  if (r.generation != generation_ || r.rsp != s.rsp || r.pc != s.pc || r.salt != s.salt ||
      r.max != max || !(r.stop == stop) || (r.uses_rbp && r.rbp != s.rbp))
    return false;
  // Loaded inside this stack's mapping when it was made; still inside it (a stack only grows).
  if (r.loads && (r.lowest - lo >= span || r.highest - lo >= span)) return false;
  // Independent loads (checking is most of a hit's cost): equal registers and equal loaded
  // values make the same walk.
  const uint64_t differ = avx2_ ? stack_words_differ_avx2(r.at, r.value, r.paired, r.loads)
                                : stack_words_differ_sse2(r.at, r.value, r.paired, r.loads);
  return differ == 0;
}

void FrameRuleCache::follow(uint32_t index) {
  // Usually already so (the loop repeats): then the line stays clean.
  if (last_recent_) {
    uint32_t& next = recent_at(last_recent_ - 1).next;
    if (next != index + 1) next = index + 1;
  }
  last_recent_ = index + 1;
  last_frames_hash_ = recent_at(index).frames_hash;
}

// Inline in fast_backtrace: on every event's path.
__attribute__((always_inline)) inline int FrameRuleCache::reuse_hinted(const Start& s, int max,
                                                                       StopRange stop, uint64_t lo,
                                                                       uint64_t span, uint64_t* out,
                                                                       WalkView* view) {
  // The walk that came after the last one the time before: in a loop, usually this one. Then the
  // last one already names it as its next (follow() has nothing to write). A walk's own pc is
  // never 0, so the hinted one never holds for a walk that starts at pc 0.
  const uint32_t hint = last_recent_ ? recent_at(last_recent_ - 1).next : 0;
  if (!hint || !recent_holds(recent_at(hint - 1), s, max, stop, lo, span)) return -1;
  last_recent_ = hint;
  return use_recent(hint - 1, out, view);
}

int FrameRuleCache::reuse_recent(Start& s, int max, StopRange stop, uint64_t lo, uint64_t span,
                                 uint64_t* out, WalkView* view) {
  s.key = recent_key(s.rsp, s.pc, s.salt);
  const uint32_t set_index = recent_set_index(s.key);
  const RecentSet& set = tables_->recent[set_index];
  for (int k = 0; k < kRecentWays; ++k) {
    const uint32_t index = set_index * kRecentWays + static_cast<uint32_t>(k);
    if (set.key[k] == s.key && recent_holds(recent_at(index), s, max, stop, lo, span)) {
      follow(index);
      return use_recent(index, out, view);
    }
  }
  return -1;
}

__attribute__((always_inline)) inline int FrameRuleCache::use_recent(uint32_t index, uint64_t* out,
                                                                     WalkView* view) {
  RecentWalk& r = recent_at(index);
  last_frames_hash_ = r.frames_hash;
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
  if (n <= 0 || n > kRecentFrames) {
    last_recent_ = 0;
    last_frames_hash_ = 0;
    return nullptr;
  }
  // The oldest way makes room: a loop's paths come back in turn.
  const uint32_t set_index = recent_set_index(s.key);
  RecentSet& set = tables_->recent[set_index];
  const uint32_t k = set.next++ % kRecentWays;
  const uint32_t index = set_index * kRecentWays + k;
  RecentWalk& r = recent_at(index);
  set.key[k] = 0;  // empty until complete
  r.generation = 0;
  r.note = WalkNote{};  // the user's note was about the walk this one replaces
  r.loads = 0;
  r.lowest = ~uint64_t{0};
  r.highest = 0;
  if (last_recent_ == index + 1) last_recent_ = 0;
  // Adjacent loads in twos first (RecentWalk::paired), the others after them.
  const uint32_t loads = w.first_load[n];
  uint32_t kept = 0;
  for (uint32_t i = 0; i < loads; ++i) kept += !w.unused[i];
  if (kept > kRecentLoads) {
    last_recent_ = 0;
    last_frames_hash_ = 0;
    return nullptr;
  }
  uint16_t paired = 0, single = static_cast<uint16_t>(kept);
  for (uint32_t i = 0; i < loads; ++i) {
    if (w.unused[i]) continue;
    const Load& a = w.loads[i];
    if (a.at < r.lowest) r.lowest = a.at;
    if (a.at > r.highest) r.highest = a.at;
    uint32_t next = i + 1;
    while (next < loads && w.unused[next]) ++next;
    if (next < loads && w.loads[next].at == a.at + 8) {
      const Load& b = w.loads[next];
      if (b.at > r.highest) r.highest = b.at;
      r.at[paired] = a.at;
      r.value[paired++] = a.value;
      r.at[paired] = b.at;
      r.value[paired++] = b.value;
      i = next;
    } else {
      // The others fill from the end down, to meet the twos: no load is in both.
      --single;
      r.at[single] = a.at;
      r.value[single] = a.value;
    }
  }
  r.paired = paired;
  r.loads = static_cast<uint16_t>(kept);
  r.generation = generation_;
  r.key = s.key;
  r.rsp = s.rsp;
  r.pc = s.pc;
  r.rbp = s.rbp;
  r.salt = s.salt;
  r.next = 0;
  r.stop = stop;
  r.max = max;
  r.count = static_cast<uint16_t>(n);
  r.uses_rbp = uses_rbp;
  std::memcpy(r.out, w.pc, static_cast<size_t>(n) * sizeof(uint64_t));
  uint64_t h = static_cast<uint64_t>(n);
  for (int i = 0; i < n; ++i) h = (h ^ w.pc[i]) * 0x100000001b3ull;
  r.frames_hash = h;
  set.key[k] = s.key;
  follow(index);
  return &r.note;
}

__attribute__((noinline)) int fast_backtrace(FrameRuleCache& cache, uint64_t* out, int max,
                                             StopRange stop, uint64_t salt, WalkView* view) {
  if (view) *view = WalkView{out, nullptr};
  // __builtin_frame_address gives this function a frame pointer whatever the flags: rbp points
  // at the caller's saved rbp, the return address sits above it, the caller's rsp above that.
  const auto* fp = static_cast<const uint64_t*>(__builtin_frame_address(0));
  const uint64_t sp = reinterpret_cast<uint64_t>(fp);
  const FrameRuleCache::Start start{sp + 16, fp[1], fp[0], salt, 0};
  // The usual case first, with nothing else in the way: a recent walk used last (so tables made
  // and recent walks on), the same stack, the walk that came next last time.
  const bool usual = cache.last_recent_ &&
                     sp - cache.stack_lo_ < cache.stack_hi_ - cache.stack_lo_ &&
                     max <= static_cast<int>(FrameRuleCache::kMaxSteps);
  if (usual) {
    const int got = cache.reuse_hinted(start, max, stop, cache.stack_lo_,
                                       cache.stack_hi_ - cache.stack_lo_ - 7, out, view);
    if (got >= 0) return got;
  }
  // This frame stays below the walk's first frame while the rest runs.
  return cache.backtrace_from(start, sp, out, max, stop, view, usual);
}

__attribute__((noinline)) int FrameRuleCache::backtrace_from(Start start, uint64_t sp,
                                                             uint64_t* out, int max, StopRange stop,
                                                             WalkView* view, bool hint_tried) {
  uint64_t lo = 0, hi = 0;
  if (!ensure_tables() || !stack_bounds(sp, &lo, &hi))
    return give_up(0, "no memory or stack bounds");
  if (max > static_cast<int>(kMaxSteps)) max = static_cast<int>(kMaxSteps);
  // A load at `a` is safe when a - lo < span: inside the mapping, all 8 bytes (one compare).
  const uint64_t span = hi - lo - 7;
  if (start.pc != 0 && !recent_off_) {
    int got = hint_tried ? -1 : reuse_hinted(start, max, stop, lo, span, out, view);
    if (got < 0) got = reuse_recent(start, max, stop, lo, span, out, view);
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

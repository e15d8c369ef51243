// The fast stack walk and its per-thread rule cache (see fast_unwinder.h).
#include "fast_unwinder.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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
  return true;
}

FrameRule FrameRuleCache::learn(uint64_t pc) {
  Entry& e = tables_->entries[(pc * 0x9e3779b97f4a7c15ull) >> (64 - kIndexBits)];
  // pc - 1: a return address may be the first byte after the function that made the call.
  e = Entry{pc, find_frame_rule(pc - 1)};
  return e.rule;
}

bool FrameRuleCache::stack_bounds(uint64_t sp, uint64_t* lo, uint64_t* hi) {
  if (sp < stack_lo_ || sp >= stack_hi_) {
    // A new thread, a main stack that grew, or a signal handler on an alternate stack. The last
    // walk's loads were checked against the old bounds only.
    last_count_ = 0;
    if (!read_stack_mapping(sp, &stack_lo_, &stack_hi_)) {
      forget_stack();
      return false;
    }
  }
  *lo = stack_lo_;
  *hi = stack_hi_;
  return true;
}

int FrameRuleCache::reuse_last(int j, Step* cur, uint64_t* out, int n, int max, End* end) {
  Step* last = tables_->walks[which_ ^ 1];
  const int available = last_count_ - j;
  const int take = available < max - n ? available : max - n;
  // Cut short by its own max, the last walk does not know the frames this one needs.
  if (take < max - n && last_end_ == End::kMax) return -1;
  // From equal registers, the walk repeats the last one's steps as long as what it loads is
  // equal: those loads are all at addresses known now, inside the same stack mapping as then.
  const int steps = take == available && last_end_ == End::kZero ? take : take - 1;
  bool same = true;
  for (int m = j; m < j + steps; ++m) {
    const Step& s = last[m];
    const uint64_t next_pc = m + 1 < last_count_ ? last[m + 1].pc : 0;
    same &= *reinterpret_cast<const uint64_t*>(s.ra_at) == next_pc;
    if (s.rbp_at && m + 1 < last_count_)
      same &= *reinterpret_cast<const uint64_t*>(s.rbp_at) == last[m + 1].rbp;
  }
  if (!same) return -1;
  *end = take == available ? last_end_ : End::kMax;
  if (n == j) {
    // The usual case, the same depth below the frame met: the last walk becomes this one by
    // taking this walk's first frames, and nothing else is copied.
    for (int m = 0; m < n; ++m) last[m] = cur[m];
    for (int m = j; m < j + take; ++m) out[m] = last[m].pc;
    which_ ^= 1;  // fast_backtrace flips it back: the walk stays where it is
    return n + take;
  }
  for (int m = j; m < j + take; ++m, ++n) {
    cur[n] = last[m];
    out[n] = last[m].pc;
  }
  return n;
}

__attribute__((noinline)) int fast_backtrace(FrameRuleCache& cache, uint64_t* out, int max) {
  using Step = FrameRuleCache::Step;
  using End = FrameRuleCache::End;
  // __builtin_frame_address gives this function a frame pointer whatever the flags: rbp points
  // at the caller's saved rbp, the return address sits above it, the caller's rsp above that.
  const auto* fp = static_cast<const uint64_t*>(__builtin_frame_address(0));
  uint64_t lo = 0, hi = 0;
  if (!cache.ensure_tables() || !cache.stack_bounds(reinterpret_cast<uint64_t>(fp), &lo, &hi))
    return -1;
  if (max > static_cast<int>(FrameRuleCache::kMaxSteps))
    max = static_cast<int>(FrameRuleCache::kMaxSteps);
  // A load at `a` is safe when a - lo < span: inside the mapping, all 8 bytes (one compare).
  const uint64_t span = hi - lo - 7;
  Step* cur = cache.tables_->walks[cache.which_];
  const Step* last = cache.tables_->walks[cache.which_ ^ 1];
  int last_count = cache.last_count_;
  int j = 0;  // the first frame of the last walk not below the current one
  uint64_t rsp = reinterpret_cast<uint64_t>(fp) + 16;
  uint64_t pc = fp[1];
  uint64_t rbp = fp[0];
  End end = End::kZero;
  int n = 0;
  while (pc != 0) {
    if (n == max) {
      end = End::kMax;
      break;
    }
    while (j < last_count && last[j].rsp < rsp) ++j;
    if (j < last_count && last[j].rsp == rsp && last[j].pc == pc && last[j].rbp == rbp) {
      int reused = cache.reuse_last(j, cur, out, n, max, &end);
      if (reused >= 0) {
        n = reused;
        ++cache.reused_walks_;
        break;
      }
      last_count = 0;  // changed further up: walk on frame by frame
    }
    out[n] = pc;
    Step& step = cur[n++];
    step = Step{rsp, rbp, pc, 0, 0};
    if (n == max) {
      end = End::kMax;
      break;
    }
    const FrameRule rule = cache.rule_at(pc);
    if (rule.kind == FrameRule::kOutermost) {
      end = End::kOutermost;
      break;
    }
    if (rule.kind != FrameRule::kFromRsp && rule.kind != FrameRule::kFromRbp) return -1;
    const uint64_t cfa = (rule.kind == FrameRule::kFromRsp ? rsp : rbp) +
                         static_cast<uint64_t>(static_cast<int64_t>(rule.cfa_offset));
    // The caller's frame lies above this one, and what is read of it inside the stack mapping:
    // anything else is a rule that does not fit (or a corrupt stack), and libunwind decides.
    const uint64_t ra_at = cfa + static_cast<uint64_t>(static_cast<int64_t>(rule.ra_offset));
    if (cfa <= rsp || ra_at - lo >= span) return -1;
    step.ra_at = ra_at;
    if (rule.rbp_offset) {
      const uint64_t rbp_at = cfa + static_cast<uint64_t>(static_cast<int64_t>(rule.rbp_offset));
      if (rbp_at - lo >= span) return -1;
      step.rbp_at = rbp_at;
      rbp = *reinterpret_cast<const uint64_t*>(rbp_at);
    }
    pc = *reinterpret_cast<const uint64_t*>(ra_at);
    rsp = cfa;
  }
  cache.which_ ^= 1;
  cache.last_count_ = n;
  cache.last_end_ = end;
  return n;
}

}  // namespace gmemhook

// Stack capture: the fast unwinder (fast_unwinder.h) first, libunwind's local unwinder when it
// cannot follow a frame (unw_backtrace's fast path reuses decoded frame layouts, ~11 ns a frame;
// the fast unwinder takes a few).
#define UNW_LOCAL_ONLY
#include "interposer/capture/unwinder.h"

#include <libunwind.h>

#include "interposer/base/config.h"
#include "interposer/capture/capture_stats.h"

namespace gmemhook {

namespace {
int step_backtrace(void** out, int max, StopRange stop) {
  unw_context_t context;
  unw_cursor_t cursor;
  if (unw_getcontext(&context) != 0 || unw_init_local(&cursor, &context) != 0) return 0;
  int n = 0;
  do {
    unw_word_t ip = 0;
    if (unw_get_reg(&cursor, UNW_REG_IP, &ip) != 0 || ip == 0) break;
    out[n++] = reinterpret_cast<void*>(ip);
    if (stop.holds(ip)) break;
  } while (n < max && unw_step(&cursor) > 0);
  return n;
}
}  // namespace

void init_unwinder() {
  unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
  find_own_range();
}

namespace {
// unw_backtrace's per-thread trace cache keeps each return address's frame layout with no way to
// flush it (libunwind 1.6, x86_64/Gtrace.c: unw_flush_cache does not reach it): once objects were
// unloaded, an object loaded at their addresses would be walked with their layouts, as the fast
// unwinder's rules were. A thread that saw an unload steps instead (libunwind's DWARF cache does
// follow unw_flush_cache): slower, but only where the fast walk gives up.
// A thread whose trace cache is still empty (it never called unw_backtrace) goes on using it.
struct TraceCache {
  bool used = false;   // the thread called unw_backtrace
  bool stale = false;  // objects were unloaded since: the thread steps instead
};
__attribute__((tls_model("initial-exec"))) thread_local TraceCache t_trace_cache;
}  // namespace

void forget_unloaded_code_in_libunwind() {
  // The DWARF cache's generation; it unmaps only .debug_frame copies, which this build never
  // makes (no malloc, no lock).
  unw_flush_cache(unw_local_addr_space, 0, 0);
  if (t_trace_cache.used) t_trace_cache.stale = true;
}

namespace {
// libunwind's walk, cut after the first frame in `stop` (unw_backtrace cannot stop early: the
// same stack whichever walk took it, one interned id).
int libunwind_backtrace(uint64_t* raw, int want, StopRange stop) {
  static_assert(sizeof(void*) == sizeof(uint64_t));
  if (t_trace_cache.stale) [[unlikely]]
    return step_backtrace(reinterpret_cast<void**>(raw), want, stop);
  t_trace_cache.used = true;
  int n = unw_backtrace(reinterpret_cast<void**>(raw), want);
  for (int i = 0; i < n; ++i)
    if (stop.holds(raw[i])) n = i + 1;
  return n;
}

// capture_stack's walk with GMEMHOOK_STACK_STATS=1: the same walk, counted by kind. Apart, so
// that the usual walk reads no counters.
__attribute__((noinline, cold)) int counted_backtrace(FrameRuleCache* rules, uint64_t* raw,
                                                      int want, StopRange stop, uint64_t salt,
                                                      WalkView* view) {
  uint64_t shadow = 0, recent = 0, looked_up = 0, learnt = 0, made = 0;
  if (rules) {
    shadow = rules->reused_walks();
    recent = rules->recent_walks_used();
    looked_up = rules->recent_walks_looked_up();
    learnt = rules->rules_learnt();
    made = rules->object_tables_made();
  }
  int n = -1;
  if (rules && g_config.fast_unwind) {
    n = fast_backtrace(*rules, raw, want, stop, salt, view);
  }
  Walk how = Walk::kLibunwind;
  if (rules) {
    note_rules_learnt(rules->rules_learnt() - learnt, rules->object_tables_made() - made);
    how = n < 0                                          ? Walk::kLibunwind
          : rules->recent_walks_looked_up() != looked_up ? Walk::kRecentLookedUp
          : rules->recent_walks_used() != recent         ? Walk::kRecent
          : rules->reused_walks() != shadow              ? Walk::kShadow
                                                         : Walk::kFast;
  }
  if (n < 0) {
    if (rules && g_config.fast_unwind) {
      uint64_t pc = 0;
      const char* why = rules->gave_up(&pc);
      note_gave_up(pc, why);
    }
    *view = WalkView{raw, nullptr};
    n = libunwind_backtrace(raw, want, stop);
  }
  note_walk(how);
  return n;
}
}  // namespace

size_t capture_stack_apart(FrameRuleCache* rules, uint64_t* scratch, const uint64_t** frames,
                           size_t max, StopRange stop, uint64_t salt, uint64_t note_key,
                           WalkNote** note, bool fast_tried) {
  if (rules) rules->use_recent_walks(g_config.recent_walks);  // for capture_stack's usual case
  uint64_t* raw = scratch;
  WalkView view{raw, nullptr};  // where the walk's frames are, and their recent walk's note
  const int want = capture_want(max);
  int n = -1;
  if (t_state.captures < kStepCaptures) {
    // The fast walk reads /proc/self/maps once per thread for its stack's bounds: one more
    // reason to leave a thread's first captures to libunwind's stepping.
    ++t_state.captures;
    n = step_backtrace(reinterpret_cast<void**>(raw), want, stop);
    if (g_config.stack_stats) note_walk(Walk::kStepped);
  } else if (g_config.stack_stats) {
    n = counted_backtrace(rules, raw, want, stop, salt, &view);
  } else {
    if (!fast_tried && rules && g_config.fast_unwind) {
      n = fast_backtrace(*rules, raw, want, stop, salt, &view);
    }
    if (n < 0) {
      view = WalkView{raw, nullptr};
      n = libunwind_backtrace(raw, want, stop);
    }
  }
  *note = view.note;
  if (view.note && note_key && view.note->key == note_key) return 0;
  return own_frames_skipped(view.frames, n, max, frames);
}

}  // namespace gmemhook

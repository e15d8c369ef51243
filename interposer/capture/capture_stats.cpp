// Process-wide counters of stack captures (see capture_stats.h).
#include "interposer/capture/capture_stats.h"

#include <dlfcn.h>

#include <atomic>
#include <cstring>

#include "interposer/base/event_time.h"
#include "interposer/base/text.h"
#include "interposer/capture/frame_rules.h"

namespace gmemhook {

namespace {

// A capture this slow went through libunwind's step-by-step path (a frame its fast trace cannot
// follow) or missed every cache: the count says how often that happens in this program.
constexpr uint64_t kSlowNs = 10000;

// An event this slow opened the process's or a thread's log, or mapped a new chunk: once per
// file or per chunk, not per event. Left out of the per-event mean, counted apart.
constexpr uint64_t kSlowEventNs = 100000;

// The process's counts, added to by every thread.
struct CaptureStats {
  std::atomic<uint64_t> captures{0}, native_ns{0}, native_frames{0}, python_ns{0}, python_frames{0},
      slow{0}, slow_ns{0}, rules_learnt{0}, object_tables{0};
  std::atomic<uint64_t> events{0}, event_ns{0}, slow_events{0}, slow_event_ns{0};
  std::atomic<uint64_t> walks[6] = {};  // by Walk
  std::atomic<uint64_t> ids[4] = {};    // by StackIdFrom
  // The first walk the fast unwinder gave up on: where, and why.
  std::atomic<uint64_t> gave_up_pc{0};
  std::atomic<const char*> gave_up_why{nullptr};
};
constinit CaptureStats g_stats;

void add(std::atomic<uint64_t>& counter, uint64_t v) {
  counter.fetch_add(v, std::memory_order_relaxed);
}

uint64_t get(const std::atomic<uint64_t>& counter) {
  return counter.load(std::memory_order_relaxed);
}

}  // namespace

void note_capture(uint64_t native_ns, size_t native_frames, uint64_t python_ns,
                  size_t python_frames) {
  add(g_stats.captures, 1);
  add(g_stats.native_ns, native_ns);
  add(g_stats.native_frames, native_frames);
  add(g_stats.python_ns, python_ns);
  add(g_stats.python_frames, python_frames);
  if (native_ns > kSlowNs) {
    add(g_stats.slow, 1);
    add(g_stats.slow_ns, native_ns);
  }
}

void note_rules_learnt(uint64_t rules, uint64_t object_tables) {
  if (rules) add(g_stats.rules_learnt, rules);
  if (object_tables) add(g_stats.object_tables, object_tables);
}

void note_event(uint64_t ns) {
  if (ns >= kSlowEventNs) [[unlikely]] {
    add(g_stats.slow_events, 1);
    add(g_stats.slow_event_ns, ns);
    return;
  }
  add(g_stats.events, 1);
  add(g_stats.event_ns, ns);
}

void note_walk(Walk how) { add(g_stats.walks[static_cast<int>(how)], 1); }

void note_stack_id(StackIdFrom from) { add(g_stats.ids[static_cast<int>(from)], 1); }

void note_gave_up(uint64_t pc, const char* why) {
  const char* none = nullptr;
  if (g_stats.gave_up_why.load(std::memory_order_relaxed) ||
      !g_stats.gave_up_why.compare_exchange_strong(none, why))
    return;
  g_stats.gave_up_pc.store(pc, std::memory_order_relaxed);
}

// ", walks: fast F (recent R (looked up U), shadow S), libunwind L (stepped T); ... first given
// up at libx.so+0x12 (why)".
void append_walks(FixedString<896>& m) {
  const uint64_t recent = get(g_stats.walks[4]) + get(g_stats.walks[5]);
  m.append("walks: fast ").append_uint(get(g_stats.walks[1]) + get(g_stats.walks[2]) + recent);
  m.append(" (recent ").append_uint(recent);
  m.append(" (looked up ").append_uint(get(g_stats.walks[5]));
  m.append("), shadow ");
  m.append_uint(get(g_stats.walks[2])).append("), libunwind ");
  m.append_uint(get(g_stats.walks[3])).append(" (stepped ").append_uint(get(g_stats.walks[0]));
  m.append("); rules learnt ").append_uint(get(g_stats.rules_learnt));
  m.append(" (object tables made ");
  m.append_uint(get(g_stats.object_tables)).append(")");
  m.append("; stack ids from notes ").append_uint(get(g_stats.ids[0])).append(", memo ");
  m.append_uint(get(g_stats.ids[1])).append(", table ");
  m.append_uint(get(g_stats.ids[2]) + get(g_stats.ids[3]));
  m.append(" (new ");
  m.append_uint(get(g_stats.ids[3])).append(")");
  const char* why = g_stats.gave_up_why.load(std::memory_order_relaxed);
  if (!why) return;
  const uint64_t pc = get(g_stats.gave_up_pc);
  const char* detail = nullptr;
  // The rule's own reason, looked up again once here rather than kept for every frame.
  if (pc && gmemhook::find_frame_rule(pc - 1, &detail).kind == FrameRule::kUnsupported && detail)
    why = detail;
  m.append("; first given up at ");
  Dl_info info{};
  if (pc && dladdr(reinterpret_cast<void*>(pc), &info) && info.dli_fname) {
    const char* base = std::strrchr(info.dli_fname, '/');
    m.append(base ? base + 1 : info.dli_fname).append("+0x");
    m.append_hex(pc - reinterpret_cast<uint64_t>(info.dli_fbase));
  } else {
    m.append("0x").append_hex(pc);
  }
  m.append(" (").append(why).append(")");
}

// What one read of `clock` costs here (the least of a few back to back). The capture's figures
// each hold one read of monotonic_ns, as a capture is timed by reads before, between and after
// its parts (recorder.cpp), and each event's figure one read of precise_time_ns. On a VM a read
// may cost more than a recent walk's whole check.
template <class Clock>
uint64_t clock_read_ns(Clock clock) {
  uint64_t least = ~0ull;
  for (int i = 0; i < 64; ++i) {
    const uint64_t t0 = clock();
    const uint64_t t1 = clock();
    if (t1 - t0 < least) least = t1 - t0;
  }
  return least;
}

void print_capture_stats() {
  const uint64_t n = get(g_stats.captures);
  const uint64_t events = get(g_stats.events);
  if (n == 0 && events == 0 && get(g_stats.slow_events) == 0) return;
  FixedString<896> m;
  m.append("gmemhook: stack stats: ").append_uint(n).append(" captures");
  if (n) {
    m.append("; native ");
    m.append_uint(get(g_stats.native_ns) / n).append(" ns and ");
    m.append_uint(get(g_stats.native_frames) / n);
    m.append(" frames each on average (").append_uint(get(g_stats.slow)).append(" over ");
    m.append_uint(kSlowNs / 1000).append(" us, ").append_uint(get(g_stats.slow_ns) / 1000);
    m.append(" us in them); python ").append_uint(get(g_stats.python_ns) / n).append(" ns and ");
    m.append_uint(get(g_stats.python_frames) / n).append(" frames each; ");
    m.append_uint((get(g_stats.native_ns) + get(g_stats.python_ns)) / 1000).append(" us in all; ");
    append_walks(m);
  }
  if (events || get(g_stats.slow_events)) {
    m.append("; events recorded ").append_uint(events).append(", ");
    m.append_uint(events ? get(g_stats.event_ns) / events : 0).append(" ns each in the recorder (");
    m.append_uint(get(g_stats.event_ns) / 1000).append(" us in all; an event clock read ");
    m.append_uint(clock_read_ns(precise_time_ns)).append(" ns, in each) and ");
    m.append_uint(get(g_stats.slow_events)).append(" more over ").append_uint(kSlowEventNs / 1000);
    m.append(" us (").append_uint(get(g_stats.slow_event_ns) / 1000);
    m.append(" us: new files, chunks)");
  }
  m.append("; a clock read ").append_uint(clock_read_ns(monotonic_ns));
  m.append(" ns (in each figure)\n");
  write_stderr(m.c_str(), m.size());
}

}  // namespace gmemhook

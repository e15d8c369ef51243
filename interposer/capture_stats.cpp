// Process-wide counters of stack captures (see capture_stats.h).
#include "capture_stats.h"

#include <atomic>

#include "text.h"

namespace gmemhook {

namespace {

// A capture this slow went through libunwind's step-by-step path (a frame its fast trace cannot
// follow) or missed every cache: the count says how often that happens in this program.
constexpr uint64_t kSlowNs = 10000;

std::atomic<uint64_t> g_captures{0}, g_native_ns{0}, g_native_frames{0}, g_python_ns{0},
    g_python_frames{0}, g_slow{0}, g_slow_ns{0};

void add(std::atomic<uint64_t>& counter, uint64_t v) {
  counter.fetch_add(v, std::memory_order_relaxed);
}

uint64_t get(const std::atomic<uint64_t>& counter) {
  return counter.load(std::memory_order_relaxed);
}

}  // namespace

void note_capture(uint64_t native_ns, size_t native_frames, uint64_t python_ns,
                  size_t python_frames) {
  add(g_captures, 1);
  add(g_native_ns, native_ns);
  add(g_native_frames, native_frames);
  add(g_python_ns, python_ns);
  add(g_python_frames, python_frames);
  if (native_ns > kSlowNs) {
    add(g_slow, 1);
    add(g_slow_ns, native_ns);
  }
}

void print_capture_stats() {
  const uint64_t n = get(g_captures);
  if (n == 0) return;
  FixedString<512> m;
  m.append("gmemhook: stack stats: ").append_uint(n).append(" captures; native ");
  m.append_uint(get(g_native_ns) / n).append(" ns and ").append_uint(get(g_native_frames) / n);
  m.append(" frames each on average (").append_uint(get(g_slow)).append(" over ");
  m.append_uint(kSlowNs / 1000).append(" us, ").append_uint(get(g_slow_ns) / 1000);
  m.append(" us in them); python ").append_uint(get(g_python_ns) / n).append(" ns and ");
  m.append_uint(get(g_python_frames) / n).append(" frames each; ");
  m.append_uint((get(g_native_ns) + get(g_python_ns)) / 1000).append(" us in all\n");
  write_stderr(m.c_str(), m.size());
}

}  // namespace gmemhook

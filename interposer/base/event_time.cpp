// Event times from the time-stamp counter, kept on CLOCK_MONOTONIC (see event_time.h).
// Malloc-free and lock-free: it runs inside hooks, signal handlers included.
#include "interposer/base/event_time.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "interposer/base/vdso_clock.h"

namespace gmemhook {
namespace {

using namespace event_time_detail;

// The rate is measured over at least kMinRateTicks (4–8 ms: two anchors off by up to
// kMaxAnchorTicks / 2 each make ≤ 60 ppm, ≤ 8 ns over an anchor's span; until then every event
// reads the real clock), over a window restarted after kWindowTicks (~0.1–0.3 s) so that it
// follows NTP slewing CLOCK_MONOTONIC's rate.
constexpr uint64_t kMinRateTicks = uint64_t{1} << 24;
constexpr uint64_t kWindowTicks = uint64_t{1} << 29;
// A reading of the real clock that took longer than this (the thread was preempted or
// interrupted in between) says too little about which tick it was read at: read again.
constexpr uint64_t kMaxAnchorTicks = uint64_t{1} << 10;

// The process's side of the event clock (what every event reads is in event_globals.h and each
// thread's anchor).
struct EventClockState {
  // ns per tick, times 2^32; 0 until measured. Each thread copies it into its anchor.
  std::atomic<uint64_t> mult{0};
  // What event_time_step_ns() reports: set once at start-up, read when a file is created.
  uint64_t time_step_ns = 0;
  // Where the current measurement of the rate started; a sequence lock, odd while a thread moves
  // it.
  std::atomic<uint64_t> window_version{0};
  std::atomic<uint64_t> window_tsc{0}, window_ns{0};
};
constinit EventClockState g_clock;

bool clocksource_is_tsc() {
  int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[16] = {};
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  return n >= 3 && std::memcmp(buf, "tsc", 3) == 0 && (n == 3 || buf[3] == '\n');
}

// Restarts the window at `now`, unless another thread is moving it.
void start_window(uint64_t version, const Anchor& now) {
  if (!g_clock.window_version.compare_exchange_strong(version, version + 1,
                                                      std::memory_order_acquire))
    return;
  g_clock.window_tsc.store(now.tsc, std::memory_order_relaxed);
  g_clock.window_ns.store(now.ns, std::memory_order_relaxed);
  g_clock.window_version.store(version + 2, std::memory_order_release);
}

// Measures the rate from the window's start to `now`.
void measure_rate(const Anchor& now) {
  const uint64_t version = g_clock.window_version.load(std::memory_order_acquire);
  if (version & 1) return;
  const uint64_t start_tsc = g_clock.window_tsc.load(std::memory_order_relaxed);
  const uint64_t start_ns = g_clock.window_ns.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (g_clock.window_version.load(std::memory_order_relaxed) != version) return;
  const uint64_t ticks = now.tsc - start_tsc;
  if (version == 0 || now.tsc < start_tsc || now.ns < start_ns) return start_window(version, now);
  if (ticks < kMinRateTicks) return;
  const unsigned __int128 scaled = static_cast<unsigned __int128>(now.ns - start_ns) << 32;
  const uint64_t mult = static_cast<uint64_t>(scaled / ticks);
  // A counter between 250 MHz and 16 GHz; anything else is not the clock we think it is.
  if (mult >= (uint64_t{1} << 28) && mult <= (uint64_t{1} << 34))
    g_clock.mult.store(mult, std::memory_order_relaxed);
  if (ticks >= kWindowTicks) start_window(version, now);
}

// Reads the real clock, makes it this thread's anchor and measures the rate with it.
__attribute__((noinline)) uint64_t reanchor() {
  for (int attempt = 0; attempt < 4; ++attempt) {
    const uint64_t before = __rdtsc();
    const uint64_t ns = monotonic_ns();
    const uint64_t after = __rdtsc();
    if (after - before > kMaxAnchorTicks) continue;
    const Anchor now{before + (after - before) / 2, ns, 0};
    measure_rate(now);
    const uint64_t mult = g_clock.mult.load(std::memory_order_relaxed);
    // Without a rate yet, an anchor no tick comes near: every event reads the real clock.
    t_anchor = {mult ? now.tsc : now.tsc + (uint64_t{1} << 63), ns, mult};
    return ns;
  }
  return monotonic_ns();  // no anchor this time: the next event tries again
}

}  // namespace

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void init_event_time(bool tsc_allowed, bool coarse) {
  g_event_globals.tsc_usable = tsc_allowed && clocksource_is_tsc();
  g_event_globals.coarse_time = coarse;
  if (ClockRead vdso = find_vdso_clock_gettime()) g_event_globals.coarse_clock = vdso;
  g_clock.time_step_ns = 1;
  timespec res{};
  if (coarse && clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0)
    g_clock.time_step_ns = std::max<uint64_t>(1, res.tv_sec * 1000000000ull + res.tv_nsec);
}

uint64_t event_time_step_ns() { return g_clock.time_step_ns; }

uint64_t event_clock_start_ns() {
  return g_event_globals.coarse_time ? coarse_ns() : monotonic_ns();
}

namespace event_time_detail {
uint64_t precise_time_slow() { return g_event_globals.tsc_usable ? reanchor() : monotonic_ns(); }
}  // namespace event_time_detail

bool event_time_from_tsc() {
  return !g_event_globals.coarse_time && g_event_globals.tsc_usable &&
         g_clock.mult.load(std::memory_order_relaxed) != 0;
}

}  // namespace gmemhook

// The latch and counters behind record_loss.h.
#include "interposer/log/record_loss.h"

#include <atomic>
#include <climits>

#include "interposer/base/text.h"

namespace gmemhook {

namespace {
std::atomic<bool> g_broken{false};
std::atomic<bool> g_warned{false};
std::atomic<uint64_t> g_not_recorded{0};
std::atomic<uint64_t> g_first_seq{0};
std::atomic<int> g_error{0};

}  // namespace

void note_skipped(uint64_t seq) {
  g_not_recorded.fetch_add(1, std::memory_order_relaxed);
  // The smallest seq wins: threads race to report their first loss.
  uint64_t first = g_first_seq.load(std::memory_order_relaxed);
  while ((first == 0 || seq < first) &&
         !g_first_seq.compare_exchange_weak(first, seq, std::memory_order_relaxed)) {
  }
}

void note_not_recorded(uint64_t seq, const char* path, int error) {
  g_broken.store(true, std::memory_order_relaxed);
  note_skipped(seq);
  if (g_warned.exchange(true, std::memory_order_relaxed)) return;
  g_error.store(error, std::memory_order_relaxed);
  FixedString<PATH_MAX + 256> m;
  m.append("gmemhook: cannot write ").append(path && *path ? path : "the log").append(": ");
  append_errno(m, error);
  m.append("; recording stopped, the program runs on (the exit line counts what was lost)\n");
  write_stderr(m.c_str(), m.size());
}

bool recording_broken() { return g_broken.load(std::memory_order_relaxed); }

LossReport loss_report() {
  return {g_not_recorded.load(std::memory_order_relaxed),
          g_first_seq.load(std::memory_order_relaxed), g_error.load(std::memory_order_relaxed)};
}

void loss_fork_child() {
  // The child writes its own log in its own directory: what the parent lost is not its loss.
  g_broken.store(false, std::memory_order_relaxed);
  g_warned.store(false, std::memory_order_relaxed);
  g_not_recorded.store(0, std::memory_order_relaxed);
  g_first_seq.store(0, std::memory_order_relaxed);
  g_error.store(0, std::memory_order_relaxed);
}

}  // namespace gmemhook

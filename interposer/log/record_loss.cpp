// The latch and counters behind record_loss.h.
#include "interposer/log/record_loss.h"

#include <atomic>
#include <climits>

#include "interposer/base/text.h"

namespace gmemhook {

namespace {
// What this process lost; a fork child starts with nothing lost (loss_fork_child).
struct RecordLoss {
  std::atomic<bool> broken{false};  // a write failed: the latch
  std::atomic<bool> warned{false};
  std::atomic<uint64_t> not_recorded{0};
  std::atomic<uint64_t> first_seq{0};
  std::atomic<int> error{0};
};
constinit RecordLoss g_loss;
}  // namespace

void note_skipped(uint64_t seq) {
  g_loss.not_recorded.fetch_add(1, std::memory_order_relaxed);
  // The smallest seq wins: threads race to report their first loss.
  uint64_t first = g_loss.first_seq.load(std::memory_order_relaxed);
  while ((first == 0 || seq < first) &&
         !g_loss.first_seq.compare_exchange_weak(first, seq, std::memory_order_relaxed)) {
  }
}

void note_not_recorded(uint64_t seq, const char* path, int error) {
  g_loss.broken.store(true, std::memory_order_relaxed);
  note_skipped(seq);
  if (g_loss.warned.exchange(true, std::memory_order_relaxed)) return;
  g_loss.error.store(error, std::memory_order_relaxed);
  FixedString<PATH_MAX + 256> m;
  m.append("gmemhook: cannot write ").append(path && *path ? path : "the log").append(": ");
  append_errno(m, error);
  m.append("; recording stopped, the program runs on (the exit line counts what was lost)\n");
  write_stderr(m.c_str(), m.size());
}

bool recording_broken() { return g_loss.broken.load(std::memory_order_relaxed); }

LossReport loss_report() {
  return {g_loss.not_recorded.load(std::memory_order_relaxed),
          g_loss.first_seq.load(std::memory_order_relaxed),
          g_loss.error.load(std::memory_order_relaxed)};
}

void loss_fork_child() {
  // The child writes its own log in its own directory: what the parent lost is not its loss.
  g_loss.broken.store(false, std::memory_order_relaxed);
  g_loss.warned.store(false, std::memory_order_relaxed);
  g_loss.not_recorded.store(0, std::memory_order_relaxed);
  g_loss.first_seq.store(0, std::memory_order_relaxed);
  g_loss.error.store(0, std::memory_order_relaxed);
}

}  // namespace gmemhook

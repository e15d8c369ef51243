// One process of a run followed by `gmemhook top`: the follower that reads what it committed
// since the last refresh, and the replay (live set, peaks, timelines, PyTorch's blocks) kept
// across refreshes, so each refresh costs the new events only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "analyzer/live/top_view.h"
#include "analyzer/log/process_follower.h"
#include "analyzer/model/block_layer.h"
#include "analyzer/model/replay.h"
#include "analyzer/model/stack_interner.h"
#include "analyzer/symbols/stack_resolver.h"

namespace gmemhook::analysis {

enum class SortBy : uint8_t { Bytes, Growth, Count };

struct WatchOptions {
  uint64_t gap_wait_ns = 1'000'000'000;  // how long a missing sequence number is waited for
  uint64_t window_ns = 120'000'000'000;  // the timeline shown: the last two minutes
  size_t sites = 10;                     // site rows per device; 0 = all
  SortBy sort = SortBy::Bytes;
};

class ProcessWatch {
 public:
  explicit ProcessWatch(std::filesystem::path dir);
  ProcessWatch(const ProcessWatch&) = delete;
  ProcessWatch& operator=(const ProcessWatch&) = delete;

  // Reads what the process committed since the last call. Never throws: a log that cannot be
  // read further leaves the process Damaged, shown with its error.
  void update(uint64_t now_ns, const WatchOptions& options);
  // Whether events wait behind a missing sequence number that may still come.
  bool waiting() const { return follower_.waiting_at_gap(); }

  // The process now. Growth is measured against the previous call (the first call: against
  // nothing), so a frozen screen simply does not call it.
  ProcessView view(uint64_t now_ns, const WatchOptions& options);

 private:
  ProcessState state() const;
  bool writer_done() const;
  DeviceView device_view(uint16_t series, uint64_t now_ns, const WatchOptions& options);
  const std::vector<Frame>& frames(uint32_t stack);

  ProcessFollower follower_;
  StackInterner stacks_;
  Replay replay_{stacks_};
  BlockLayer blocks_;
  std::unique_ptr<StackResolver> resolver_;
  size_t resolver_snapshots_ = 0;  // module snapshots the resolver was made with
  std::string error_;              // set once the logs could not be read further
  bool gone_ = false;              // the process was seen to be gone (no End record)
  // Bytes of each site row at the previous view(), by series label and row: growth's baseline.
  std::map<std::string, uint64_t> previous_;
};

// Site rows in `by` order (ties: largest bytes first).
void sort_site_lines(std::vector<SiteLine>& lines, SortBy by);

// Whether process `pid` still runs and is the one that created a log file at `start_monotonic_ns`
// (CLOCK_MONOTONIC) — not a later process that got the same pid.
bool process_alive(uint64_t pid, uint64_t start_monotonic_ns);

}  // namespace gmemhook::analysis

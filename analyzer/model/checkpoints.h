// Stops at chosen moments of a pass to look at the replay's state there (a Replay observer): after
// given sequence numbers, or at a time. Leaks --at and the moments fragmentation lays out use it.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "analyzer/model/replay.h"

namespace gmemhook::analysis {

class Checkpoints final : public ReplayObserver {
 public:
  using AtSeq = std::function<void(const Replay&, uint64_t seq)>;
  using AtTime = std::function<void(const Replay&)>;

  // Calls `fn(replay, seq)` with the state after every event up to `seq` was applied, for each of
  // `seqs` (before the first later event, or at the end of the pass). With `stop_after_last`, the
  // pass is cut short once the last one fired (Replay::Stop).
  Checkpoints(std::vector<uint64_t> seqs, AtSeq fn, bool stop_after_last = false);
  // Calls `fn(replay)` once, with the state right before the first event later than `time_ns`
  // (absolute), or at the end of the pass when there is none.
  Checkpoints(uint64_t time_ns, AtTime fn);

  uint64_t wake_seq() const override { return next_ < seqs_.size() ? seqs_[next_] : UINT64_MAX; }
  uint64_t wake_time_ns() const override { return at_time_ ? time_ns_ : UINT64_MAX; }
  void wake(const Replay& r, const format::Event& next) override;
  void finish(const Replay& r) override;

 private:
  std::vector<uint64_t> seqs_;  // sorted, unique
  size_t next_ = 0;
  AtSeq at_seq_;
  bool stop_after_last_ = false;
  uint64_t time_ns_ = UINT64_MAX;
  AtTime at_time_;  // empty once fired
};

}  // namespace gmemhook::analysis

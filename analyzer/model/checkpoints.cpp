// Checkpoints of a pass (see checkpoints.h).
#include "analyzer/model/checkpoints.h"

#include <algorithm>
#include <utility>

namespace gmemhook::analysis {

Checkpoints::Checkpoints(std::vector<uint64_t> seqs, AtSeq fn, bool stop_after_last)
    : ReplayObserver(kMoments),
      seqs_(std::move(seqs)),
      at_seq_(std::move(fn)),
      stop_after_last_(stop_after_last) {
  std::sort(seqs_.begin(), seqs_.end());
  seqs_.erase(std::unique(seqs_.begin(), seqs_.end()), seqs_.end());
}

Checkpoints::Checkpoints(uint64_t time_ns, AtTime fn)
    : ReplayObserver(kMoments), time_ns_(time_ns), at_time_(std::move(fn)) {}

void Checkpoints::wake(const Replay& r, const format::Event& next) {
  while (next_ < seqs_.size() && next.seq > seqs_[next_]) {
    at_seq_(r, seqs_[next_++]);
    // The rest of the log cannot change what the last checkpoint saw.
    if (stop_after_last_ && next_ == seqs_.size()) throw Replay::Stop{};
  }
  if (at_time_ && next.time_ns > time_ns_) std::exchange(at_time_, nullptr)(r);
}

void Checkpoints::finish(const Replay& r) {
  while (next_ < seqs_.size()) at_seq_(r, seqs_[next_++]);
  if (at_time_) std::exchange(at_time_, nullptr)(r);
}

}  // namespace gmemhook::analysis

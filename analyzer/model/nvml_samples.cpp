// NVML samples set against the replay's live device memory (see nvml_samples.h).
#include "analyzer/model/nvml_samples.h"

#include <algorithm>
#include <map>

#include "analyzer/model/replay.h"

namespace gmemhook::analysis {

NvmlSamples::NvmlSamples(const std::vector<NvmlSample>& samples) : ReplayObserver(kMoments) {
  for (const NvmlSample& s : samples) samples_.push_back({s, 0});
  // The sampler thread and the hooks write in whatever order they took the lock.
  std::stable_sort(samples_.begin(), samples_.end(), [](const auto& a, const auto& b) {
    return a.nvml.time_delta_ns < b.nvml.time_delta_ns;
  });
  for (size_t i = 0; i < samples_.size(); ++i) by_seq_.push_back(i);
  std::stable_sort(by_seq_.begin(), by_seq_.end(),
                   [&](size_t a, size_t b) { return samples_[a].nvml.seq < samples_[b].nvml.seq; });
}

uint64_t NvmlSamples::wake_seq() const {
  return next_ < by_seq_.size() ? samples_[by_seq_[next_]].nvml.seq : UINT64_MAX;
}

void NvmlSamples::settle(const Replay& r, uint64_t up_to_seq) {
  for (; next_ < by_seq_.size() && samples_[by_seq_[next_]].nvml.seq <= up_to_seq; ++next_) {
    ReconciledSample& s = samples_[by_seq_[next_]];
    for (const Series& series : r.series())
      if (series.key.device == s.nvml.device && series.key.memory == format::MemoryType::Device)
        s.allocated = series.live_bytes;
  }
}

// The replay's state is the one after every event up to wake_seq(): samples up to there settle.
void NvmlSamples::wake(const Replay& r, const format::Event& next) { settle(r, next.seq - 1); }

void NvmlSamples::finish(const Replay& r) { settle(r, UINT64_MAX); }

std::vector<NvidiaSmiPeak> NvmlSamples::peaks() const {
  std::map<int32_t, NvidiaSmiPeak> by_device;
  for (const ReconciledSample& s : samples_) {
    NvidiaSmiPeak& p = by_device[s.nvml.device];
    p.device = s.nvml.device;
    p.series.push_back(s);
    // A listed sample beats any unlisted one; then the larger figure, the earlier on a tie.
    const bool better = p.series.size() == 1 ||
                        (s.nvml.listed && !p.listed) ||
                        (s.nvml.listed == p.listed &&
                         (s.nvml.listed ? s.nvml.process_used > p.at.nvml.process_used
                                        : s.nvml.used > p.at.nvml.used));
    if (better) {
      p.at = s;
      p.listed = s.nvml.listed;
    }
  }
  std::vector<NvidiaSmiPeak> out;
  for (auto& [device, p] : by_device) out.push_back(std::move(p));
  return out;
}

}  // namespace gmemhook::analysis

// NVML's figures (what nvidia-smi shows) next to the log's own: for each NvmlSample, the device
// memory this log says was allocated at the same event, and so the part no allocation explains
// (the CUDA context, module images, library workspaces). NVML samples are never allocations: this
// observer only reads the replay's series.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "analyzer/log/records.h"
#include "analyzer/model/replay_observer.h"

namespace gmemhook::analysis {

struct ReconciledSample {
  NvmlSample nvml;
  uint64_t allocated = 0;  // device memory allocated through CUDA (this log) after event nvml.seq
};

// nvidia-smi's peak of one device: the sample where NVML counted the most for this process (the
// most on the whole device when NVML did not list this pid), split into what the log allocated
// and the rest.
struct NvidiaSmiPeak {
  int32_t device = 0;
  bool listed = false;  // false: NVML did not list this pid; only device-wide figures exist
  ReconciledSample at;  // the sample of the peak
  std::vector<ReconciledSample> series;  // every sample of the device, in time order
  // What NVML counted beyond the log's allocations (never below 0: NVML may lag an allocation).
  uint64_t untracked() const {
    return at.nvml.process_used > at.allocated ? at.nvml.process_used - at.allocated : 0;
  }
  uint64_t device_free() const { return at.nvml.total > at.nvml.used ? at.nvml.total - at.nvml.used : 0; }
};

class NvmlSamples : public ReplayObserver {
 public:
  explicit NvmlSamples(const std::vector<NvmlSample>& samples);

  uint64_t wake_seq() const override;
  void wake(const Replay& r, const format::Event& next) override;
  void finish(const Replay& r) override;

  // After the pass: every sample in time order, and per device (ascending) its peak.
  const std::vector<ReconciledSample>& samples() const { return samples_; }
  std::vector<NvidiaSmiPeak> peaks() const;

 private:
  void settle(const Replay& r, uint64_t up_to_seq);

  std::vector<ReconciledSample> samples_;
  std::vector<size_t> by_seq_;  // indices into samples_, by seq
  size_t next_ = 0;             // into by_seq_
};

}  // namespace gmemhook::analysis

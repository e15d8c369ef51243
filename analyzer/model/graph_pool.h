// The driver's figures for each device's CUDA graph memory pool (a Replay observer), as the hook
// recorded them after each graph launch, upload, trim and uploading instantiation (format.h,
// "Graph pool totals"): the physical memory the pool keeps (reserved) and what graph
// allocations hold of it (used; the driver counts each allocation in whole pool granules, 32 MiB
// on the H200). The pool is not an allocation: the replay already counts each graph allocation
// by its requested size, and the reserved figure contains those allocations, so reports show the
// pool beside a series and never add it (what it keeps beyond them is overhead, like PyTorch's
// reserved minus allocated).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "analyzer/model/replay.h"

namespace gmemhook::analysis {

// The pool's figures after one call.
struct GraphPoolFigure {
  uint64_t seq = 0;  // the call that recorded them
  uint64_t used = 0, reserved = 0;
};

struct GraphPoolDevice {
  int32_t device = kNoDevice;
  GraphPoolFigure last;  // after the last call that recorded them
  uint64_t used_high = 0, reserved_high = 0, reserved_high_seq = 0;
  uint64_t records = 0;
  std::vector<GraphPoolFigure> changes;  // the figures each time they changed, in seq order
};

class GraphPoolFigures final : public ReplayObserver {
 public:
  GraphPoolFigures() : ReplayObserver(kCalls) {}

  // In order of first record.
  const std::vector<GraphPoolDevice>& devices() const { return devices_; }
  const GraphPoolDevice* device(int32_t device) const;
  // The figures of `device` as they stood after call `seq` (the last record at or before it);
  // nullopt when none was recorded by then.
  std::optional<GraphPoolFigure> at(int32_t device, uint64_t seq) const;

  void call(const Replay& r, const format::Event& ev, const format::ApiInfo& api) override;
  bool calls_of(format::EventKind kind) const override;

 private:
  std::vector<GraphPoolDevice> devices_;
};

}  // namespace gmemhook::analysis

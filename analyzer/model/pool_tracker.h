// What each stream-ordered memory pool holds (a Replay observer). Pools keep freed memory for
// reuse, so what a pool holds is at least its high-water mark of live bytes until it is trimmed.
#pragma once

#include <cstdint>
#include <vector>

#include "analyzer/model/replay.h"

namespace gmemhook::analysis {

// An explicit pool (cudaMallocFromPoolAsync) or a device's default pool (cudaMallocAsync).
struct Pool {
  uint64_t handle = 0;  // 0: the default pool of `device`
  int32_t device = kNoDevice;
  uint64_t live_bytes = 0, live_count = 0;
  uint64_t high_water_bytes = 0, high_water_seq = 0;
  uint64_t allocations = 0;
};

class PoolTracker final : public ReplayObserver {
 public:
  PoolTracker() : ReplayObserver(kPoolAllocations) {}

  // In order of first use, as Replay::pools().
  const std::vector<Pool>& pools() const { return pools_; }

  void allocated(const Replay& r, uint64_t seq, const LiveAllocation& a) override;
  void freed(const Replay& r, const LiveAllocation& a) override;

 private:
  std::vector<Pool> pools_;
};

}  // namespace gmemhook::analysis

// Pool occupancy from the live set's changes (see pool_tracker.h).
#include "analyzer/model/pool_tracker.h"

namespace gmemhook::analysis {

// The replay calls both only for allocations in a pool (kPoolAllocations).
void PoolTracker::allocated(const Replay& r, uint64_t seq, const LiveAllocation& a) {
  while (pools_.size() < a.pool) {
    const PoolKey& key = r.pools()[pools_.size()];
    pools_.push_back(Pool{key.handle, key.device});
  }
  Pool& p = pools_[a.pool - 1];
  p.live_bytes += a.size;
  ++p.live_count;
  ++p.allocations;
  if (p.live_bytes > p.high_water_bytes) {
    p.high_water_bytes = p.live_bytes;
    p.high_water_seq = seq;
  }
}

void PoolTracker::freed(const Replay&, const LiveAllocation& a) {
  Pool& p = pools_[a.pool - 1];
  p.live_bytes -= a.size;
  --p.live_count;
}

}  // namespace gmemhook::analysis

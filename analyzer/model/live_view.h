// Views of a Replay's state at one moment: what was live grouped by call stack (leaks, peak),
// and how the live device memory lay in the address space (fragmentation). Grouping costs
// O(sites + VMM ranges), a layout O(live log live); never O(events).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "analyzer/model/pool_tracker.h"
#include "analyzer/model/replay.h"

namespace gmemhook::analysis {

// Groups the live allocations and physical handles of the series `want` accepts (and, with
// `address_space`, the mappings and reservations too), in sort_groups() order.
std::vector<SiteGroup> group_live(const Replay& replay,
                                  const std::function<bool(const SeriesKey&)>& want,
                                  bool address_space);

// The allocation granularity assumed when rounding a request to what it really takes. CUDA does
// not document cudaMalloc's; this is the rule gmemhook applies (docs/json.md):
//   cudaMalloc family, stream-ordered and managed allocations: up to a multiple of 512 bytes;
//   cuMemCreate handles and cuMemMap ranges: up to a multiple of 2 MiB (the VMM granularity of
//     current GPUs; CUDA requires these sizes to be multiples of it already);
//   pinned host memory: up to a multiple of the 4 KiB page.
uint64_t granted_bytes(uint64_t requested, LiveKind kind, format::MemoryType memory);
inline constexpr uint64_t kAllocGranularity = 512;
inline constexpr uint64_t kVmmGranularity = 2u << 20;
inline constexpr uint64_t kHostPageSize = 4096;

struct SizeBucket {
  uint64_t min_bytes = 0, max_bytes = 0;  // [min, max)
  uint64_t count = 0, bytes = 0;
};

struct PoolView {
  uint64_t handle = 0;  // 0: the device's default pool
  uint64_t live_bytes = 0, live_count = 0;
  uint64_t high_water_bytes = 0, high_water_seq = 0;
};

// Device memory of one device at one moment.
struct Fragmentation {
  uint64_t live_bytes = 0, live_count = 0;  // allocations + physical handles, as requested
  uint64_t granted_bytes = 0;               // the same, rounded up (granted_bytes())
  // The address layout of the live ranges (allocations and VMM mappings, at granted size).
  uint64_t ranges = 0;
  uint64_t lowest_address = 0, span_bytes = 0;
  uint64_t gap_bytes = 0, gap_count = 0, largest_gap_bytes = 0;
  double fragmentation = 0;           // 1 - largest_gap / gap_bytes; 0 when there is no gap
  std::vector<SizeBucket> histogram;  // power-of-two buckets of the requested sizes, non-empty
  uint64_t reserved_bytes = 0, mapped_bytes = 0, physical_bytes = 0;
  std::vector<PoolView> pools;
};

// `pools` watched the same pass.
Fragmentation measure_fragmentation(const Replay& replay, const PoolTracker& pools, int32_t device);

}  // namespace gmemhook::analysis

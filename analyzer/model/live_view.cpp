// Grouping and address-layout views of a Replay's state (see live_view.h).
#include "analyzer/model/live_view.h"

#include <algorithm>
#include <bit>
#include <unordered_map>

namespace gmemhook::analysis {

namespace {

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

}  // namespace

std::vector<SiteGroup> group_live(const Replay& replay,
                                  const std::function<bool(const SeriesKey&)>& want,
                                  bool address_space) {
  std::vector<SiteGroup> groups = replay.sites_now(want);
  if (!address_space) return groups;
  // VMM ranges are few: group them with a small map.
  std::unordered_map<uint64_t, size_t> index;
  auto add = [&](LiveKind kind, uint16_t series_id, uint8_t api, uint32_t stack, uint64_t bytes) {
    const SeriesKey& key = replay.series()[series_id].key;
    if (!want(key)) return;
    const uint64_t k = (uint64_t{stack} << 32) | (uint64_t{series_id} << 16) |
                       (uint64_t{api} << 8) | static_cast<uint64_t>(kind);
    auto [it, inserted] = index.try_emplace(k, groups.size());
    if (inserted) groups.push_back({key, api, kind, stack, 0, 0});
    groups[it->second].bytes += bytes;
    ++groups[it->second].count;
  };
  for (const auto& [address, m] : replay.mappings())
    add(LiveKind::Mapping, m.series, m.api, m.stack, m.size);
  for (const auto& [address, r] : replay.reservations())
    add(LiveKind::Reservation, r.series, r.api, r.stack, r.size);
  sort_groups(groups);
  return groups;
}

uint64_t granted_bytes(uint64_t requested, LiveKind kind, format::MemoryType memory) {
  if (kind != LiveKind::Allocation) return round_up(requested, kVmmGranularity);
  if (memory == format::MemoryType::HostPinned) return round_up(requested, kHostPageSize);
  return round_up(requested, kAllocGranularity);
}

Fragmentation measure_fragmentation(const Replay& replay, const PoolTracker& pools,
                                    int32_t device) {
  Fragmentation f;
  const auto& series = replay.series();
  std::vector<bool> wanted(series.size());
  for (size_t i = 0; i < series.size(); ++i) {
    const SeriesKey& k = series[i].key;
    wanted[i] = k.device == device && k.memory == format::MemoryType::Device;
    if (wanted[i]) {
      f.reserved_bytes += series[i].reserved_bytes;
      f.mapped_bytes += series[i].mapped_bytes;
      f.physical_bytes += series[i].physical_bytes;
    }
  }

  std::vector<SizeBucket> buckets(65);
  auto count_size = [&](uint64_t size) {
    const unsigned b = size == 0 ? 0 : static_cast<unsigned>(std::bit_width(size) - 1);
    buckets[b].count++;
    buckets[b].bytes += size;
  };
  struct Range {
    uint64_t begin, end;
  };
  std::vector<Range> ranges;
  const auto& sites = replay.sites();
  replay.live().for_each([&](uint64_t address, const LiveAllocation& a) {
    if (!wanted[sites[a.site].series]) return;
    f.live_bytes += a.size;
    ++f.live_count;
    const uint64_t granted =
        granted_bytes(a.size, LiveKind::Allocation, format::MemoryType::Device);
    f.granted_bytes += granted;
    count_size(a.size);
    ranges.push_back({address, address + granted});
  });
  for (const auto& [handle, h] : replay.handles()) {
    if (h.imported || !wanted[sites[h.site].series]) continue;  // imported: another's memory
    f.live_bytes += h.size;
    ++f.live_count;
    f.granted_bytes += granted_bytes(h.size, LiveKind::Physical, format::MemoryType::Device);
    count_size(h.size);
  }
  for (const auto& [address, m] : replay.mappings())
    if (wanted[m.series])
      ranges.push_back({address, address + granted_bytes(m.size, LiveKind::Mapping,
                                                         format::MemoryType::Device)});

  for (size_t b = 0; b < buckets.size(); ++b) {
    if (!buckets[b].count) continue;
    buckets[b].min_bytes = b == 0 ? 0 : uint64_t{1} << b;
    buckets[b].max_bytes = b >= 63 ? UINT64_MAX : uint64_t{1} << (b + 1);
    f.histogram.push_back(buckets[b]);
  }

  // Gaps: the stretches of the span that no live range covers. Ranges do not overlap in a
  // consistent log; should they, the union is what counts.
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  f.ranges = ranges.size();
  if (!ranges.empty()) {
    f.lowest_address = ranges.front().begin;
    uint64_t covered_end = ranges.front().end;
    for (size_t i = 1; i < ranges.size(); ++i) {
      if (ranges[i].begin > covered_end) {
        const uint64_t gap = ranges[i].begin - covered_end;
        f.gap_bytes += gap;
        ++f.gap_count;
        f.largest_gap_bytes = std::max(f.largest_gap_bytes, gap);
      }
      covered_end = std::max(covered_end, ranges[i].end);
    }
    f.span_bytes = covered_end - f.lowest_address;
  }
  if (f.gap_bytes)
    f.fragmentation =
        1.0 - static_cast<double>(f.largest_gap_bytes) / static_cast<double>(f.gap_bytes);

  for (const Pool& p : pools.pools())
    if (p.device == device)
      f.pools.push_back(
          {p.handle, p.live_bytes, p.live_count, p.high_water_bytes, p.high_water_seq});
  return f;
}

}  // namespace gmemhook::analysis

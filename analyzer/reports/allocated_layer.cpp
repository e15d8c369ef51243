// How the reports show the allocated layer (see allocated_layer.h).
#include "analyzer/reports/allocated_layer.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "analyzer/log/event_info.h"
#include "analyzer/output/text_format.h"

namespace gmemhook::analysis {

bool is_block_api(uint8_t api) {
  const format::ApiInfo* a = format::find_api(api);
  return a && a->kind == format::EventKind::BlockAlloc;
}

std::string site_api_name(uint8_t api) {
  return is_block_api(api) ? "PyTorch allocator" : api_name(api);
}

const BlockDevice* blocks_of(const BlockLayer& blocks, const SeriesKey& key) {
  if (key.memory != format::MemoryType::Device) return nullptr;
  return blocks.device(key.device);
}

namespace {

uint8_t block_api() {
  for (const format::ApiInfo& a : format::kApis)
    if (a.kind == format::EventKind::BlockAlloc) return static_cast<uint8_t>(a.id);
  return 0;
}

}  // namespace

std::vector<SiteGroup> block_site_groups(const std::vector<BlockGroup>& groups) {
  std::vector<SiteGroup> out;
  for (const BlockGroup& b : groups)
    out.push_back({{b.device, format::MemoryType::Device},
                   block_api(),
                   LiveKind::Allocation,
                   b.stack,
                   b.bytes,
                   b.count});
  return out;
}

std::vector<SiteGroup> with_blocks(const Replay& replay, const BlockLayer& blocks,
                                   std::vector<SiteGroup> groups,
                                   const std::function<bool(const SeriesKey&)>& want) {
  if (!blocks.any()) return groups;
  using Key = std::tuple<uint32_t, int32_t, int, uint8_t, int>;
  std::map<Key, size_t> index;
  for (size_t i = 0; i < groups.size(); ++i) {
    const SiteGroup& g = groups[i];
    index[{g.stack, g.series.device, static_cast<int>(g.series.memory), g.api,
           static_cast<int>(g.kind)}] = i;
  }
  auto take = [&](uint32_t stack, uint16_t series, uint8_t api, LiveKind kind, uint64_t bytes) {
    const SeriesKey key = replay.series()[series].key;
    auto it =
        index.find({stack, key.device, static_cast<int>(key.memory), api, static_cast<int>(kind)});
    if (it == index.end()) return;  // a series `want` left out
    SiteGroup& g = groups[it->second];
    g.bytes -= std::min(g.bytes, bytes);
    if (g.count) --g.count;
  };
  // A segment that ever held a block is the allocator's: what it holds now is its blocks (added
  // below), or nothing (its cache, shown apart). Under expandable_segments a segment is a
  // mapping, and its physical handle and the reservation around it are the allocator's too.
  std::set<uint64_t> handles, reservations;
  for (const auto& [address, seg] : blocks.segments()) {
    if (!seg.held_block) continue;
    if (const LiveAllocation* a = replay.live().find(address)) {
      const Site& s = replay.sites()[a->site];
      take(s.stack, s.series, s.api, LiveKind::Allocation, a->size);
      continue;
    }
    auto m = replay.mappings().find(address);
    if (m == replay.mappings().end()) continue;
    take(m->second.stack, m->second.series, m->second.api, LiveKind::Mapping, m->second.size);
    auto h = replay.handles().find(m->second.handle);
    if (h != replay.handles().end() && !h->second.imported && handles.insert(h->first).second) {
      const Site& s = replay.sites()[h->second.site];
      take(s.stack, s.series, s.api, LiveKind::Physical, h->second.size);
    }
    auto r = replay.reservations().upper_bound(address);
    if (r != replay.reservations().begin() && (--r)->first + r->second.size > address &&
        reservations.insert(r->first).second)
      take(r->second.stack, r->second.series, r->second.api, LiveKind::Reservation, r->second.size);
  }
  std::erase_if(groups, [](const SiteGroup& g) { return g.count == 0; });
  for (const SiteGroup& g : block_site_groups(blocks.groups_now()))
    if (want(g.series)) groups.push_back(g);
  sort_groups(groups);
  return groups;
}

void append_allocated_summary(std::string& text, const BlockLayer& blocks, const Series& s,
                              const char* at_end) {
  const BlockDevice* b = blocks_of(blocks, s.key);
  if (!b) return;
  text += fmt::format(
      "    tensors       PyTorch's caching allocator, inside the memory above: {} allocated, {} "
      "freed\n",
      plural(b->allocations, "block", "blocks"), b->frees);
  text +=
      fmt::format("      peak        {} at seq {}\n", size_and_bytes(b->peak_bytes), b->peak_seq);
  if (s.peak_seq)
    text += fmt::format(
        "      overhead    {} at the reserved peak (seq {}): {} reserved, {} of it in blocks\n",
        human_size(s.peak_bytes - std::min(s.peak_bytes, b->allocated_at_reserved_peak)),
        s.peak_seq, human_size(s.peak_bytes), human_size(b->allocated_at_reserved_peak));
  if (b->live_count)
    text += fmt::format("      live at end {} in {}: {}\n", size_and_bytes(b->live_bytes),
                        plural(b->live_count, "block", "blocks"), at_end);
  else
    text += "      live at end 0 bytes\n";
  const BlockLayer::Cached c = blocks.cached(s.key.device);
  if (c.segments)
    text +=
        fmt::format("      cached      {} in {} holding no block: PyTorch's cache, not a leak\n",
                    human_size(c.bytes), plural(c.segments, "segment", "segments"));
  if (b->has_torch_totals) {
    const bool agree =
        b->torch_allocated == b->live_bytes && b->torch_max_allocated == b->peak_bytes;
    // Only the block totals are compared: torch's reserved is its own segments, while the
    // device's figures above also hold what was allocated outside PyTorch's allocator.
    text += fmt::format(
        "      torch says  allocated {}, max allocated {} (its totals at its last block): {}; "
        "reserved {} of the device memory above\n",
        human_size(b->torch_allocated), human_size(b->torch_max_allocated),
        agree ? "the same as gmemhook's" : "NOT the same as gmemhook's (blocks were missed)",
        human_size(b->torch_reserved));
  }
  if (b->unknown_frees)
    text += fmt::format("      note: {} of blocks that were not live\n",
                        plural(b->unknown_frees, "free", "frees"));
}

void write_allocated_summary(JsonWriter& json, const BlockLayer& blocks, const Series& s) {
  json.key("allocated");
  const BlockDevice* b = blocks_of(blocks, s.key);
  if (!b) return json.null();
  json.begin_object();
  json.field("allocations", b->allocations);
  json.field("frees", b->frees);
  json.field("allocated_bytes", b->allocated_bytes);
  json.field("peak_bytes", b->peak_bytes);
  json.field("peak_seq", b->peak_seq);
  json.field("live_bytes_at_end", b->live_bytes);
  json.field("live_count_at_end", b->live_count);
  const BlockLayer::Cached c = blocks.cached(s.key.device);
  json.field("cached_bytes_at_end", c.bytes);
  json.field("cached_segments_at_end", c.segments);
  json.field("allocated_at_reserved_peak", b->allocated_at_reserved_peak);
  json.field("unknown_frees", b->unknown_frees);
  json.key("torch");
  if (!b->has_torch_totals) {
    json.null();
  } else {
    json.begin_object();
    json.field("total_allocated", b->torch_allocated);
    json.field("total_reserved", b->torch_reserved);
    json.field("max_total_allocated", b->torch_max_allocated);
    json.end_object();
  }
  json.end_object();
}

std::vector<CachedSegments> cached_now(const BlockLayer& blocks,
                                       const std::function<bool(const SeriesKey&)>& want) {
  std::vector<CachedSegments> out;
  for (const BlockDevice& b : blocks.devices()) {
    if (!want({b.device, format::MemoryType::Device})) continue;
    const BlockLayer::Cached c = blocks.cached(b.device);
    if (c.segments) out.push_back({b.device, c.bytes, c.segments});
  }
  return out;
}

std::string cached_line(const CachedSegments& c) {
  return fmt::format(
      "Cached by PyTorch's allocator, not leaked: {} in {} on {} holding no tensor "
      "(torch.cuda.empty_cache() gives them back)\n",
      size_and_bytes(c.bytes), plural(c.segments, "segment", "segments"),
      series_label({c.device, format::MemoryType::Device}));
}

void write_cached(JsonWriter& json, const std::vector<CachedSegments>& cached) {
  json.objects("cached_by_allocator", cached, [&](const CachedSegments& c) {
    json.field("device", c.device);
    json.field("bytes", c.bytes);
    json.field("segments", c.segments);
  });
}

void append_segment_view(std::string& text, const std::vector<SegmentUse>& use) {
  if (use.empty()) return;
  text += fmt::format(
      "  PyTorch's segments ({}): size, allocated in blocks, free, largest free run\n", use.size());
  uint64_t size = 0, allocated = 0, free = 0, largest = 0;
  for (const SegmentUse& u : use) {
    size += u.size;
    allocated += u.allocated_bytes;
    free += u.free_bytes;
    largest = std::max(largest, u.largest_free_bytes);
  }
  constexpr size_t kShown = 8;
  for (size_t i = 0; i < use.size() && i < kShown; ++i) {
    const SegmentUse& u = use[i];
    text += fmt::format("    {:#x}  {:>10}  {:>10} in {:<9} {:>10} free, largest run {}\n",
                        u.address, human_size(u.size), human_size(u.allocated_bytes),
                        plural(u.blocks, "block", "blocks"), human_size(u.free_bytes),
                        human_size(u.largest_free_bytes));
  }
  if (use.size() > kShown)
    text += fmt::format("    ... {} more (--json lists all)\n", use.size() - kShown);
  text += fmt::format(
      "    all         {:>10}  {:>10} allocated, {} free inside segments; largest free run {}: "
      "a tensor larger than that needs a new segment\n",
      human_size(size), human_size(allocated), human_size(free), human_size(largest));
}

void write_segment_view(JsonWriter& json, const std::vector<SegmentUse>& use) {
  json.objects("allocator_segments", use, [&](const SegmentUse& u) {
    json.field("address", u.address);
    json.field("size", u.size);
    json.field("allocated_bytes", u.allocated_bytes);
    json.field("blocks", u.blocks);
    json.field("free_bytes", u.free_bytes);
    json.field("largest_free_bytes", u.largest_free_bytes);
  });
}

}  // namespace gmemhook::analysis

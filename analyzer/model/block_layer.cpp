// The allocated layer: PyTorch's blocks inside the segments the core counts (see block_layer.h).
#include "analyzer/model/block_layer.h"

#include <algorithm>

#include "analyzer/model/replay.h"

namespace gmemhook::analysis {

using format::EventKind;

void sort_block_groups(std::vector<BlockGroup>& groups) {
  std::sort(groups.begin(), groups.end(), [](const BlockGroup& a, const BlockGroup& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.count != b.count) return a.count > b.count;
    if (a.stack != b.stack) return a.stack < b.stack;
    return a.device < b.device;
  });
}

const BlockDevice* BlockLayer::device(int32_t d) const {
  for (const BlockDevice& b : devices_)
    if (b.device == d) return &b;
  return nullptr;
}

uint16_t BlockLayer::device_index(int32_t device) {
  for (size_t i = 0; i < devices_.size(); ++i)
    if (devices_[i].device == device) return static_cast<uint16_t>(i);
  devices_.emplace_back().device = device;
  since_peak_.emplace_back();
  peak_pending_.push_back(false);
  return static_cast<uint16_t>(devices_.size() - 1);
}

uint32_t BlockLayer::site_index(uint32_t stack, uint16_t device) {
  // + 1 keeps the key non-zero, as AddressMap needs.
  const uint64_t key = ((uint64_t{stack} << 16) | device) + 1;
  auto [slot, added] = site_by_key_.find_or_add(key);
  if (added) {
    *slot = static_cast<uint32_t>(sites_.size());
    sites_.push_back({stack, device});
  }
  return *slot;
}

// The segments as the calls so far made them: the core's live device allocations and mappings.
void BlockLayer::follow_from(const Replay& core) {
  following_ = true;
  // Every call from the next one on, those calls_of() declined while asleep included.
  for (size_t k = 0; k < 256; ++k) {
    const auto kind = static_cast<EventKind>(k);
    if (is_segment_call(kind) || always_stands_for_segments(kind)) core.also_call(*this, kind);
  }
  core.calls_every_segment_call(*this);
  core.live().for_each([&](uint64_t address, const LiveAllocation& a) {
    const SeriesKey& key = core.series()[a.series].key;
    if (key.memory == format::MemoryType::Device) add_segment(address, a.size, key.device);
  });
  for (const auto& [address, m] : core.mappings())
    add_segment(address, m.size, core.series()[m.series].key.device);
}

bool BlockLayer::calls_of(EventKind kind) const {
  // Asleep, the calls that always stand for segments change nothing here, and the replay tells
  // this layer only of the allocations, frees and maps that do not (segment_calls.h).
  return following_ || !(is_segment_call(kind) || always_stands_for_segments(kind));
}

void BlockLayer::call(const Replay& core, const format::Event& ev, const format::ApiInfo& api) {
  const EventKind kind = format::event_kind_of(api.kind, ev.f.mask);
  // Not following yet: nothing is pending either, and no block came yet, so nothing to note.
  if (!following_ && core_stands_for_segments(core, ev, api, kind)) return;
  follow_call(core, ev, api, kind);
}

[[gnu::noinline]] void BlockLayer::follow_call(const Replay& core, const format::Event& ev,
                                               const format::ApiInfo& api, EventKind kind) {
  if (!following_) follow_from(core);
  if (pending_) after_reserving(core);
  if (ev.result != 0) return;
  switch (kind) {
    case EventKind::BlockAlloc:
      return block(ev, false, core.event_stack());
    case EventKind::BlockFree:
      block(ev, true, core.event_stack());
      return note_idle(ev.seq, ev.time_ns, core, ev.f.device);
    case EventKind::Alloc: {
      const format::MemoryType memory = ev.f.has(format::kHasMemory) ? ev.f.memory : api.memory;
      if (ev.f.address &&
          (memory == format::MemoryType::Device || memory == format::MemoryType::None))
        add_segment(ev.f.address, ev.f.size, ev.f.device);
      pending_ = true;
      pending_call_ = {ev.seq, ev.time_ns, ev.f.device};
      return;
    }
    case EventKind::Create:
      pending_ = true;
      pending_call_ = {ev.seq, ev.time_ns, ev.f.device};
      return;
    case EventKind::Map: {
      // The handle's device, as the core will count it; the call's own when the handle is unknown.
      int32_t device = ev.f.device;
      // (An imported handle has no site of ours: the call's device.)
      if (auto h = core.handles().find(ev.f.handle);
          h != core.handles().end() && !h->second.imported)
        device = core.series()[core.site(h->second.site).series].key.device;
      return add_segment(ev.f.address, ev.f.size, device);
    }
    case EventKind::Free:
      if (ordered_)
        segments_.erase(ev.f.address);
      else
        unordered_segments_.erase(ev.f.address);
      return;
    case EventKind::Unmap: {
      order_segments();  // an unmap may end several mappings: a range of the ordered map
      auto it = segments_.lower_bound(ev.f.address);
      while (it != segments_.end() && it->first < ev.f.address + ev.f.size)
        it = segments_.erase(it);
      return;
    }
    default:
      return;
  }
}

void BlockLayer::add_segment(uint64_t address, uint64_t size, int32_t device) {
  if (!ordered_ && address) return unordered_segments_.insert(address, {size, device, false});
  segments_[address] = {size, device, false};
}

void BlockLayer::order_segments() {
  if (ordered_) return;
  ordered_ = true;
  unordered_segments_.for_each(
      [this](uint64_t address, const AllocatorSegment& s) { segments_[address] = s; });
  unordered_segments_.clear();
}

void BlockLayer::after_reserving(const Replay& core) {
  pending_ = false;
  const Pending p = pending_call_;
  for (const Series& s : core.series())
    if (s.peak_seq == p.seq && s.key.memory == format::MemoryType::Device)
      for (BlockDevice& d : devices_)
        if (d.device == s.key.device) d.allocated_at_reserved_peak = d.live_bytes;
  note_idle(p.seq, p.time_ns, core, p.device);
}

// Idle reserved memory only grows when a segment comes or a block goes: checked then.
void BlockLayer::note_idle(uint64_t seq, uint64_t time_ns, const Replay& core, int32_t device) {
  BlockDevice* d = nullptr;
  for (BlockDevice& b : devices_)
    if (b.device == device) d = &b;
  if (!d) return;
  for (const Series& s : core.series()) {
    if (s.key.memory != format::MemoryType::Device || s.key.device != device) continue;
    const uint64_t idle = s.live_bytes - std::min(s.live_bytes, d->live_bytes);
    if (idle > d->worst_idle_bytes) {
      d->worst_idle_bytes = idle;
      d->worst_idle_seq = seq;
      d->worst_idle_time_ns = time_ns;
    }
  }
}

void BlockLayer::block(const format::Event& ev, bool is_free, uint32_t stack) {
  order_segments();  // a block's segment is found by address range from here on
  const uint16_t index = device_index(ev.f.device);
  BlockDevice& d = devices_[index];
  if (ev.f.has(format::kHasTotals)) {
    d.has_torch_totals = true;
    d.torch_allocated = ev.f.allocated;
    d.torch_reserved = ev.f.reserved;
    d.torch_max_allocated = std::max(d.torch_max_allocated, ev.f.allocated);
  }
  const uint64_t address = ev.f.address;
  if (is_free) {
    LiveBlock b;
    if (!live_.take(address, &b)) {
      ++d.unknown_frees;
      return;
    }
    ++d.frees;
    site_changed(b.site, -static_cast<int64_t>(b.size), -1);
    devices_[sites_[b.site].device].live_bytes -= b.size;
    --devices_[sites_[b.site].device].live_count;
    return;
  }
  if (address == 0) return;
  ++d.allocations;
  d.allocated_bytes += ev.f.size;
  auto [slot, added] = live_.find_or_add(address);
  if (!added) {
    // Handed out again while live: its free was not recorded. The old block is gone.
    site_changed(slot->site, -static_cast<int64_t>(slot->size), -1);
    devices_[sites_[slot->site].device].live_bytes -= slot->size;
    --devices_[sites_[slot->site].device].live_count;
  }
  const uint32_t site = site_index(stack, index);
  *slot = {ev.f.size, site};
  d.live_bytes += ev.f.size;
  ++d.live_count;
  site_changed(site, static_cast<int64_t>(ev.f.size), 1);
  if (d.live_bytes > d.peak_bytes) {
    d.peak_bytes = d.live_bytes;
    d.peak_seq = ev.seq;
    d.peak_time_ns = ev.time_ns;
    since_peak_[index].clear();
    peak_pending_[index] = true;
  }
  auto seg = segments_.upper_bound(address);
  if (seg != segments_.begin() && (--seg)->first + seg->second.size > address)
    seg->second.held_block = true;
}

// As Replay's peak capture: log each site change since the device's latest peak, undo the log to
// recover the peak's per-site totals; take them early when the log outgrows the sites.
void BlockLayer::site_changed(uint32_t site, int64_t bytes, int64_t count) {
  Site& s = sites_[site];
  s.bytes += static_cast<uint64_t>(bytes);
  s.count += static_cast<uint64_t>(count);
  if (!peak_pending_[s.device]) return;
  std::vector<Change>& log = since_peak_[s.device];
  log.push_back({site, bytes, count});
  if (log.size() > std::max<size_t>(4096, 4 * sites_.size())) take_peak_sites(s.device);
}

std::vector<BlockGroup> BlockLayer::groups_of(uint16_t device,
                                              const std::vector<Change>* undo) const {
  std::vector<int64_t> undo_bytes(undo ? sites_.size() : 0), undo_count(undo_bytes.size());
  if (undo)
    for (const Change& c : *undo) {
      undo_bytes[c.site] += c.bytes;
      undo_count[c.site] += c.count;
    }
  std::vector<BlockGroup> groups;
  for (size_t i = 0; i < sites_.size(); ++i) {
    const Site& s = sites_[i];
    if (s.device != device) continue;
    uint64_t bytes = s.bytes, count = s.count;
    if (undo) {
      bytes -= static_cast<uint64_t>(undo_bytes[i]);
      count -= static_cast<uint64_t>(undo_count[i]);
    }
    if (count) groups.push_back({devices_[device].device, s.stack, bytes, count});
  }
  sort_block_groups(groups);
  return groups;
}

void BlockLayer::take_peak_sites(uint16_t device) {
  devices_[device].sites_at_peak = groups_of(device, &since_peak_[device]);
  since_peak_[device].clear();
  since_peak_[device].shrink_to_fit();
  peak_pending_[device] = false;
}

void BlockLayer::finish(const Replay& core) {
  if (pending_) after_reserving(core);
  for (size_t i = 0; i < devices_.size(); ++i)
    if (peak_pending_[i]) take_peak_sites(static_cast<uint16_t>(i));
}

std::vector<BlockGroup> BlockLayer::groups_now(const int32_t* only_device) const {
  std::vector<BlockGroup> all;
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (only_device && devices_[i].device != *only_device) continue;
    std::vector<BlockGroup> g = groups_of(static_cast<uint16_t>(i), nullptr);
    all.insert(all.end(), g.begin(), g.end());
  }
  sort_block_groups(all);
  return all;
}

std::vector<SegmentUse> BlockLayer::segment_use(int32_t device) const {
  std::vector<std::pair<uint64_t, uint64_t>> blocks;  // (address, size), sorted below
  live_.for_each([&](uint64_t address, const LiveBlock& b) {
    if (devices_[sites_[b.site].device].device == device) blocks.emplace_back(address, b.size);
  });
  std::sort(blocks.begin(), blocks.end());
  std::vector<SegmentUse> out;
  auto b = blocks.begin();
  for (const auto& [address, seg] : segments_) {
    if (seg.device != device || !seg.held_block) continue;
    SegmentUse u{address, seg.size};
    const uint64_t end = address + seg.size;
    // Blocks before this segment lie in none we know (or in an earlier one): skip them.
    while (b != blocks.end() && b->first + b->second <= address) ++b;
    uint64_t cursor = address;
    for (auto i = b; i != blocks.end() && i->first < end; ++i) {
      // A block of an expandable segment may run across two mappings: count each its part.
      const uint64_t lo = std::max(i->first, address), hi = std::min(i->first + i->second, end);
      if (lo > cursor) u.largest_free_bytes = std::max(u.largest_free_bytes, lo - cursor);
      u.allocated_bytes += hi - lo;
      ++u.blocks;
      cursor = std::max(cursor, hi);
    }
    if (end > cursor) u.largest_free_bytes = std::max(u.largest_free_bytes, end - cursor);
    u.free_bytes = seg.size - std::min(seg.size, u.allocated_bytes);
    out.push_back(u);
  }
  return out;
}

BlockLayer::Cached BlockLayer::cached(int32_t device) const {
  Cached c;
  for (const SegmentUse& u : segment_use(device))
    if (u.blocks == 0) {
      c.bytes += u.size;
      ++c.segments;
    }
  return c;
}

}  // namespace gmemhook::analysis

// The replay of one process's events (see replay.h for the model).
#include "analyzer/model/replay.h"

#include <algorithm>

#include "analyzer/log/thread_log.h"

namespace gmemhook::analysis {

using format::EventKind;
using format::MemoryType;

void sort_groups(std::vector<SiteGroup>& groups) {
  std::sort(groups.begin(), groups.end(), [](const SiteGroup& a, const SiteGroup& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.count != b.count) return a.count > b.count;
    if (a.stack != b.stack) return a.stack < b.stack;
    if (a.api != b.api) return a.api < b.api;
    return a.kind < b.kind;
  });
}

void Replay::keep_only_apis(const std::vector<std::string>& names) {
  api_ignored_.fill(false);
  if (names.empty()) return;
  api_ignored_.fill(true);
  for (const format::ApiInfo& a : format::kApis)
    for (const std::string& n : names)
      if (n == a.name) api_ignored_[static_cast<uint8_t>(a.id)] = false;
}

Replay::Replay() {
  for (const format::ApiInfo& a : format::kApis) apis_[static_cast<uint8_t>(a.id)] = &a;
}

void Replay::reset() {
  series_.clear();
  series_by_key_.fill(0);
  pools_.clear();
  sites_.clear();
  site_by_key_.clear();
  site_cache_.clear();
  since_peak_.clear();
  peak_pending_.clear();
  live_.clear();
  handles_.clear();
  mappings_.clear();
  reservations_.clear();
  anomalies_ = Anomalies{};
  blocks_.reset();
  events_ = last_seq_ = last_time_ns_ = 0;
  next_checkpoint_ = 0;
  next_checkpoint_seq_ = checkpoints_.empty() ? UINT64_MAX : checkpoints_.front();
}

void Replay::set_checkpoints(std::vector<uint64_t> seqs, std::function<void(uint64_t)> fn,
                             bool stop_after_last) {
  stop_after_last_ = stop_after_last;
  std::sort(seqs.begin(), seqs.end());
  seqs.erase(std::unique(seqs.begin(), seqs.end()), seqs.end());
  checkpoints_ = std::move(seqs);
  on_checkpoint_ = std::move(fn);
  next_checkpoint_ = 0;
  next_checkpoint_seq_ = checkpoints_.empty() ? UINT64_MAX : checkpoints_.front();
}

void Replay::set_time_checkpoint(uint64_t time_ns, std::function<void()> fn) {
  time_checkpoint_ns_ = time_ns;
  on_time_checkpoint_ = std::move(fn);
}

void Replay::finish() {
  for (size_t i = 0; i < series_.size(); ++i)
    if (capture_ && peak_pending_[i]) take_peak_sites(static_cast<uint16_t>(i));
  blocks_.finish();
  while (next_checkpoint_ < checkpoints_.size()) on_checkpoint_(checkpoints_[next_checkpoint_++]);
  next_checkpoint_seq_ = UINT64_MAX;
  if (on_time_checkpoint_) {
    time_checkpoint_ns_ = UINT64_MAX;
    auto fn = std::move(on_time_checkpoint_);
    on_time_checkpoint_ = nullptr;
    fn();
  }
}

void Replay::on_stack(uint32_t id, std::span<const uint64_t> frames, const ThreadLog& thread) {
  // Python frames belong to a stack's identity: two Python call sites reaching CUDA through the
  // same native frames are different stacks.
  stacks_.add(thread.index(), id, frames, thread.python_frames(id));
}

void Replay::on_py_code(const PyCode& code, const ThreadLog& thread) {
  stacks_.add_code(thread.index(), code);
}

void Replay::on_event(const format::Event& ev, const ThreadLog& thread) {
  // Checkpoints see the state after every event up to theirs: fire before anything later.
  while (ev.seq > next_checkpoint_seq_) {
    on_checkpoint_(checkpoints_[next_checkpoint_++]);
    next_checkpoint_seq_ =
        next_checkpoint_ < checkpoints_.size() ? checkpoints_[next_checkpoint_] : UINT64_MAX;
    if (stop_after_last_ && next_checkpoint_seq_ == UINT64_MAX) throw Stop{};
  }
  if (ev.time_ns > time_checkpoint_ns_) {
    time_checkpoint_ns_ = UINT64_MAX;
    auto fn = std::move(on_time_checkpoint_);
    on_time_checkpoint_ = nullptr;
    fn();
  }

  ++events_;
  last_seq_ = ev.seq;
  last_time_ns_ = ev.time_ns;
  const format::ApiInfo* api = apis_[ev.api];
  if (api_ignored_[ev.api]) {
    ++skipped_by_filter_;
    return;
  }
  if (!api) {
    ++anomalies_.unknown_api_events;
    ++anomalies_.unknown_api_ids[ev.api];
    return;
  }
  const uint32_t stack = stacks_.id(thread.index(), ev.stack_id);
  if (api->kind == EventKind::Alloc || api->kind == EventKind::Create) {
    if (thread.index() >= site_cache_.size()) site_cache_.resize(thread.index() + 1);
    auto& cache = site_cache_[thread.index()];
    if (ev.stack_id >= cache.size()) cache.resize(size_t{ev.stack_id} + 1);
    cache_slot_ = &cache[ev.stack_id];
  }
  if (api->kind == EventKind::Alloc && ev.result == 0) note_graph_allocation(ev);
  apply(ev, *api, stack);
  // The allocated layer (PyTorch's blocks) sees each event once the core applied it.
  blocks_.on_event(ev, format::event_kind_of(api->kind, ev.f.mask), stack, *this);
}

void Replay::apply(const format::Event& ev, const format::ApiInfo& api_info, uint32_t stack) {
  const format::ApiInfo* api = &api_info;
  switch (api->kind) {
    case EventKind::CaptureBegin:
    case EventKind::CaptureEnd:
    case EventKind::GraphLaunch:
      return graph_event(ev, api->kind);
    case EventKind::Alloc:
      return alloc(ev, *api, stack);
    case EventKind::Free:
      return free(ev, stack);
    case EventKind::Create:
      return create(ev, *api, stack);
    case EventKind::Release:
      return release(ev, stack);
    case EventKind::Map:
      return map(ev, stack);
    case EventKind::Unmap:
      return unmap(ev, stack);
    case EventKind::Reserve:
      return reserve(ev, stack);
    case EventKind::AddressFree:
      return address_free(ev, stack);
    case EventKind::BlockAlloc:
    case EventKind::BlockFree:
      return;  // blocks_ keeps them: they live inside segments counted above, never twice
  }
}

void Replay::graph_event(const format::Event& ev, EventKind kind) {
  if (ev.result != 0) return;
  auto it = std::find(capturing_streams_.begin(), capturing_streams_.end(), ev.f.stream);
  if (kind == EventKind::CaptureBegin) {
    ++graphs_.captures;
    if (it == capturing_streams_.end()) capturing_streams_.push_back(ev.f.stream);
  } else if (kind == EventKind::CaptureEnd) {
    if (it != capturing_streams_.end()) capturing_streams_.erase(it);
  } else {
    ++graphs_.launches;
  }
}

void Replay::note_graph_allocation(const format::Event& ev) {
  if (graphs_.launches) ++graphs_.allocations_between_launches;
  if (capturing_streams_.empty() || !ev.f.has(format::kHasStream)) return;
  if (std::find(capturing_streams_.begin(), capturing_streams_.end(), ev.f.stream) ==
      capturing_streams_.end())
    return;
  ++graphs_.capture_allocations;
  graphs_.capture_bytes += ev.f.size;
}

uint16_t Replay::series_index(int32_t device, MemoryType memory) {
  // Pinned host memory is on no device, whichever device was current when it was allocated.
  if (memory == MemoryType::HostPinned) device = kNoDevice;
  if (memory == MemoryType::None) memory = MemoryType::Device;
  if (device < kNoDevice) device = kNoDevice;
  const bool direct = device < kDirectDevices;
  const size_t slot = static_cast<size_t>(device + 1) * 4 + static_cast<size_t>(memory);
  if (direct && series_by_key_[slot]) return series_by_key_[slot] - 1;
  const SeriesKey key{device, memory};
  for (size_t i = 0; i < series_.size(); ++i)
    if (series_[i].key == key) return static_cast<uint16_t>(i);
  series_.emplace_back();
  series_.back().key = key;
  since_peak_.emplace_back();
  peak_pending_.push_back(false);
  const auto index = static_cast<uint16_t>(series_.size() - 1);
  if (direct) series_by_key_[slot] = index + 1;
  return index;
}

uint16_t Replay::pool_index(uint64_t handle, int32_t device) {
  for (size_t i = 0; i < pools_.size(); ++i)
    if (pools_[i].handle == handle && (handle != 0 || pools_[i].device == device))
      return static_cast<uint16_t>(i + 1);
  pools_.push_back(Pool{handle, device});
  return static_cast<uint16_t>(pools_.size());
}

uint32_t Replay::site_index(uint32_t stack, uint16_t series, uint8_t api, LiveKind kind) {
  // Never 0: api ids start at 1.
  const uint64_t key = (uint64_t{stack} << 32) | (uint64_t{series} << 16) | (uint64_t{api} << 8) |
                       static_cast<uint64_t>(kind);
  if (cache_slot_->key == key) return cache_slot_->site;
  auto [slot, added] = site_by_key_.find_or_add(key);
  if (added) {
    *slot = static_cast<uint32_t>(sites_.size());
    sites_.push_back({stack, series, api, kind});
  }
  *cache_slot_ = {key, *slot};
  return *slot;
}

// Peak capture: a series' live memory per site at its peak, in one pass. Every site change of a
// series since its latest peak is logged; undoing the log from the current per-site totals gives
// the totals at the peak. A new peak empties the log. When the log outgrows a bound proportional
// to the number of sites, the peak's groups are taken right away and logging stops until the
// next peak, so memory stays bounded and the time spent stays linear in the events.
void Replay::site_changed(uint32_t site, int64_t bytes, int64_t count) {
  Site& st = sites_[site];
  st.bytes += static_cast<uint64_t>(bytes);
  st.count += static_cast<uint64_t>(count);
  if (!capture_ || !peak_pending_[st.series]) return;
  std::vector<Change>& log = since_peak_[st.series];
  log.push_back({site, bytes, count});
  if (log.size() > std::max<size_t>(4096, 4 * sites_.size())) take_peak_sites(st.series);
}

std::vector<SiteGroup> Replay::groups_of(uint16_t series, const std::vector<int64_t>* undo_bytes,
                                         const std::vector<int64_t>* undo_count) const {
  std::vector<SiteGroup> groups;
  for (size_t i = 0; i < sites_.size(); ++i) {
    const Site& st = sites_[i];
    if (st.series != series) continue;
    uint64_t bytes = st.bytes, count = st.count;
    if (undo_bytes) {
      bytes -= static_cast<uint64_t>((*undo_bytes)[i]);
      count -= static_cast<uint64_t>((*undo_count)[i]);
    }
    if (count) groups.push_back({series_[series].key, st.api, st.kind, st.stack, bytes, count});
  }
  sort_groups(groups);
  return groups;
}

void Replay::take_peak_sites(uint16_t series) {
  std::vector<Change>& log = since_peak_[series];
  std::vector<int64_t> undo_bytes(sites_.size()), undo_count(sites_.size());
  for (const Change& c : log) {
    undo_bytes[c.site] += c.bytes;
    undo_count[c.site] += c.count;
  }
  series_[series].sites_at_peak = groups_of(series, &undo_bytes, &undo_count);
  log.clear();
  log.shrink_to_fit();
  peak_pending_[series] = false;
}

std::vector<SiteGroup> Replay::sites_now(const std::function<bool(const SeriesKey&)>& want) const {
  std::vector<SiteGroup> all;
  for (size_t i = 0; i < series_.size(); ++i) {
    if (!want(series_[i].key)) continue;
    std::vector<SiteGroup> g = groups_of(static_cast<uint16_t>(i), nullptr, nullptr);
    all.insert(all.end(), g.begin(), g.end());
  }
  sort_groups(all);
  return all;
}

void Replay::became_live(uint32_t site, uint64_t bytes, const format::Event& ev) {
  site_changed(site, static_cast<int64_t>(bytes), 1);
  const uint16_t index = sites_[site].series;
  Series& s = series_[index];
  s.live_bytes += bytes;
  ++s.live_count;
  if (s.live_bytes > s.peak_bytes) {
    s.peak_bytes = s.live_bytes;
    s.peak_seq = ev.seq;
    s.peak_time_ns = ev.time_ns;
    if (capture_) {
      // The state now is the peak's: log what changes from here on.
      since_peak_[index].clear();
      peak_pending_[index] = true;
    }
  }
  s.timeline.add(ev.seq, ev.time_ns, s.live_bytes);
}

void Replay::became_free(uint32_t site, uint64_t bytes, const format::Event& ev) {
  site_changed(site, -static_cast<int64_t>(bytes), -1);
  Series& s = series_[sites_[site].series];
  s.live_bytes -= bytes;
  --s.live_count;
  s.freed_bytes += bytes;
  s.timeline.add(ev.seq, ev.time_ns, s.live_bytes);
}

void Replay::unmatched(const format::Event& ev, uint64_t address, uint32_t stack,
                       uint64_t& counter) {
  ++counter;
  if (anomalies_.examples.size() < Anomalies::kKeptExamples)
    anomalies_.examples.push_back({ev.seq, address, stack, ev.api});
}

// The series an allocation or cuMemCreate belongs to, counted; -1 when the call failed (then it
// is recorded as a failure and never becomes live).
int32_t Replay::count_allocation(const format::Event& ev, const format::ApiInfo& api,
                                 uint32_t stack) {
  const MemoryType memory = ev.f.has(format::kHasMemory) ? ev.f.memory : api.memory;
  const uint16_t index = series_index(ev.f.device, memory);
  if (ev.result != 0) {
    failed(index, ev, stack);
    return -1;
  }
  Series& s = series_[index];
  ++s.allocations;
  ++s.allocations_by_api[ev.api];
  s.allocated_bytes += ev.f.size;
  return index;
}

void Replay::alloc(const format::Event& ev, const format::ApiInfo& api, uint32_t stack) {
  const int32_t counted = count_allocation(ev, api, stack);
  if (counted < 0) return;
  const uint16_t index = static_cast<uint16_t>(counted);
  Series& s = series_[index];
  const uint64_t size = ev.f.size;
  const uint64_t address = ev.f.address;
  if (address == 0) return;  // a zero-byte request: CUDA returns a null pointer, nothing is live

  auto [a, added] = live_.find_or_add(address);
  if (!added) {
    // The address is handed out again, so it was freed through a path the recorder did not see
    // (e.g. cudaDeviceReset). Count it and treat the old allocation as freed.
    ++anomalies_.reused_addresses;
    became_free(a->site, a->size, ev);
    if (a->pool) {
      Pool& p = pools_[a->pool - 1];
      p.live_bytes -= a->size;
      --p.live_count;
    }
  }

  uint16_t pool = 0;
  // Stream-ordered calls carry a stream; those without an explicit pool use the device's.
  if (ev.f.has(format::kHasPool) || ev.f.has(format::kHasStream)) {
    pool = pool_index(ev.f.has(format::kHasPool) ? ev.f.pool : 0, s.key.device);
    Pool& p = pools_[pool - 1];
    p.live_bytes += size;
    ++p.live_count;
    ++p.allocations;
    if (p.live_bytes > p.high_water_bytes) {
      p.high_water_bytes = p.live_bytes;
      p.high_water_seq = ev.seq;
    }
  }
  const uint32_t site = site_index(stack, index, ev.api, LiveKind::Allocation);
  *a = {size, site, pool};
  became_live(site, size, ev);
}

void Replay::failed(uint16_t index, const format::Event& ev, uint32_t stack) {
  Series& s = series_[index];
  ++s.failed;
  if (s.failures.size() < Series::kKeptFailures)
    s.failures.push_back({ev.seq, ev.time_ns, ev.f.size, ev.result, stack, ev.api});
  // The failed call changes nothing: what is live now is what held the memory when it failed.
  if (capture_ && s.failed == 1) s.sites_at_first_failure = groups_of(index, nullptr, nullptr);
}

void Replay::free(const format::Event& ev, uint32_t stack) {
  const uint64_t address = ev.f.address;
  if (ev.result != 0) {
    ++anomalies_.failed_frees;
    return;
  }
  if (address == 0) {
    ++anomalies_.null_frees;
    return;
  }
  LiveAllocation a;
  if (!live_.take(address, &a)) return unmatched(ev, address, stack, anomalies_.unknown_frees);
  Series& s = series_[sites_[a.site].series];
  ++s.frees;
  ++s.frees_by_api[ev.api];
  became_free(a.site, a.size, ev);
  if (a.pool) {
    Pool& p = pools_[a.pool - 1];
    p.live_bytes -= a.size;
    --p.live_count;
  }
}

void Replay::create(const format::Event& ev, const format::ApiInfo& api, uint32_t stack) {
  const int32_t counted = count_allocation(ev, api, stack);
  if (counted < 0) return;
  const uint16_t index = static_cast<uint16_t>(counted);
  Series& s = series_[index];
  const uint64_t size = ev.f.size;
  const uint64_t handle = ev.f.handle;
  if (handles_.count(handle)) {
    // The same handle value again while the old one still held memory: its release was missed.
    ++anomalies_.reused_addresses;
    drop_physical(handle, ev);
  }
  const uint32_t site = site_index(stack, index, ev.api, LiveKind::Physical);
  handles_[handle] = {size, site, false, 0};
  s.physical_bytes += size;
  s.max_physical_bytes = std::max(s.max_physical_bytes, s.physical_bytes);
  became_live(site, size, ev);
}

void Replay::drop_physical(uint64_t handle, const format::Event& ev) {
  auto it = handles_.find(handle);
  const uint32_t site = it->second.site;
  series_[sites_[site].series].physical_bytes -= it->second.size;
  became_free(site, it->second.size, ev);
  handles_.erase(it);
}

void Replay::release(const format::Event& ev, uint32_t stack) {
  if (ev.result != 0) {
    ++anomalies_.failed_frees;
    return;
  }
  auto it = handles_.find(ev.f.handle);
  if (it == handles_.end() || it->second.released)
    return unmatched(ev, ev.f.handle, stack, anomalies_.unknown_releases);
  PhysicalHandle& h = it->second;
  Series& s = series_[sites_[h.site].series];
  ++s.frees;
  ++s.frees_by_api[ev.api];
  h.released = true;
  if (h.mappings == 0) drop_physical(ev.f.handle, ev);
}

void Replay::map(const format::Event& ev, uint32_t stack) {
  if (ev.result != 0) {
    ++anomalies_.failed_other;
    return;
  }
  uint16_t index;
  auto it = handles_.find(ev.f.handle);
  if (it != handles_.end()) {
    ++it->second.mappings;
    index = sites_[it->second.site].series;
  } else {
    ++anomalies_.unknown_handle_maps;
    index = series_index(ev.f.device, MemoryType::Device);
  }
  Series& s = series_[index];
  s.mapped_bytes += ev.f.size;
  s.max_mapped_bytes = std::max(s.max_mapped_bytes, s.mapped_bytes);
  mappings_[ev.f.address] = {ev.f.size, ev.f.handle, ev.seq, stack, index, ev.api};
}

void Replay::unmap(const format::Event& ev, uint32_t stack) {
  if (ev.result != 0) {
    ++anomalies_.failed_frees;
    return;
  }
  // One cuMemUnmap may cover several whole mappings laid out back to back.
  const uint64_t begin = ev.f.address;
  const uint64_t end = begin + ev.f.size;
  auto it = mappings_.lower_bound(begin);
  if (it == mappings_.end() || it->first != begin)
    return unmatched(ev, begin, stack, anomalies_.unknown_unmaps);
  while (it != mappings_.end() && it->first < end) {
    const Mapping m = it->second;
    it = mappings_.erase(it);
    Series& s = series_[m.series];
    s.mapped_bytes -= m.size;
    auto h = handles_.find(m.handle);
    if (h != handles_.end() && h->second.mappings > 0 && --h->second.mappings == 0 &&
        h->second.released)
      drop_physical(m.handle, ev);
  }
}

void Replay::reserve(const format::Event& ev, uint32_t stack) {
  if (ev.result != 0) {
    ++anomalies_.failed_other;
    return;
  }
  const uint16_t index = series_index(ev.f.device, MemoryType::Device);
  Series& s = series_[index];
  s.reserved_bytes += ev.f.size;
  s.max_reserved_bytes = std::max(s.max_reserved_bytes, s.reserved_bytes);
  reservations_[ev.f.address] = {ev.f.size, ev.seq, stack, index, ev.api};
}

void Replay::address_free(const format::Event& ev, uint32_t stack) {
  if (ev.result != 0) {
    ++anomalies_.failed_frees;
    return;
  }
  auto it = reservations_.find(ev.f.address);
  if (it == reservations_.end())
    return unmatched(ev, ev.f.address, stack, anomalies_.unknown_address_frees);
  series_[it->second.series].reserved_bytes -= it->second.size;
  reservations_.erase(it);
}

}  // namespace gmemhook::analysis

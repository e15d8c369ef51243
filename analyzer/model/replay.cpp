// The replay of one process's events (see replay.h for the model).
#include "analyzer/model/replay.h"

#include <algorithm>
#include <tuple>

#include "analyzer/log/thread_file_reader.h"

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

Replay::Replay(StackInterner& stacks, const std::vector<std::string>& only_apis)
    : stacks_(&stacks) {
  // Each pass starts in the run's first module epoch; wake() moves on through the others.
  stacks_->enter_epoch(0);
  update_wake();
  for (const format::ApiInfo& a : format::kApis) apis_[static_cast<uint8_t>(a.id)] = &a;
  if (!only_apis.empty()) {
    api_ignored_.fill(true);
    for (const format::ApiInfo& a : format::kApis)
      for (const std::string& n : only_apis)
        if (n == a.name) api_ignored_[static_cast<uint8_t>(a.id)] = false;
  }
  update_usual_paths();
}

void Replay::observe(ReplayObserver& o) {
  observers_.push_back(&o);
  if (o.watch() & ReplayObserver::kCalls)
    for (size_t kind = 0; kind < kEventKinds; ++kind)
      if (o.calls_of(static_cast<EventKind>(kind))) calls_[kind].push_back(&o);
  if ((o.watch() & ReplayObserver::kCalls) && o.needs_odd_segment_calls())
    odd_segment_calls_.push_back(&o);
  if (o.watch() & ReplayObserver::kPoolAllocations) pool_allocations_.push_back(&o);
  if (o.watch() & ReplayObserver::kSites) site_watchers_.push_back(&o);
  if (o.watch() & ReplayObserver::kMoments) {
    moments_.push_back(&o);
    update_wake();
  }
  update_usual_paths();
}

void Replay::also_call(ReplayObserver& o, EventKind kind) const {
  std::vector<ReplayObserver*>& calls = calls_[static_cast<uint8_t>(kind)];
  if (std::find(calls.begin(), calls.end(), &o) != calls.end()) return;
  // In the order the observers were attached, as if calls_of() had said yes.
  const auto attached = [&](const ReplayObserver* x) {
    return std::find(observers_.begin(), observers_.end(), x) - observers_.begin();
  };
  const auto at = std::find_if(calls.begin(), calls.end(),
                               [&](const ReplayObserver* x) { return attached(x) > attached(&o); });
  calls.insert(at, &o);
  update_usual_paths();
}

void Replay::calls_every_segment_call(ReplayObserver& o) const {
  odd_segment_calls_.erase(std::remove(odd_segment_calls_.begin(), odd_segment_calls_.end(), &o),
                           odd_segment_calls_.end());
  update_usual_paths();
}

void Replay::update_usual_paths() const {
  // While an observer needs the calls a list of segments would not follow, any allocation or
  // free may be one as long as something is mapped (segment_calls.h). While a stream is captured,
  // a stream-ordered call on it is a graph node, not memory: every allocation and free goes whole
  // then (captures are short and rare; the test per event was ~4 instructions of every one).
  const bool odd = !odd_segment_calls_.empty();
  const bool usual = (!odd || mappings_.empty()) && !graphs_.capturing_any();
  for (size_t id = 0; id < usual_paths_.size(); ++id) {
    const format::ApiInfo* api = apis_[id];
    UsualPath& path = usual_paths_[id];
    path = UsualPath{};
    // An api skipped or unknown, or one whose calls an observer watches, goes the whole way.
    if (!api || api_ignored_[id] || !calls_[static_cast<uint8_t>(api->kind)].empty() || !usual)
      continue;
    if (api->kind == EventKind::Alloc) path.how = UsualPath::kAlloc;
    if (api->kind == EventKind::Free) path.how = UsualPath::kFree;
    path.check_device = odd;
    path.memory = api->memory;
  }
}

// Out of line: it happens a few times a run at most (an address in two roles, a device below
// -1), and each observer called may stop its checks (a copy of the list, then).
void Replay::call_odd_segment_call(const format::Event& ev, const format::ApiInfo& api) {
  const std::vector<ReplayObserver*> odd = odd_segment_calls_;
  for (ReplayObserver* o : odd) o->call(*this, ev, api);
}

void Replay::update_wake() {
  // The next module epoch rides on the moments' check, so a run without unloads pays nothing
  // per event for it.
  const ModuleEpochs* epochs = stacks_->epochs();
  wake_seq_ =
      epochs && epoch_ + 1 < epochs->count() ? epochs->starts_after_seq(epoch_ + 1) : UINT64_MAX;
  wake_time_ns_ = UINT64_MAX;
  for (const ReplayObserver* o : moments_) {
    wake_seq_ = std::min(wake_seq_, o->wake_seq());
    wake_time_ns_ = std::min(wake_time_ns_, o->wake_time_ns());
  }
}

void Replay::wake(const format::Event& next) {
  const ModuleEpochs* epochs = stacks_->epochs();
  if (epochs && epoch_ + 1 < epochs->count() && next.seq > epochs->starts_after_seq(epoch_ + 1)) {
    while (epoch_ + 1 < epochs->count() && next.seq > epochs->starts_after_seq(epoch_ + 1))
      ++epoch_;
    stacks_->enter_epoch(epoch_);
  }
  for (ReplayObserver* o : moments_)
    if (next.seq > o->wake_seq() || next.time_ns > o->wake_time_ns()) o->wake(*this, next);
  update_wake();
}

void Replay::finish() {
  for (ReplayObserver* o : observers_) o->finish(*this);
}

void Replay::on_stack(uint32_t id, std::span<const uint64_t> frames,
                      const ThreadFileReader& thread) {
  // Python frames belong to a stack's identity: two Python call sites reaching CUDA through the
  // same native frames are different stacks.
  stacks_->add(thread.index(), id, frames, thread.python_frames(id));
}

void Replay::on_py_code(const PyCode& code, const ThreadFileReader& thread) {
  stacks_->add_code(thread.index(), code);
}

void Replay::upcoming(const ThreadFileReader& thread) {
  // A live set of a few hundred allocations (most real programs; the hook loop's one) stays in
  // the cache, and so do the sites of its stacks: the prefetches were ~30 instructions an event
  // of `summary` for nothing there. The run of 20 000 live is where they pay.
  constexpr size_t kPrefetchFromLive = 1024;
  if (live_.size() < kPrefetchFromLive) return;
  const uint64_t address = thread.current_address();
  if (address == 0) return;  // none, or a null free: nothing to look up
  live_.prefetch(address);
  // A free on the usual path never reads its stack's sites (nor its stack).
  if (thread.current_is_usual() && usual_paths_[thread.usual().api()].how == UsualPath::kFree)
    return;
  // A stack met for the first time is not interned yet: id 0, whose line is as good as any.
  const uint32_t stack = stacks_->id(thread.index(), thread.current_stack_id());
  if (stack < sites_by_stack_.size()) prefetch(&sites_by_stack_[stack]);
}

[[gnu::always_inline]] inline void Replay::note_event(uint64_t seq, uint64_t time_ns) {
  ++events_;
  last_seq_ = seq;
  last_time_ns_ = time_ns;
}

void Replay::on_usual_event(const ThreadFileReader& thread) {
  const UsualEventRef ev = thread.usual();
  const uint64_t seq = ev.seq(), time_ns = ev.time_ns();
  const UsualPath::How how = usual_paths_[ev.api()].how;
  // The whole Event's way for what usual_paths_ sends there and a moment an observer waits for:
  // what is left is on_event's allocation or free with nothing else to do. Each in a function
  // of its own, reached by a jump: this one saves no registers, and a free does not save and
  // restore the six an allocation needs (~11 instructions an event).
  if (how == UsualPath::kWhole || seq > wake_seq_ || time_ns > wake_time_ns_)
    return apply_whole(thread);
  if (how == UsualPath::kAlloc) return usual_alloc(thread, seq, time_ns);
  return usual_free(thread, seq, time_ns);
}

// Never inlined into on_usual_event, which would then save registers for them.
[[gnu::noinline]] void Replay::apply_whole(const ThreadFileReader& thread) {
  on_event(thread.current(), thread);
}

[[gnu::noinline]] void Replay::usual_alloc(const ThreadFileReader& thread, uint64_t seq,
                                           uint64_t time_ns) {
  // Its numbers read once, before anything is stored: the compiler cannot tell the replay's
  // stores from the reader's fields, and read each again after every store (~27 instructions an
  // event of the hook loop's `summary`).
  const UsualEventRef ev = thread.usual();
  const uint8_t api = ev.api();
  const UsualPath path = usual_paths_[api];
  const uint64_t address = ev.address();
  const uint32_t stack_id = ev.stack_id();
  const int32_t device = ev.device();
  const uint64_t size = ev.size();
  const bool stream_ordered = ev.has(format::kHasStream);
  if (path.check_device && device < kNoDevice) return apply_whole(thread);
  LiveAllocation* slot = nullptr;
  if (address != 0) {  // else a zero-byte request: nothing becomes live
    bool added;
    std::tie(slot, added) = live_.find_or_add(address);
    // An address handed out again (its free was missed; for an observer of segments, maybe a
    // call they follow otherwise): on_event's, which finds it live as the slot is untouched.
    if (!added) return apply_whole(thread);
  }
  note_event(seq, time_ns);
  // Only its site needs the stack: event_stack() is for observers' call(), which makes an event
  // whole.
  const uint32_t stack = stacks_->id(thread.index(), stack_id);
  const uint16_t index = api_series_index(device, path.memory);
  count_success(index, api, size);
  if (!slot) return;
  // A stream-ordered allocation is in its device's default pool (a usual event names no pool).
  const uint16_t pool = stream_ordered ? pool_index(0, series_[index].key.device) : 0;
  // No launch applies its nodes here (that is on_event's): no launch stack to keep.
  make_live(slot, site_index(stack, index, api, LiveKind::Allocation), index, size, pool, seq,
            time_ns);
  if (pool)
    for (ReplayObserver* o : pool_allocations_) o->allocated(*this, seq, *slot);
}

[[gnu::noinline]] void Replay::usual_free(const ThreadFileReader& thread, uint64_t seq,
                                          uint64_t time_ns) {
  const UsualEventRef ev = thread.usual();
  const uint8_t api = ev.api();
  const uint64_t address = ev.address();
  LiveAllocation a;
  // A null free, or one of an address not live (imported, graph memory, unknown): on_event's.
  if (address == 0 || !live_.take(address, &a)) return apply_whole(thread);
  // A free's own stack goes nowhere: what it frees keeps its site (the stack's id was ~11
  // instructions of every free).
  note_event(seq, time_ns);
  count_free(a, api, seq, time_ns);
}

void Replay::on_event(const format::Event& ev, const ThreadFileReader& thread) {
  // Observers waiting for a moment see the state after every event before this one.
  if (ev.seq > wake_seq_ || ev.time_ns > wake_time_ns_) wake(ev);

  note_event(ev.seq, ev.time_ns);
  const format::ApiInfo* api = apis_[ev.api];
  if (api_ignored_[ev.api]) return;
  if (!api) {
    ++anomalies_.unknown_api_events;
    ++anomalies_.unknown_api_ids[ev.api];
    return;
  }
  const uint32_t stack = stacks_->id(thread.index(), ev.stack_id);
  event_stack_ = stack;
  for (ReplayObserver* o : calls_[static_cast<uint8_t>(api->kind)]) o->call(*this, ev, *api);
  switch (api->kind) {
    case EventKind::CaptureBegin:
      if (ev.result == 0) graphs_.begin_capture(ev.f.stream);
      update_usual_paths();
      return;
    case EventKind::CaptureEnd:
      end_capture(ev);
      update_usual_paths();
      return;
    case EventKind::GraphLaunch:
      return launch(ev, stack);
    case EventKind::GraphInstantiate:
      graph_call(ev, *api, stack);
      // cudaGraphInstantiateFlagUpload: the instantiation uploads at once.
      if (ev.result == 0 && (ev.f.flags & 2)) upload(ev, stack);
      return;
    case EventKind::GraphUpload:
      return upload(ev, stack);
    case EventKind::GraphAllocNode:
    case EventKind::GraphFreeNode:
    case EventKind::GraphExecDestroy:
    case EventKind::GraphDestroy:
    case EventKind::GraphChild:
    case EventKind::GraphClone:
      return graph_call(ev, *api, stack);
    case EventKind::GraphMemTrim:
    case EventKind::Export:
      return;  // no memory comes or goes
    case EventKind::Import:
      return import(ev, stack);
    case EventKind::ImportClose:
      return import_close(ev, stack);
    case EventKind::Retain:
      return retain(ev);
    // An observer asleep through plain allocations, frees and maps gets the others after the
    // observers above (a call reads the core, never another observer's state).
    case EventKind::Alloc:
      if (!odd_segment_calls_.empty() && !alloc_stands_for_segments(*this, ev, *api)) [[unlikely]]
        call_odd_segment_call(ev, *api);
      if (ev.f.has(format::kHasStream) && graphs_.capturing(ev.f.stream))
        return capture_node(ev, *api, stack);
      return apply_alloc(ev, *api, stack);
    case EventKind::Free:
      if (!odd_segment_calls_.empty() && !free_stands_for_segments(*this, ev)) [[unlikely]]
        call_odd_segment_call(ev, *api);
      if (ev.f.has(format::kHasStream) && graphs_.capturing(ev.f.stream))
        return capture_node(ev, *api, stack);
      return apply_free(ev, stack);
    case EventKind::Create:
      return create(ev, *api, stack);
    case EventKind::Release:
      return release(ev, stack);
    case EventKind::Map:
      if (!odd_segment_calls_.empty() && !map_stands_for_segments(*this, ev)) [[unlikely]]
        call_odd_segment_call(ev, *api);
      return map(ev, stack);
    case EventKind::Unmap:
      return unmap(ev, stack);
    case EventKind::Reserve:
      return reserve(ev, stack);
    case EventKind::AddressFree:
      return address_free(ev, stack);
    case EventKind::BlockAlloc:
    case EventKind::BlockFree:
      return;  // BlockLayer keeps them: inside segments counted above, never twice
  }
}

uint16_t Replay::find_series(int32_t device, MemoryType memory) {
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
  const auto index = static_cast<uint16_t>(series_.size() - 1);
  if (direct) series_by_key_[slot] = index + 1;
  return index;
}

uint16_t Replay::pool_index(uint64_t handle, int32_t device) {
  for (size_t i = 0; i < pools_.size(); ++i)
    if (pools_[i].handle == handle && (handle != 0 || pools_[i].device == device))
      return static_cast<uint16_t>(i + 1);
  pools_.push_back(PoolKey{handle, device});
  return static_cast<uint16_t>(pools_.size());
}

uint32_t Replay::find_site(uint32_t stack, uint16_t series, uint8_t api, LiveKind kind) {
  // Never 0: api ids start at 1.
  const uint64_t way_key =
      (uint64_t{series} << 16) | (uint64_t{api} << 8) | static_cast<uint64_t>(kind);
  if (stack >= sites_by_stack_.size())
    sites_by_stack_.resize(std::max<size_t>(stack, stacks_->size()) + 1);
  for (uint64_t& way : sites_by_stack_[stack].ways) {
    if ((way >> 32) == way_key) return static_cast<uint32_t>(way);
    if (way == 0) {
      const uint32_t site = add_site(stack, series, api, kind);
      way = (way_key << 32) | site;
      return site;
    }
  }
  // A stack with more kinds of sites than ways: the rest by hash.
  auto [slot, added] = site_by_key_.find_or_add((uint64_t{stack} << 32) | way_key);
  if (added) *slot = add_site(stack, series, api, kind);
  return *slot;
}

uint32_t Replay::add_site(uint32_t stack, uint16_t series, uint8_t api, LiveKind kind) {
  sites_.push_back({stack, series, api, kind});
  return static_cast<uint32_t>(sites_.size() - 1);
}

void Replay::tell_site_watchers(uint32_t site, int64_t bytes, int64_t count) {
  for (ReplayObserver* o : site_watchers_) o->site_changed(*this, site, bytes, count);
}

// Every live allocation and every handle of ours holding memory made its site hold it once
// (became_live), and nothing else did.
void Replay::count_sites() const {
  for (Site& st : sites_) st.bytes = st.count = 0;
  live_.for_each([this](uint64_t, const LiveAllocation& a) {
    sites_[a.site].bytes += a.size;
    ++sites_[a.site].count;
  });
  for (const auto& [handle, h] : handles_)
    if (!h.imported) {
      sites_[h.site].bytes += h.size;
      ++sites_[h.site].count;
    }
  sites_stale_ = false;
}

std::vector<SiteGroup> Replay::site_groups(uint16_t series, std::span<const int64_t> minus_bytes,
                                           std::span<const int64_t> minus_count) const {
  if (sites_stale_) count_sites();
  std::vector<SiteGroup> groups;
  for (size_t i = 0; i < sites_.size(); ++i) {
    const Site& st = sites_[i];
    if (st.series != series) continue;
    uint64_t bytes = st.bytes, count = st.count;
    if (i < minus_bytes.size()) bytes -= static_cast<uint64_t>(minus_bytes[i]);
    if (i < minus_count.size()) count -= static_cast<uint64_t>(minus_count[i]);
    if (count)
      groups.push_back({series_[series].key, st.api, st.kind, st.stack, bytes, count,
                        st.launch_stack, st.launch_api});
  }
  sort_groups(groups);
  return groups;
}

std::vector<SiteGroup> Replay::sites_now(const std::function<bool(const SeriesKey&)>& want) const {
  std::vector<SiteGroup> all;
  for (size_t i = 0; i < series_.size(); ++i) {
    if (!want(series_[i].key)) continue;
    std::vector<SiteGroup> g = site_groups(static_cast<uint16_t>(i));
    all.insert(all.end(), g.begin(), g.end());
  }
  sort_groups(all);
  return all;
}

// became_live, became_free and count_allocation are inlined into their callers here (all in this
// file): as calls, their saved registers and restores were ~20 instructions each per allocation
// and free of `summary`.
[[gnu::always_inline]] inline void Replay::became_live(uint32_t site, uint16_t index,
                                                       uint64_t bytes, uint64_t seq,
                                                       uint64_t time_ns) {
  site_changed(site, static_cast<int64_t>(bytes), 1);
  Series& s = series_[index];
  s.live_bytes += bytes;
  ++s.live_count;
  if (s.live_bytes > s.peak_bytes) {
    s.peak_bytes = s.live_bytes;
    s.peak_seq = seq;
    s.peak_time_ns = time_ns;
    for (ReplayObserver* o : site_watchers_) o->new_peak(*this, index);
  }
  s.timeline.add(seq, time_ns, s.live_bytes);
}

[[gnu::always_inline]] inline void Replay::became_free(uint32_t site, uint16_t series,
                                                       uint64_t bytes, uint64_t seq,
                                                       uint64_t time_ns) {
  site_changed(site, -static_cast<int64_t>(bytes), -1);
  Series& s = series_[series];
  s.live_bytes -= bytes;
  --s.live_count;
  s.freed_bytes += bytes;
  s.timeline.add(seq, time_ns, s.live_bytes);
}

void Replay::unmatched(const format::Event& ev, uint64_t address, uint32_t stack,
                       uint64_t& counter) {
  ++counter;
  if (anomalies_.examples.size() < Anomalies::kKeptExamples)
    anomalies_.examples.push_back({ev.seq, address, stack, ev.api});
}

// The series an allocation or cuMemCreate belongs to, counted; -1 when the call failed (then it
// is recorded as a failure and never becomes live).
[[gnu::always_inline]] inline int32_t Replay::count_allocation(const format::Event& ev,
                                                               const format::ApiInfo& api,
                                                               uint32_t stack) {
  const MemoryType memory = ev.f.has(format::kHasMemory) ? ev.f.memory : api.memory;
  const uint16_t index = series_index(ev.f.device, memory);
  if (ev.result != 0) {
    failed(index, ev, stack);
    return -1;
  }
  count_success(index, ev.api, ev.f.size);
  return index;
}

[[gnu::always_inline]] inline void Replay::count_success(uint16_t index, uint8_t api,
                                                         uint64_t bytes) {
  Series& s = series_[index];
  ++s.allocations;
  ++s.allocations_by_api[api];
  s.allocated_bytes += bytes;
}

void Replay::alloc(const format::Event& ev, const format::ApiInfo& api, uint32_t stack) {
  apply_alloc(ev, api, stack);
}

void Replay::free(const format::Event& ev, uint32_t stack) { apply_free(ev, stack); }

// Inlined into on_event: as calls of their own, their saved registers and restores were ~16
// instructions an event of `summary`.
[[gnu::always_inline]] inline void Replay::apply_alloc(const format::Event& ev,
                                                       const format::ApiInfo& api, uint32_t stack) {
  const int32_t counted = count_allocation(ev, api, stack);
  if (counted < 0) return;
  const uint16_t index = static_cast<uint16_t>(counted);
  const uint64_t address = ev.f.address;
  if (address == 0) return;  // a zero-byte request: CUDA returns a null pointer, nothing is live

  LiveAllocation* a = claim_address(address, ev.seq, ev.time_ns);
  uint16_t pool = 0;
  // Stream-ordered calls carry a stream; those without an explicit pool use the device's.
  if (ev.f.has(format::kHasPool) || ev.f.has(format::kHasStream))
    pool = pool_index(ev.f.has(format::kHasPool) ? ev.f.pool : 0, series_[index].key.device);
  const uint32_t site = site_index(stack, index, ev.api, LiveKind::Allocation);
  // Graph memory a launch or an upload makes live: its site keeps the first such call's stack.
  if (launch_stack_ && !sites_[site].launch_stack) {
    sites_[site].launch_stack = launch_stack_;
    sites_[site].launch_api = launch_api_;
  }
  make_live(a, site, index, ev.f.size, pool, ev.seq, ev.time_ns);
  if (pool)
    for (ReplayObserver* o : pool_allocations_) o->allocated(*this, ev.seq, *a);
}

[[gnu::always_inline]] inline LiveAllocation* Replay::claim_address(uint64_t address, uint64_t seq,
                                                                    uint64_t time_ns) {
  auto [a, added] = live_.find_or_add(address);
  if (!added) {
    // The address is handed out again, so it was freed through a path the recorder did not see
    // (e.g. cudaDeviceReset). Count it and treat the old allocation as freed.
    ++anomalies_.reused_addresses;
    became_free(a->site, a->series, a->size, seq, time_ns);
    if (a->pool)
      for (ReplayObserver* o : pool_allocations_) o->freed(*this, *a);
  }
  return a;
}

[[gnu::always_inline]] inline void Replay::make_live(LiveAllocation* a, uint32_t site,
                                                     uint16_t index, uint64_t size, uint16_t pool,
                                                     uint64_t seq, uint64_t time_ns) {
  *a = {size, site, pool, index};
  became_live(site, index, size, seq, time_ns);
}

void Replay::failed(uint16_t index, const format::Event& ev, uint32_t stack) {
  Series& s = series_[index];
  ++s.failed;
  if (s.failures.size() < Series::kKeptFailures)
    s.failures.push_back({ev.seq, ev.time_ns, ev.f.size, ev.result, stack, ev.api});
  for (ReplayObserver* o : site_watchers_) o->allocation_failed(*this, index);
}

[[gnu::always_inline]] inline void Replay::apply_free(const format::Event& ev, uint32_t stack) {
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
  if (!live_.take(address, &a)) {
    if (free_imported_or_node(ev)) return;
    return unmatched(ev, address, stack, anomalies_.unknown_frees);
  }
  count_free(a, ev.api, ev.seq, ev.time_ns);
}

[[gnu::always_inline]] inline void Replay::count_free(const LiveAllocation& a, uint8_t api,
                                                      uint64_t seq, uint64_t time_ns) {
  Series& s = series_[a.series];
  ++s.frees;
  ++s.frees_by_api[api];
  became_free(a.site, a.series, a.size, seq, time_ns);
  if (a.pool)
    for (ReplayObserver* o : pool_allocations_) o->freed(*this, a);
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
  became_live(site, index, size, ev.seq, ev.time_ns);
}

void Replay::drop_physical(uint64_t handle, const format::Event& ev) {
  auto it = handles_.find(handle);
  if (it->second.imported) {  // another allocation's memory: nothing of ours goes
    handles_.erase(it);
    return;
  }
  const uint32_t site = it->second.site;
  const uint16_t series = sites_[site].series;
  series_[series].physical_bytes -= it->second.size;
  became_free(site, series, it->second.size, ev.seq, ev.time_ns);
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
  if (h.retains > 0) {  // drops a cuMemRetainAllocationHandle reference, nothing else
    --h.retains;
    return;
  }
  h.released = true;
  if (h.imported) {
    if (h.mappings == 0) drop_physical(ev.f.handle, ev);
    return;
  }
  Series& s = series_[sites_[h.site].series];
  ++s.frees;
  ++s.frees_by_api[ev.api];
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
    index = it->second.imported ? series_index(ev.f.device, MemoryType::Device)
                                : sites_[it->second.site].series;
  } else {
    ++anomalies_.unknown_handle_maps;
    index = series_index(ev.f.device, MemoryType::Device);
  }
  Series& s = series_[index];
  s.mapped_bytes += ev.f.size;
  s.max_mapped_bytes = std::max(s.max_mapped_bytes, s.mapped_bytes);
  const bool first = mappings_.empty();
  mappings_[ev.f.address] = {ev.f.size, ev.f.handle, ev.seq, stack, index, ev.api};
  if (first) update_usual_paths();  // odd segment calls are possible from now on
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
    const AddressRange m = it->second;
    it = mappings_.erase(it);
    if (mappings_.empty()) update_usual_paths();
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
  reservations_[ev.f.address] = {
      .size = ev.f.size, .seq = ev.seq, .stack = stack, .series = index, .api = ev.api};
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

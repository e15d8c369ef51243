// Replays one process's events, in sequence order, into what was live at each moment: the live
// set by address, the virtual-memory handles, mappings and reservations, and per device and kind
// of memory (a Series) the counts, the peak and a timeline. Every report is built on it.
//
// The model:
// - Device, pinned host and managed memory are separate series; pinned host memory belongs to no
//   device. A series' live bytes are the requested bytes of its live allocations plus the
//   physical bytes of its live cuMemCreate handles; its peak is the maximum of that.
// - Frees, unmaps and releases carry no device: they act on the series of what they free.
// - Failed calls (result != 0) change nothing; failed allocations are kept as failures.
// - Stream-ordered frees count when issued (the log has no completion events).
// - CUDA frees a handle's physical memory only once it is released *and* unmapped everywhere.
// - A free of an address not live is counted and kept as an example, never fatal. Events of api
//   ids this build does not know are counted and skipped.
// - CUDA graph memory (graph_memory.h) becomes live at the launch that runs its allocation node,
//   or earlier at an upload of the exec (cudaGraphUpload, an instantiation with the upload flag),
//   under the node's call site (the launch's or upload's stack is kept beside it). It is freed by
//   a free node, a cudaFree or an auto-free relaunch; what an upload made live for a launch that
//   never came, by destroying the exec. Allocations made on a stream under capture are nodes,
//   not memory.
// - Imported memory (IPC handles, pool pointers, cuMemImportFromShareableHandle handles) is
//   another process's: it counts as mapped, never as an allocation of this process, and its
//   maps, unmaps and releases are never "unknown".
//
// Each live allocation and handle names its call site (stack, api, series); what each site holds
// is counted from the live set when read, not per event (sites()). What a pass needs beyond this
// live-set core (who held the peak, pools, CUDA graphs, checkpoints) is an observer attached to it
// (replay_observer.h); a Replay and its observers live for one pass, so there is nothing to reset
// between passes.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzer/log/event_visitor.h"
#include "analyzer/model/address_map.h"
#include "analyzer/model/graph_memory.h"
#include "analyzer/model/replay_observer.h"
#include "analyzer/model/segment_calls.h"
#include "analyzer/model/stack_interner.h"
#include "analyzer/model/timeline.h"
#include "gmemhook/api_table.h"

namespace gmemhook::analysis {

// The device of memory that lives on none (pinned host memory) or whose device is unknown.
inline constexpr int32_t kNoDevice = -1;

struct SeriesKey {
  int32_t device = kNoDevice;
  format::MemoryType memory = format::MemoryType::Device;
  bool operator==(const SeriesKey&) const = default;
};

// What a group of live things is: memory (an allocation or a physical handle) or address space
// (a VMM mapping or reservation, which holds no memory of its own).
enum class LiveKind : uint8_t { Allocation, Physical, Mapping, Reservation };

// Live things with the same series, api, kind and stack.
struct SiteGroup {
  SeriesKey series;
  uint8_t api = 0;
  LiveKind kind = LiveKind::Allocation;
  uint32_t stack = 0;  // StackInterner id
  uint64_t bytes = 0, count = 0;
  // Graph memory: where a launch or an upload made it live (0 otherwise), and which call
  // (cudaGraphLaunch, cudaGraphUpload, an instantiation with the upload flag).
  uint32_t launch_stack = 0;
  uint8_t launch_api = 0;
};

// Largest bytes first; ties by count, then by stack id (the order stacks were first met), so the
// order is the same from run to run.
void sort_groups(std::vector<SiteGroup>& groups);

// One failed allocation (or cuMemCreate), as recorded.
struct Failure {
  uint64_t seq = 0;
  uint64_t time_ns = 0;
  uint64_t bytes = 0;
  uint32_t result = 0;
  uint32_t stack = 0;  // StackInterner id
  uint8_t api = 0;
};

// Counts per api id, indexed by the id byte.
using ApiCounts = std::array<uint64_t, 256>;

struct Series {
  static constexpr size_t kKeptFailures = 16;

  SeriesKey key;
  uint64_t allocations = 0, frees = 0;  // successful calls (cuMemCreate / cuMemRelease included)
  ApiCounts allocations_by_api{}, frees_by_api{};
  uint64_t allocated_bytes = 0, freed_bytes = 0;
  uint64_t live_bytes = 0, live_count = 0;
  uint64_t peak_bytes = 0, peak_seq = 0, peak_time_ns = 0;  // peak_seq 0: nothing was ever live
  uint64_t failed = 0;
  std::vector<Failure> failures;  // the first kKeptFailures
  // Virtual memory: physical bytes of live handles (part of live_bytes), bytes mapped and
  // address space reserved, now and at most.
  uint64_t physical_bytes = 0, mapped_bytes = 0, reserved_bytes = 0;
  uint64_t max_physical_bytes = 0, max_mapped_bytes = 0, max_reserved_bytes = 0;
  Timeline timeline;
};

// A call site of live memory (allocations or physical handles) and what it holds now.
struct Site {
  uint32_t stack = 0;
  uint16_t series = 0;
  uint8_t api = 0;
  LiveKind kind = LiveKind::Allocation;
  uint64_t bytes = 0, count = 0;
  // Graph memory: the stack of the first launch or upload that made it live, and its api.
  uint32_t launch_stack = 0;
  uint8_t launch_api = 0;
};

// A live allocation (cudaMalloc family, pinned host, managed, stream-ordered). Small on purpose:
// the live set is probed once per event, and its misses are the replay's main cost.
struct LiveAllocation {
  uint64_t size = 0;
  uint32_t site = 0;  // index into Replay::sites()
  uint16_t pool = 0;  // 1 + index into Replay::pools() for stream-ordered memory, else 0
  // The site's series, kept here too (it fits the padding): a free then reaches its series
  // without first waiting for the site's line to come from memory.
  uint16_t series = 0;
};

// A cuMemCreate handle whose physical memory is not freed yet.
struct PhysicalHandle {
  uint64_t size = 0;
  uint32_t site = 0;
  bool released = false;  // cuMemRelease was called; freed when the last mapping goes
  uint32_t mappings = 0;
  uint32_t retains = 0;   // cuMemRetainAllocationHandle references not yet released
  bool imported = false;  // another allocation's memory: no bytes of this process, no site
};

// A range the VMM calls keep: mapped (cuMemMap: `handle` is the memory mapped there), reserved
// (cuMemAddressReserve) or imported (IPC, pool pointers); handle 0 for the last two.
struct AddressRange {
  uint64_t size = 0;
  uint64_t handle = 0;
  uint64_t seq = 0;
  uint32_t stack = 0;
  uint16_t series = 0;
  uint8_t api = 0;
};

// A stream-ordered memory pool: an explicit pool (cudaMallocFromPoolAsync) or a device's default
// pool (cudaMallocAsync). The replay only tells pools apart; PoolTracker (pool_tracker.h) keeps
// what each one holds.
struct PoolKey {
  uint64_t handle = 0;  // 0: the default pool of `device`
  int32_t device = kNoDevice;
};

// Something the replay could not match, kept as an example for the report.
struct Unmatched {
  uint64_t seq = 0;
  uint64_t address = 0;  // or the handle, for cuMemRelease
  uint32_t stack = 0;
  uint8_t api = 0;
};

struct Anomalies {
  static constexpr size_t kKeptExamples = 8;

  uint64_t unknown_frees = 0;     // free of an address that was not live
  uint64_t unknown_unmaps = 0;    // cuMemUnmap where nothing was mapped
  uint64_t unknown_releases = 0;  // cuMemRelease of a handle never created (or already gone)
  uint64_t unknown_address_frees = 0;
  uint64_t unknown_handle_maps = 0;     // cuMemMap of a handle never created
  uint64_t failed_frees = 0;            // free-like calls that returned an error
  uint64_t null_frees = 0;              // free(0): allowed and a no-op
  uint64_t reused_addresses = 0;        // allocation at a live address: its free was not recorded
  uint64_t failed_other = 0;            // failed map/reserve calls
  uint64_t unlaunched_graph_frees = 0;  // free of graph memory no recorded launch made live
  uint64_t unknown_api_events = 0;
  ApiCounts unknown_api_ids{};
  std::vector<Unmatched> examples;  // the first kKeptExamples unmatched frees/unmaps/releases
};

class Replay : public EventVisitor {
 public:
  // A pass interns its stacks into `stacks`, which passes over the same process share: a stack
  // keeps its id from one pass to the next. Events of entry points not in `only_apis` are skipped
  // (--api; empty: none is).
  explicit Replay(StackInterner& stacks, const std::vector<std::string>& only_apis = {});

  // Attaches `observer` to this pass (before it starts); it must outlive the pass.
  void observe(ReplayObserver& observer);
  // From the next event on, `observer` (attached, watching calls) also gets the calls of entry
  // points of `kind`, which its calls_of() declined: an observer that needs a kind only after
  // some event (graph tracking counts allocations once a graph was launched) costs nothing per
  // event before it.
  void also_call(ReplayObserver& observer, format::EventKind kind) const;
  // `observer`, which needs_odd_segment_calls(), now gets every allocation, free and map through
  // calls_of() or also_call(): the replay stops checking them for it.
  void calls_every_segment_call(ReplayObserver& observer) const;

  void on_event(const format::Event& ev, const ThreadFileReader& thread) override;
  // A plain allocation or free that no observer watches, from its few numbers; every other usual
  // event goes to on_event, whole.
  void on_usual_event(const ThreadFileReader& thread) override;
  // Prefetches the live set's slot of an allocation's or free's address (its probe was ~40 % of
  // `summary` on a run with 20 000 live allocations at random addresses) and the line of its
  // stack's sites.
  void upcoming(const ThreadFileReader& thread) override;
  void on_stack(uint32_t id, std::span<const uint64_t> frames,
                const ThreadFileReader& thread) override;
  void on_py_code(const PyCode& code, const ThreadFileReader& thread) override;

  // What an observer throws to cut the pass short once it has all it wanted; the caller of
  // ProcessReader::read_events catches it (the reader rewinds on its next pass).
  struct Stop {};
  // Ends a pass that read every event: tells the observers.
  void finish();

  // Live memory grouped by call site right now, for the series `want` accepts, largest first.
  std::vector<SiteGroup> sites_now(const std::function<bool(const SeriesKey&)>& want) const;
  // The same for series `series` (an index into series()). `minus_bytes` and `minus_count`, when
  // given, are subtracted from what each site (by index) holds now.
  std::vector<SiteGroup> site_groups(uint16_t series, std::span<const int64_t> minus_bytes = {},
                                     std::span<const int64_t> minus_count = {}) const;

  const std::vector<Series>& series() const { return series_; }
  // Stream-ordered pools in order of first use; LiveAllocation::pool is 1 + an index here.
  const std::vector<PoolKey>& pools() const { return pools_; }
  // Each site with what it holds now (recounted from the live set when something changed since
  // the last call: not a call to make per event).
  const std::vector<Site>& sites() const {
    if (sites_stale_) count_sites();
    return sites_;
  }
  // What site `site` is (stack, series, api, kind), for an observer per event: its bytes and
  // count may be out of date (sites() has them).
  const Site& site(uint32_t site) const { return sites_[site]; }
  size_t site_count() const { return sites_.size(); }
  const AddressMap<LiveAllocation>& live() const { return live_; }
  const std::unordered_map<uint64_t, PhysicalHandle>& handles() const { return handles_; }
  const std::map<uint64_t, AddressRange>& mappings() const { return mappings_; }
  const std::map<uint64_t, AddressRange>& reservations() const { return reservations_; }
  // Imported memory opened by address (IPC, pool pointers), mapped until closed or freed.
  const std::map<uint64_t, AddressRange>& imports() const { return imports_; }
  const Anomalies& anomalies() const { return anomalies_; }
  const StackInterner& stacks() const { return *stacks_; }
  // The interned stack of the event being applied, for an observer's call() (only there: the
  // usual path, which calls no call(), leaves it as it was).
  uint32_t event_stack() const { return event_stack_; }

  uint64_t events() const { return events_; }
  uint64_t last_seq() const { return last_seq_; }
  uint64_t last_time_ns() const { return last_time_ns_; }

 private:
  // The usual cases of series_index and site_index inline (a device's series, a site its stack
  // met before): as calls, their saved registers were about a third of their instructions.
  uint16_t series_index(int32_t device, format::MemoryType memory) {
    if (memory == format::MemoryType::Device && device >= kNoDevice && device < kDirectDevices)
      if (const uint16_t i =
              series_by_key_[static_cast<size_t>(device + 1) * 4 + static_cast<size_t>(memory)])
        return i - 1;
    return find_series(device, memory);
  }
  // The same for an api's own memory type (the api table's, never out of range), as the usual
  // path has it: no test of the type. Pinned memory's series is found the long way,
  // as by series_index.
  uint16_t api_series_index(int32_t device, format::MemoryType memory) {
    if (device >= kNoDevice && device < kDirectDevices)
      if (const uint16_t i =
              series_by_key_[static_cast<size_t>(device + 1) * 4 + static_cast<size_t>(memory)])
        return i - 1;
    return find_series(device, memory);
  }
  uint16_t find_series(int32_t device, format::MemoryType memory);
  uint16_t pool_index(uint64_t handle, int32_t device);
  uint32_t site_index(uint32_t stack, uint16_t series, uint8_t api, LiveKind kind) {
    // Never 0: api ids start at 1.
    const uint64_t way_key =
        (uint64_t{series} << 16) | (uint64_t{api} << 8) | static_cast<uint64_t>(kind);
    if (stack < sites_by_stack_.size())
      for (const uint64_t way : sites_by_stack_[stack].ways) {
        if ((way >> 32) == way_key) return static_cast<uint32_t>(way);
        if (way == 0) break;
      }
    return find_site(stack, series, api, kind);
  }
  uint32_t find_site(uint32_t stack, uint16_t series, uint8_t api, LiveKind kind);
  void became_live(uint32_t site, uint16_t series, uint64_t bytes, uint64_t seq, uint64_t time_ns);
  void became_free(uint32_t site, uint16_t series, uint64_t bytes, uint64_t seq, uint64_t time_ns);
  // Per allocation and free: inline, as most passes have no site watcher (the call was 2 % of
  // `summary`).
  void site_changed(uint32_t site, int64_t bytes, int64_t count) {
    sites_stale_ = true;
    if (!site_watchers_.empty()) tell_site_watchers(site, bytes, count);
  }
  void tell_site_watchers(uint32_t site, int64_t bytes, int64_t count);
  void failed(uint16_t series, const format::Event& ev, uint32_t stack);
  // on_usual_event's three ways: its allocation, its free, and on_event with the whole Event.
  void usual_alloc(const ThreadFileReader& thread, uint64_t seq, uint64_t time_ns);
  void usual_free(const ThreadFileReader& thread, uint64_t seq, uint64_t time_ns);
  void apply_whole(const ThreadFileReader& thread);
  void unmatched(const format::Event& ev, uint64_t address, uint32_t stack, uint64_t& counter);
  void wake(const format::Event& next);
  void update_wake();

  void alloc(const format::Event& ev, const format::ApiInfo& api, uint32_t stack);
  void free(const format::Event& ev, uint32_t stack);
  // Their bodies, inlined into on_event (replay.cpp); alloc and free are the same for the graph
  // nodes' calls in replay_nodes.cpp.
  void apply_alloc(const format::Event& ev, const format::ApiInfo& api, uint32_t stack);
  void apply_free(const format::Event& ev, uint32_t stack);
  // What apply_alloc and on_usual_event's allocation share: counting a successful allocation,
  // taking the address's slot in the live set (what held it is freed: its free was missed), and
  // making it live at its site.
  void count_success(uint16_t series, uint8_t api, uint64_t bytes);
  // What every event replayed (on_event's and on_usual_event's) leaves: the count and its moment.
  void note_event(uint64_t seq, uint64_t time_ns);
  LiveAllocation* claim_address(uint64_t address, uint64_t seq, uint64_t time_ns);
  void make_live(LiveAllocation* slot, uint32_t site, uint16_t series, uint64_t bytes,
                 uint16_t pool, uint64_t seq, uint64_t time_ns);
  // A successful free of a live allocation `a`, taken out of the live set already.
  void count_free(const LiveAllocation& a, uint8_t api, uint64_t seq, uint64_t time_ns);
  void create(const format::Event& ev, const format::ApiInfo& api, uint32_t stack);
  void release(const format::Event& ev, uint32_t stack);
  void map(const format::Event& ev, uint32_t stack);
  int32_t count_allocation(const format::Event& ev, const format::ApiInfo& api, uint32_t stack);
  void unmap(const format::Event& ev, uint32_t stack);
  void reserve(const format::Event& ev, uint32_t stack);
  void address_free(const format::Event& ev, uint32_t stack);
  void drop_physical(uint64_t handle, const format::Event& ev);
  // Graph memory and imported memory (replay_nodes.cpp).
  void capture_node(const format::Event& ev, const format::ApiInfo& api, uint32_t stack);
  void end_capture(const format::Event& ev);
  void graph_call(const format::Event& ev, const format::ApiInfo& api, uint32_t stack);
  void launch(const format::Event& ev, uint32_t stack);
  void upload(const format::Event& ev, uint32_t stack);
  void destroy_exec(const format::Event& ev, uint32_t stack);
  void import(const format::Event& ev, uint32_t stack);
  void import_close(const format::Event& ev, uint32_t stack);
  void retain(const format::Event& ev);
  bool free_imported_or_node(const format::Event& ev);

  std::array<const format::ApiInfo*, 256> apis_{};
  std::array<bool, 256> api_ignored_{};  // --api: events of other entry points are skipped
  StackInterner* stacks_;

  // Observers, and the same by what they watch: an empty list is all an unwatched moment costs.
  std::vector<ReplayObserver*> observers_, pool_allocations_, site_watchers_, moments_;
  // Those watching calls, by the kind of entry point they want calls of.
  static constexpr size_t kEventKinds = 256;
  // Mutable: also_call() lets an observer ask for more while it is being called (with the
  // const Replay it is given).
  mutable std::array<std::vector<ReplayObserver*>, kEventKinds> calls_;
  // Those that need_odd_segment_calls() and have not yet asked for every one (mutable as calls_).
  mutable std::vector<ReplayObserver*> odd_segment_calls_;
  void call_odd_segment_call(const format::Event& ev, const format::ApiInfo& api);
  // How on_usual_event takes a usual event, by api id: on its own (an allocation, a free) or
  // whole through on_event. Worked out again whenever what it depends on changes (an observer
  // attached or asking for more calls, the first mapping made or the last one gone), so that an
  // event reads one entry, not the dozen members its checks would read.
  struct UsualPath {
    enum How : uint8_t { kWhole = 0, kAlloc = 1, kFree = 2 } how = kWhole;
    // An allocation of a device below -1 is a call a list of segments follows otherwise: whole
    // while an observer needs those (segment_calls.h).
    bool check_device = false;
    format::MemoryType memory = format::MemoryType::Device;  // the api's
  };
  mutable std::array<UsualPath, 256> usual_paths_{};
  void update_usual_paths() const;
  // The lowest wake_seq() and wake_time_ns() of moments_: two compares per event.
  uint64_t wake_seq_ = UINT64_MAX, wake_time_ns_ = UINT64_MAX;
  size_t epoch_ = 0;  // the module epoch of the events so far (module_epochs.h)

  std::vector<Series> series_;
  // Series index + 1 by (device + 1) * 4 + memory for devices below kDirectDevices.
  static constexpr int32_t kDirectDevices = 127;
  std::array<uint16_t, (kDirectDevices + 1) * 4> series_by_key_{};
  std::vector<PoolKey> pools_;
  // What each site holds is not kept event by event but recounted from the live set when read:
  // the site's line, touched per allocation and free in a table of thousands of sites, cost a
  // quarter of `summary`. Observers watching sites get each change (site_changed) instead.
  mutable std::vector<Site> sites_;
  mutable bool sites_stale_ = false;
  void count_sites() const;
  // The sites each process-wide stack allocated at, by (series, api, kind): a stack nearly
  // always allocates through one or a few of those, so their first kStackWays sit in one cache
  // line indexed by the stack id; the rest go to site_by_key_. (A hash lookup per allocation, or a
  // one-entry cache that missed whenever a stack changed api, was a tenth of `summary`.)
  static constexpr size_t kStackWays = 8;
  struct alignas(64) StackSites {
    std::array<uint64_t, kStackWays> ways{};  // (series, api, kind) << 32 | site; 0: unused
  };
  std::vector<StackSites> sites_by_stack_;
  AddressMap<uint32_t> site_by_key_;  // (stack, series, api, kind) packed -> site index
  uint32_t add_site(uint32_t stack, uint16_t series, uint8_t api, LiveKind kind);
  AddressMap<LiveAllocation> live_;
  std::unordered_map<uint64_t, PhysicalHandle> handles_;
  std::map<uint64_t, AddressRange> mappings_;
  std::map<uint64_t, AddressRange> reservations_;
  std::map<uint64_t, AddressRange> imports_;
  GraphMemory graphs_;
  uint32_t launch_stack_ = 0;  // while a launch or an upload applies its nodes
  uint8_t launch_api_ = 0;     // and its api
  // By exec: the addresses of allocation nodes an upload made live and no launch has run since.
  // The next launch finds them allocated (auto-free must not free and remake them); destroying
  // the exec first frees them.
  std::unordered_map<uint64_t, std::vector<uint64_t>> uploaded_;
  Anomalies anomalies_;

  uint32_t event_stack_ = 0;
  uint64_t events_ = 0;
  uint64_t last_seq_ = 0;
  uint64_t last_time_ns_ = 0;
};

// Whether the core's state after this call will still say which segments exist: true for the
// calls it applies the way a segment list would (checked before the core applies the call; the
// kinds whose calls always do are in segment_calls.h). One function per kind, so that the
// replay's own switch on the kind picks one.
inline bool core_is_mapping(const Replay& core, uint64_t address) {
  return !core.mappings().empty() && core.mappings().count(address) != 0;
}
[[gnu::always_inline]] inline bool alloc_stands_for_segments(const Replay& core,
                                                             const format::Event& ev,
                                                             const format::ApiInfo& api) {
  if (ev.result != 0 || ev.f.address == 0) return true;  // changes nothing here nor there
  // The core clamps devices below -1 (a segment keeps the call's own), and an address live or
  // mapped already is replaced differently on each side.
  if (ev.f.device < -1 || core_is_mapping(core, ev.f.address)) return false;
  const format::MemoryType memory = ev.f.has(format::kHasMemory) ? ev.f.memory : api.memory;
  if (memory == format::MemoryType::Device || memory == format::MemoryType::None) return true;
  const LiveAllocation* old = core.live().find(ev.f.address);
  return !old || core.series()[old->series].key.memory != format::MemoryType::Device;
}
[[gnu::always_inline]] inline bool free_stands_for_segments(const Replay& core,
                                                            const format::Event& ev) {
  // A free of a mapped address ends the segment here, not the mapping.
  return ev.result != 0 || !core_is_mapping(core, ev.f.address);
}
inline bool map_stands_for_segments(const Replay& core, const format::Event& ev) {
  return ev.result != 0 ||
         (ev.f.address != 0 && ev.f.device >= -1 && !core.live().find(ev.f.address));
}
inline bool core_stands_for_segments(const Replay& core, const format::Event& ev,
                                     const format::ApiInfo& api, format::EventKind kind) {
  switch (kind) {
    case format::EventKind::Alloc:
      return alloc_stands_for_segments(core, ev, api);
    case format::EventKind::Free:
      return free_stands_for_segments(core, ev);
    case format::EventKind::Map:
      return map_stands_for_segments(core, ev);
    default:
      return ev.result != 0 || always_stands_for_segments(kind);
  }
}

}  // namespace gmemhook::analysis

// The allocated layer of a caching allocator (PyTorch's blocks): which blocks are live,
// per device the allocated bytes, their peak and the sites that held it, PyTorch's own totals,
// and the segments (what the allocator got from CUDA) each block lies in. An observer of a pass
// (replay_observer.h) that watches every call; the core's series stay the reserved layer, so a
// block is never counted on top of its segment.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "analyzer/model/address_map.h"
#include "analyzer/model/replay_observer.h"
#include "gmemhook/codec.h"

namespace gmemhook::analysis {

class Replay;

// Live blocks with the same device and stack.
struct BlockGroup {
  int32_t device = -1;
  uint32_t stack = 0;  // StackInterner id
  uint64_t bytes = 0, count = 0;
};

// Largest bytes first; ties by count, then stack id (first met first).
void sort_block_groups(std::vector<BlockGroup>& groups);

struct BlockDevice {
  int32_t device = -1;
  uint64_t allocations = 0, frees = 0;  // block events
  uint64_t allocated_bytes = 0;         // handed out in total
  uint64_t live_bytes = 0, live_count = 0;
  uint64_t peak_bytes = 0, peak_seq = 0, peak_time_ns = 0;
  // Allocated bytes at the moment the device's reserved memory (the core's device series) last
  // reached its peak: reserved - this is the allocator's overhead at that peak.
  uint64_t allocated_at_reserved_peak = 0;
  // The moment the allocator held the most reserved memory no block used (reserved - allocated
  // at its highest): where its cache stood idle, the worst moment for fragmentation.
  uint64_t worst_idle_bytes = 0, worst_idle_seq = 0, worst_idle_time_ns = 0;
  uint64_t unknown_frees = 0;  // a block freed that was not live (its allocation not recorded)
  // PyTorch's own running totals, from the last block event of the device, and the highest
  // total_allocated it reported (what max_memory_allocated() says).
  bool has_torch_totals = false;
  uint64_t torch_allocated = 0, torch_reserved = 0, torch_max_allocated = 0;
  std::vector<BlockGroup> sites_at_peak;  // after finish(), largest first
};

struct LiveBlock {
  uint64_t size = 0;
  uint32_t site = 0;  // index into BlockLayer's sites
};

// A segment: a live range of device memory the allocator may carve blocks from (a cudaMalloc
// family allocation, or a cuMemMap mapping as with expandable_segments).
struct AllocatorSegment {
  uint64_t size = 0;
  int32_t device = -1;
  bool held_block = false;  // a block ever lay in it: it belongs to the caching allocator
};

// One segment as the caching allocator sees it at a moment.
struct SegmentUse {
  uint64_t address = 0, size = 0;
  uint64_t allocated_bytes = 0, blocks = 0;
  uint64_t free_bytes = 0, largest_free_bytes = 0;
};

class BlockLayer : public ReplayObserver {
 public:
  BlockLayer() : ReplayObserver(kCalls) {}
  // Every call, before the core applies it: blocks change nothing the core counts, segments are
  // known from the call itself, and what needs the core's state after a call (its reserved peak,
  // idle memory) is looked at on the next call or at finish().
  void call(const Replay& core, const format::Event& ev, const format::ApiInfo& api) override;
  // Asleep (before the first block), none of the calls that always stand for segments, and only
  // the allocations, frees and maps that do not (segment_calls.h): the replay checks those
  // itself, a call per event less.
  bool calls_of(format::EventKind kind) const override;
  bool needs_odd_segment_calls() const override { return true; }
  // Ends a pass: completes the peak site captures.
  void finish(const Replay& core) override;

  bool any() const { return !devices_.empty(); }
  const std::vector<BlockDevice>& devices() const { return devices_; }
  const BlockDevice* device(int32_t d) const;
  // Complete once a block was seen; empty before (then no segment has held a block).
  const std::map<uint64_t, AllocatorSegment>& segments() const { return segments_; }
  uint64_t live_count() const { return live_.size(); }

  // The live blocks grouped by stack, for devices `want` accepts (all when null), largest first.
  std::vector<BlockGroup> groups_now(const int32_t* only_device = nullptr) const;
  // The device's segments that ever held a block, with the blocks live in them now.
  std::vector<SegmentUse> segment_use(int32_t device) const;
  // Bytes and count of the device's live segments that hold no live block but once did:
  // memory cached by the allocator.
  struct Cached {
    uint64_t bytes = 0, segments = 0;
  };
  Cached cached(int32_t device) const;

 private:
  struct Site {
    uint32_t stack = 0;
    uint16_t device = 0;  // index into devices_
    uint64_t bytes = 0, count = 0;
  };
  struct Change {
    uint32_t site;
    int64_t bytes, count;
  };
  uint16_t device_index(int32_t device);
  uint32_t site_index(uint32_t stack, uint16_t device);
  void site_changed(uint32_t site, int64_t bytes, int64_t count);
  void take_peak_sites(uint16_t device);
  std::vector<BlockGroup> groups_of(uint16_t device, const std::vector<Change>* undo) const;
  void block(const format::Event& ev, bool is_free, uint32_t stack);
  void add_segment(uint64_t address, uint64_t size, int32_t device);
  // After a call that may raise reserved memory (seq, time, device), on the next call.
  void after_reserving(const Replay& core);
  void note_idle(uint64_t seq, uint64_t time_ns, const Replay& core, int32_t device);

  struct Pending {
    uint64_t seq = 0, time_ns = 0;
    int32_t device = -1;
  };
  bool pending_ = false;
  Pending pending_call_;

  std::vector<BlockDevice> devices_;
  std::vector<Site> sites_;
  AddressMap<uint32_t> site_by_key_;  // (stack, device) packed -> site index + 1
  AddressMap<LiveBlock> live_;
  std::map<uint64_t, AllocatorSegment> segments_;  // by start address
  // Until the first block (or unmap), segments live here: a program without PyTorch never needs
  // them in order, and a tree insert and erase per allocation was a third of `summary`'s time.
  AddressMap<AllocatorSegment> unordered_segments_;
  bool ordered_ = false;
  void order_segments();
  // Before the first block, the segments are exactly the core's live device allocations and
  // mappings, as long as only plain calls came (allocations, frees, handles, maps): then nothing
  // is followed per event (a second hash map probed per allocation and free was a fifth of
  // `summary` on runs without PyTorch) and the segments are taken from the core at the first call
  // that needs them or that the core would apply differently (a block, an unmap, graphs,
  // imports, an address in two roles). From then on each call is followed as it comes.
  bool following_ = false;
  void follow_from(const Replay& core);
  // call() once following (or about to): a function of its own so that the calls returning at
  // once, all of them on a run without PyTorch, save and restore no registers (a third of the
  // call's instructions).
  void follow_call(const Replay& core, const format::Event& ev, const format::ApiInfo& api,
                   format::EventKind kind);
  // Per device, the site changes since its latest allocated peak (as in Replay's PeakCapture).
  std::vector<std::vector<Change>> since_peak_;
  std::vector<bool> peak_pending_;
};

}  // namespace gmemhook::analysis

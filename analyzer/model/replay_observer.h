// What a pass over a process's events can watch besides the live set (replay.h): the peak's call
// sites, pools, CUDA graphs, checkpoints. Each observer keeps its own state and lives for one pass,
// so a second pass, with new observers, starts clean by construction.
#pragma once

#include <cstdint>

#include "gmemhook/api_table.h"
#include "gmemhook/codec.h"

namespace gmemhook::analysis {

class Replay;
struct LiveAllocation;

class ReplayObserver {
 public:
  // Which calls an observer wants, fixed when it is attached: the replay makes only those, so what
  // nobody watches costs nothing per event.
  enum Watch : unsigned {
    kCalls = 1u << 0,            // call()
    kPoolAllocations = 1u << 1,  // allocated(), freed() of stream-ordered allocations
    kSites = 1u << 2,            // site_changed(), new_peak(), allocation_failed()
    kMoments = 1u << 3,          // wake_seq(), wake_time_ns(), wake()
  };

  explicit ReplayObserver(unsigned watch) : watch_(watch) {}
  virtual ~ReplayObserver() = default;
  unsigned watch() const { return watch_; }

  // kCalls: every event the replay applies (a known entry point that --api keeps), before it
  // changes anything.
  virtual void call(const Replay&, const format::Event&, const format::ApiInfo&) {}
  // kCalls: whether call() wants the events of entry points of `kind` (asked once per kind when
  // the observer is attached; a call per event that returned at once was 3 % of `summary`).
  virtual bool calls_of(format::EventKind /*kind*/) const { return true; }
  // kCalls: an observer whose calls_of() declines allocations, frees and maps while the core's
  // live set and mappings say all it needs of them (BlockLayer before the first block) still
  // gets those the core applies otherwise than a list of segments would
  // (core_stands_for_segments, replay.h), until it asks for every one
  // (Replay::calls_every_segment_call).
  virtual bool needs_odd_segment_calls() const { return false; }

  // kPoolAllocations: a stream-ordered allocation (LiveAllocation::pool != 0) entered the live set,
  // or left it (freed, or its address handed out again). Only those: what pools hold is all an
  // observer wanted of allocations, and the call per cudaMalloc and cudaFree that returned at
  // once was ~5 % of `summary` on a loop of cudaMalloc/cudaFree. `seq` is the
  // allocation's (no Event: the replay applies most of these without filling one).
  virtual void allocated(const Replay&, uint64_t /*seq*/, const LiveAllocation&) {}
  virtual void freed(const Replay&, const LiveAllocation&) {}

  // kSites: what site `site` (Replay::sites()) holds changed by `bytes` and `count`: the site's
  // totals already say so, its series' not yet.
  virtual void site_changed(const Replay&, uint32_t /*site*/, int64_t /*bytes*/,
                            int64_t /*count*/) {}
  // kSites: series `series` reached a new peak: the replay's state now is the peak's.
  virtual void new_peak(const Replay&, uint16_t /*series*/) {}
  // kSites: an allocation of series `series` failed: the state now is what held the memory then
  // (a failed call changes nothing).
  virtual void allocation_failed(const Replay&, uint16_t /*series*/) {}

  // kMoments: the replay calls wake() before the first event whose seq is above wake_seq() or
  // whose time is above wake_time_ns(), so the state is the one after every earlier event. Both
  // are read again after each wake() and may throw Replay::Stop to cut the pass short.
  virtual uint64_t wake_seq() const { return UINT64_MAX; }
  virtual uint64_t wake_time_ns() const { return UINT64_MAX; }
  virtual void wake(const Replay&, const format::Event& /*next*/) {}

  // The pass read every event (not called when a Replay::Stop cut it short).
  virtual void finish(const Replay&) {}

 private:
  unsigned watch_;
};

}  // namespace gmemhook::analysis

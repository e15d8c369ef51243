// The replay's model on processes whose answers are known by construction: the live set, peaks,
// memory kinds kept apart, frees without a device, failures, unknown frees and api ids, pools,
// the VMM create/map/unmap/release orders, checkpoints, and the containers underneath.
#include "analyzer/model/replay.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <tuple>
#include <unordered_map>

#include "analyzer/model/address_map.h"
#include "analyzer/model/checkpoints.h"
#include "analyzer/model/live_view.h"
#include "analyzer/model/timeline.h"
#include "report_scenario.h"

namespace gmemhook::test_logs {
namespace {

using analysis::Replay;
using analysis::Series;
using format::ApiId;
using format::MemoryType;

constexpr uint64_t kMiB = 1 << 20;

const Series* series(const Replay& r, int32_t device, MemoryType memory = MemoryType::Device) {
  for (const Series& s : r.series())
    if (s.key.device == device && s.key.memory == memory) return &s;
  return nullptr;
}

TEST(Replay, LiveSetPeakAndEnd) {
  Scenario s(10);
  const uint32_t st = s.stack(11, {0x401000});
  s.alloc(11, ApiId::cudaMalloc, 0x1000, 100, 0, st);  // seq 1: 100
  s.alloc(11, ApiId::cudaMalloc, 0x2000, 300, 0, st);  // seq 2: 400
  s.free(11, ApiId::cudaFree, 0x1000);                 // seq 3: 300
  s.alloc(11, ApiId::cudaMalloc, 0x3000, 250, 0, st);  // seq 4: 550, the peak
  s.free(11, ApiId::cudaFree, 0x2000);                 // seq 5: 250
  const auto run = replay(s);
  const Replay& r = run->replay;
  const Series* d = series(r, 0);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(r.series().size(), 1u);
  EXPECT_EQ(d->allocations, 3u);
  EXPECT_EQ(d->allocations_by_api[uint8_t(ApiId::cudaMalloc)], 3u);
  EXPECT_EQ(d->frees, 2u);
  EXPECT_EQ(d->allocated_bytes, 650u);
  EXPECT_EQ(d->freed_bytes, 400u);
  EXPECT_EQ(d->peak_bytes, 550u);
  EXPECT_EQ(d->peak_seq, 4u);
  EXPECT_EQ(d->peak_time_ns, kStartNs + 4000000);
  EXPECT_EQ(d->live_bytes, 250u);
  EXPECT_EQ(d->live_count, 1u);
  ASSERT_EQ(r.live().size(), 1u);
  EXPECT_EQ(r.live().find(0x3000)->size, 250u);
  EXPECT_EQ(r.events(), 5u);
  EXPECT_EQ(r.last_seq(), 5u);
}

TEST(Replay, FreesTakeTheDeviceOfTheirAllocation) {
  Scenario s(10);
  s.alloc(11, ApiId::cudaMalloc, 0x1000, 64, 1);
  s.alloc(11, ApiId::cuMemAlloc_v2, 0x2000, 32, 3);
  s.free(11, ApiId::cudaFree, 0x2000);  // no device field: the allocation's device 3
  const auto run = replay(s);
  const Replay& r = run->replay;
  ASSERT_NE(series(r, 1), nullptr);
  ASSERT_NE(series(r, 3), nullptr);
  EXPECT_EQ(series(r, analysis::kNoDevice), nullptr);
  EXPECT_EQ(series(r, 1)->live_bytes, 64u);
  EXPECT_EQ(series(r, 3)->live_bytes, 0u);
  EXPECT_EQ(series(r, 3)->frees, 1u);
  EXPECT_EQ(series(r, 3)->frees_by_api[uint8_t(ApiId::cudaFree)], 1u);
}

TEST(Replay, UnknownFreesAreCountedNotFatal) {
  Scenario s(10);
  s.alloc(11, ApiId::cudaMalloc, 0x1000, 64);
  s.free(11, ApiId::cudaFree, 0xdead0000);  // never allocated
  s.free(11, ApiId::cudaFree, 0);           // free(nullptr): allowed
  s.free(11, ApiId::cudaFree, 0x1000);
  s.free(11, ApiId::cudaFree, 0x1000);  // twice
  const auto run = replay(s);
  const Replay& r = run->replay;
  EXPECT_EQ(r.anomalies().unknown_frees, 2u);
  EXPECT_EQ(r.anomalies().null_frees, 1u);
  ASSERT_EQ(r.anomalies().examples.size(), 2u);
  EXPECT_EQ(r.anomalies().examples[0].address, 0xdead0000u);
  EXPECT_EQ(r.anomalies().examples[0].seq, 2u);
  EXPECT_EQ(r.anomalies().examples[1].seq, 5u);
  EXPECT_EQ(series(r, 0)->frees, 1u);
  EXPECT_EQ(series(r, 0)->live_bytes, 0u);
}

TEST(Replay, FailedAllocationsNeverEnterTheLiveSet) {
  Scenario s(10);
  const uint32_t st = s.stack(11, {0x401234});
  s.alloc(11, ApiId::cudaMalloc, 0x1000, 64);
  s.alloc(11, ApiId::cudaMalloc, 0, 1 << 30, 0, st, 2);  // out of memory
  const auto run = replay(s);
  const Replay& r = run->replay;
  const Series* d = series(r, 0);
  EXPECT_EQ(d->allocations, 1u);
  EXPECT_EQ(d->failed, 1u);
  ASSERT_EQ(d->failures.size(), 1u);
  EXPECT_EQ(d->failures[0].bytes, 1u << 30);
  EXPECT_EQ(d->failures[0].seq, 2u);
  EXPECT_EQ(d->failures[0].result, 2u);
  EXPECT_EQ(d->failures[0].api, uint8_t(ApiId::cudaMalloc));
  EXPECT_EQ(r.stacks().frames(d->failures[0].stack)[0], 0x401234u);
  EXPECT_EQ(d->live_bytes, 64u);
  EXPECT_EQ(d->peak_bytes, 64u);
  EXPECT_EQ(r.live().size(), 1u);
}

TEST(Replay, DevicePinnedAndManagedMemoryAreKeptApart) {
  Scenario s(10);
  s.alloc(11, ApiId::cudaMalloc, 0x1000, 100, 0);
  s.alloc(11, ApiId::cudaMallocHost, 0x2000, 200, 0);  // recorded with the current device
  s.alloc(11, ApiId::cudaMallocManaged, 0x3000, 300, 0);
  s.create(11, 7, 2 * kMiB, 0, 0, /*host=*/true);  // cuMemCreate of host memory
  const auto run = replay(s);
  const Replay& r = run->replay;
  ASSERT_EQ(r.series().size(), 3u);
  EXPECT_EQ(series(r, 0)->peak_bytes, 100u);
  const Series* pinned = series(r, analysis::kNoDevice, MemoryType::HostPinned);
  ASSERT_NE(pinned, nullptr);
  EXPECT_EQ(pinned->live_bytes, 200u + 2 * kMiB);
  EXPECT_EQ(pinned->physical_bytes, 2 * kMiB);
  EXPECT_EQ(series(r, 0, MemoryType::Managed)->live_bytes, 300u);
}

TEST(Replay, StreamOrderedFreesCountWhenIssuedAndPoolsKeepHighWaterMarks) {
  Scenario s(10);
  auto async = [&](ApiId api, uint64_t address, uint64_t size, uint64_t pool) {
    format::Event& ev = s.event(11, api);
    ev.f.set_address(address);
    ev.f.set_size(size);
    ev.f.set_stream(0x55);
    if (pool) ev.f.set_pool(pool);
    ev.f.set_device(0);
  };
  async(ApiId::cudaMallocAsync, 0x1000, 64, 0);
  async(ApiId::cudaMallocFromPoolAsync, 0x2000, 32, 0xbeef);
  s.event(11, ApiId::cudaFreeAsync).f.set_address(0x1000);  // counts now, not when it completes
  async(ApiId::cuMemAllocFromPoolAsync, 0x3000, 16, 0xbeef);
  s.event(11, ApiId::cuMemFreeAsync).f.set_address(0x2000);
  const auto run = replay(s);
  const Replay& r = run->replay;
  const Series* d = series(r, 0);
  EXPECT_EQ(d->peak_bytes, 96u);
  EXPECT_EQ(d->peak_seq, 2u);
  EXPECT_EQ(d->live_bytes, 16u);
  const std::vector<analysis::Pool>& pools = run->pools.pools();
  ASSERT_EQ(pools.size(), 2u);
  const analysis::Pool& def = pools[0];
  EXPECT_EQ(def.handle, 0u);
  EXPECT_EQ(def.device, 0);
  EXPECT_EQ(def.live_bytes, 0u);
  EXPECT_EQ(def.high_water_bytes, 64u);
  const analysis::Pool& own = pools[1];
  EXPECT_EQ(own.handle, 0xbeefu);
  EXPECT_EQ(own.live_bytes, 16u);
  EXPECT_EQ(own.high_water_bytes, 48u);
  EXPECT_EQ(own.high_water_seq, 4u);
  EXPECT_EQ(own.allocations, 2u);
}

// An observer of pool allocations is told of stream-ordered allocations entering and leaving the
// live set (a free, an address handed out again), and of nothing else.
TEST(Replay, PoolObserversSeeOnlyStreamOrderedAllocations) {
  struct Seen : analysis::ReplayObserver {
    Seen() : ReplayObserver(kPoolAllocations) {}
    std::vector<std::tuple<char, uint64_t, uint16_t>> calls;  // '+'/'-', size, pool
    void allocated(const Replay&, uint64_t, const analysis::LiveAllocation& a) override {
      calls.emplace_back('+', a.size, a.pool);
    }
    void freed(const Replay&, const analysis::LiveAllocation& a) override {
      calls.emplace_back('-', a.size, a.pool);
    }
  };
  Scenario s(10);
  auto async = [&](uint64_t address, uint64_t size) {
    format::Event& ev = s.event(11, ApiId::cudaMallocAsync);
    ev.f.set_address(address);
    ev.f.set_size(size);
    ev.f.set_stream(0x55);
    ev.f.set_device(0);
  };
  s.alloc(11, ApiId::cudaMalloc, 0x1000, 100);
  async(0x2000, 64);
  s.free(11, ApiId::cudaFree, 0x1000);
  s.event(11, ApiId::cudaFreeAsync).f.set_address(0x2000);
  async(0x3000, 32);
  async(0x3000, 16);  // the free of the 32 was not recorded
  s.alloc(11, ApiId::cudaMalloc, 0x4000, 200);
  s.alloc(11, ApiId::cudaMalloc, 0x4000, 300);  // nor of the 200, not in a pool
  const ProcessLogs logs = s.build(true);
  auto reader = read_in_memory(logs);
  analysis::StackInterner interned;
  Replay r(interned);
  Seen seen;
  r.observe(seen);
  reader.read_events(r);
  using C = std::tuple<char, uint64_t, uint16_t>;
  EXPECT_EQ(seen.calls,
            (std::vector<C>{{'+', 64, 1}, {'-', 64, 1}, {'+', 32, 1}, {'-', 32, 1}, {'+', 16, 1}}));
}

// Allocations on a stream while it is captured belong to the graph and are counted once; launches
// replay it. An allocation on another stream during the capture is not the graph's.
TEST(Replay, GraphCaptureOwnsItsAllocationsAndLaunchesAllocateNothing) {
  Scenario s(10);
  auto on_stream = [&](ApiId api, uint64_t stream) -> format::Event& {
    format::Event& ev = s.event(11, api);
    ev.f.set_stream(stream);
    return ev;
  };
  auto async = [&](uint64_t address, uint64_t size, uint64_t stream) {
    format::Event& ev = on_stream(ApiId::cudaMallocAsync, stream);
    ev.f.set_address(address);
    ev.f.set_size(size);
    ev.f.set_device(0);
  };
  on_stream(ApiId::cudaStreamBeginCapture, 0x77);
  async(0x1000, 4096, 0x77);
  async(0x3000, 1024, 0x88);  // another stream: not captured
  async(0x2000, 512, 0x77);
  on_stream(ApiId::cudaStreamEndCapture, 0x77).f.set_handle(0x900);
  async(0x4000, 256, 0x77);  // after the capture ended
  for (int i = 0; i < 5; ++i) on_stream(ApiId::cudaGraphLaunch, 0x77).f.set_handle(0x901);
  const auto run = replay(s);
  const Replay& r = run->replay;
  const analysis::GraphActivity& g = run->graphs.activity();
  EXPECT_EQ(g.captures, 1u);
  EXPECT_EQ(g.capture_allocations, 2u);
  EXPECT_EQ(g.capture_bytes, 4608u);
  EXPECT_EQ(g.launches, 5u);
  EXPECT_EQ(g.allocations_between_launches, 0u);
  EXPECT_EQ(series(r, 0)->live_bytes, 4096u + 1024 + 512 + 256) << "each allocation once";
  EXPECT_EQ(series(r, 0)->allocations, 4u);
}

// The graph tracker asks for allocations only once a graph was launched (Replay::also_call):
// those before the first launch are not counted, every one after it is, on any stream, and a
// failed launch asks for nothing.
TEST(Replay, AllocationsCountAfterTheFirstLaunchOnly) {
  Scenario s(10);
  auto launch = [&](uint32_t result) {
    format::Event& ev = s.event(11, ApiId::cudaGraphLaunch);
    ev.result = result;
    ev.f.set_stream(0x77);
    ev.f.set_handle(0x901);
  };
  s.alloc(11, ApiId::cudaMalloc, 0x1000, 64);
  launch(1);  // failed: no launch
  s.alloc(11, ApiId::cudaMalloc, 0x2000, 64);
  launch(0);
  s.alloc(11, ApiId::cudaMalloc, 0x3000, 64);
  launch(0);
  s.alloc(11, ApiId::cuMemAlloc_v2, 0x4000, 64);
  s.alloc(11, ApiId::cudaMallocHost, 0x5000, 64);
  const auto run = replay(s);
  const analysis::GraphActivity& g = run->graphs.activity();
  EXPECT_EQ(g.launches, 2u);
  EXPECT_EQ(g.allocations_between_launches, 3u);
}

TEST(Replay, VmmReleaseWhileMappedFreesAtTheLastUnmap) {
  Scenario s(10);
  s.reserve(11, 0x10000000, 8 * kMiB);  // seq 1
  s.create(11, 1, 2 * kMiB);            // seq 2
  s.map(11, 0x10000000, 2 * kMiB, 1);   // seq 3
  s.map(11, 0x10200000, 2 * kMiB, 1);   // seq 4: the same handle twice
  s.release(11, 1);                     // seq 5: still mapped, still memory
  s.unmap(11, 0x10000000, 2 * kMiB);    // seq 6: one mapping left
  const auto mid_run = replay(s);
  const Replay& mid = mid_run->replay;
  EXPECT_EQ(series(mid, 0)->physical_bytes, 2 * kMiB);
  EXPECT_EQ(series(mid, 0)->live_bytes, 2 * kMiB);
  EXPECT_EQ(series(mid, 0)->mapped_bytes, 2 * kMiB);
  EXPECT_EQ(series(mid, 0)->frees, 1u);      // the release is counted when issued
  s.unmap(11, 0x10200000, 2 * kMiB);         // seq 7: now it is gone
  s.address_free(11, 0x10000000, 8 * kMiB);  // seq 8
  const auto run = replay(s);
  const Replay& r = run->replay;
  const Series* d = series(r, 0);
  EXPECT_EQ(d->physical_bytes, 0u);
  EXPECT_EQ(d->live_bytes, 0u);
  EXPECT_EQ(d->live_count, 0u);
  EXPECT_EQ(d->freed_bytes, 2 * kMiB);
  EXPECT_EQ(d->mapped_bytes, 0u);
  EXPECT_EQ(d->reserved_bytes, 0u);
  EXPECT_EQ(d->max_physical_bytes, 2 * kMiB);
  EXPECT_EQ(d->max_mapped_bytes, 4 * kMiB);
  EXPECT_EQ(d->max_reserved_bytes, 8 * kMiB);
  EXPECT_EQ(d->peak_bytes, 2 * kMiB);  // physical bytes, not mapped or reserved ones
  EXPECT_TRUE(r.handles().empty());
  EXPECT_TRUE(r.mappings().empty());
  EXPECT_TRUE(r.reservations().empty());
}

TEST(Replay, VmmUnmapThenReleaseFreesAtTheRelease) {
  Scenario s(10);
  s.create(11, 1, 4 * kMiB);
  s.map(11, 0x10000000, 4 * kMiB, 1);
  s.unmap(11, 0x10000000, 4 * kMiB);
  const auto mid_run = replay(s);
  const Replay& mid = mid_run->replay;
  EXPECT_EQ(series(mid, 0)->live_bytes, 4 * kMiB);  // unmapped but not released: still memory
  s.release(11, 1);
  const auto run = replay(s);
  const Replay& r = run->replay;
  EXPECT_EQ(series(r, 0)->live_bytes, 0u);
  EXPECT_EQ(series(r, 0)->peak_bytes, 4 * kMiB);
  EXPECT_EQ(series(r, 0)->peak_seq, 1u);
}

TEST(Replay, VmmOneUnmapCoversBackToBackMappings) {
  Scenario s(10);
  s.create(11, 1, 2 * kMiB, 1);
  s.create(11, 2, 2 * kMiB, 1);
  s.map(11, 0x20000000, 2 * kMiB, 1);
  s.map(11, 0x20200000, 2 * kMiB, 2);
  s.release(11, 1);
  s.release(11, 2);
  s.unmap(11, 0x20000000, 4 * kMiB);  // both mappings at once
  s.unmap(11, 0x30000000, 2 * kMiB);  // nothing mapped there
  s.release(11, 99);                  // never created
  const auto run = replay(s);
  const Replay& r = run->replay;
  const Series* d = series(r, 1);
  EXPECT_EQ(d->live_bytes, 0u);
  EXPECT_EQ(d->mapped_bytes, 0u);
  EXPECT_EQ(d->peak_bytes, 4 * kMiB);
  EXPECT_EQ(r.anomalies().unknown_unmaps, 1u);
  EXPECT_EQ(r.anomalies().unknown_releases, 1u);
}

TEST(Replay, VmmCreateFailureIsAFailedAllocation) {
  Scenario s(10);
  s.create(11, 0, 64 * kMiB, 0, 0, false, 2);
  const auto run = replay(s);
  const Replay& r = run->replay;
  EXPECT_EQ(series(r, 0)->failed, 1u);
  EXPECT_EQ(series(r, 0)->failures[0].api, uint8_t(ApiId::cuMemCreate));
  EXPECT_EQ(series(r, 0)->live_bytes, 0u);
  EXPECT_TRUE(r.handles().empty());
}

TEST(Replay, UnknownApiIdsAreCountedAndSkipped) {
  Scenario s(10);
  s.alloc(11, ApiId::cudaMalloc, 0x1000, 64);
  format::Event& ev = s.event(11, ApiId::cudaMalloc);
  ev.api = 77;  // a newer recorder's entry point
  ev.f.set_address(0x2000);
  ev.f.set_size(1 << 20);
  const auto run = replay(s);
  const Replay& r = run->replay;
  EXPECT_EQ(r.events(), 2u);
  EXPECT_EQ(r.anomalies().unknown_api_events, 1u);
  EXPECT_EQ(r.anomalies().unknown_api_ids[77], 1u);
  EXPECT_EQ(series(r, 0)->live_bytes, 64u);
}

// PyTorch's blocks live inside the segments cudaMalloc gave its allocator: the replay counts
// the segments only (the blocks are BlockLayer's, an observer of the replay).
TEST(Replay, AllocatorBlocksAreNotCountedOnTopOfTheirSegments) {
  Scenario s(10);
  s.alloc(11, ApiId::cudaMalloc, 0x100000, 2 << 20);
  uint64_t allocated = 0;
  for (uint64_t offset : {0, 4096, 8192}) {
    allocated += 4096;
    format::Event& ev = s.event(11, ApiId::_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE);
    ev.f.set_address(0x100000 + offset);
    ev.f.set_size(4096);
    ev.f.set_device(0);
    ev.f.set_totals(allocated, 2 << 20);
  }
  format::Event& free = s.event(11, ApiId::_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE);
  free.f.set_address(0x100000);
  free.f.set_size(4096);
  free.f.set_free();
  free.f.set_device(0);
  free.f.set_totals(allocated - 4096, 2 << 20);
  const auto run = replay(s);
  const Replay& r = run->replay;
  ASSERT_EQ(r.series().size(), 1u);
  EXPECT_EQ(series(r, 0)->allocations, 1u);
  EXPECT_EQ(series(r, 0)->frees, 0u);
  EXPECT_EQ(series(r, 0)->live_bytes, uint64_t{2} << 20);
  EXPECT_EQ(series(r, 0)->peak_bytes, uint64_t{2} << 20);
  EXPECT_EQ(r.anomalies().unknown_frees, 0u);
  EXPECT_EQ(r.anomalies().reused_addresses, 0u);
  EXPECT_EQ(r.anomalies().unknown_api_events, 0u);
}

TEST(Replay, AnAddressHandedOutAgainMeansAMissedFree) {
  Scenario s(10);
  s.alloc(11, ApiId::cudaMalloc, 0x1000, 64);
  s.alloc(11, ApiId::cudaMalloc, 0x1000, 32);  // its free was not recorded (e.g. a reset)
  const auto run = replay(s);
  const Replay& r = run->replay;
  EXPECT_EQ(r.anomalies().reused_addresses, 1u);
  EXPECT_EQ(series(r, 0)->live_bytes, 32u);
  EXPECT_EQ(series(r, 0)->live_count, 1u);
  EXPECT_EQ(series(r, 0)->peak_bytes, 64u);
}

TEST(Replay, IdenticalStacksOfTwoThreadsAreOneStack) {
  Scenario s(10);
  const uint32_t a = s.stack(11, {0x401000, 0x402000});
  s.stack(12, {0x409999});
  const uint32_t b = s.stack(12, {0x401000, 0x402000});
  s.alloc(11, ApiId::cudaMalloc, 0x1000, 64, 0, a);
  s.alloc(12, ApiId::cudaMalloc, 0x2000, 32, 0, b);
  const auto run = replay(s);
  const Replay& r = run->replay;
  const auto groups = analysis::group_live(
      r, [](const analysis::SeriesKey&) { return true; }, false);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].count, 2u);
  EXPECT_EQ(groups[0].bytes, 96u);
  EXPECT_EQ(r.stacks().frames(groups[0].stack).size(), 2u);
}

TEST(Replay, PythonFramesArePartOfAStacksIdentity) {
  // Two threads describe the same code object under different ids; a stack through the same
  // native frames at another Python line is a different stack.
  Scenario empty(10);
  ProcessLogs logs = empty.build(true);
  analysis::PyCode code;
  code.py_version = 0x030c;
  code.filename = "train.py";
  code.name = code.qualname = "step";
  code.first_line = 10;
  code.line_table = "\x01\x02";
  const std::vector<uint64_t> native = {0x401000, 0x402000};
  uint32_t next_seq = 1;
  auto thread = [&](uint64_t tid, uint32_t pad_codes, std::vector<uint32_t> offsets) {
    ThreadLogBuilder t(logs.pid, tid, kStartNs);
    analysis::PyCode other = code;
    other.name = other.qualname = "unrelated";
    for (uint32_t i = 0; i < pad_codes; ++i) t.py_code(other);
    const uint32_t id = t.py_code(code);
    for (uint32_t offset : offsets) {
      const uint32_t st = t.stack(native, {{id, offset, true}});
      auto ev = make_event(ApiId::cudaMalloc, next_seq, kStartNs + next_seq * 1000, st);
      ev.f.set_address(0x100000 * next_seq);
      ev.f.set_size(64);
      ev.f.set_device(0);
      t.event(ev);
      ++next_seq;
    }
    logs.threads.push_back({tid, t.file.bytes()});
  };
  thread(11, 0, {20, 40});
  thread(12, 3, {20});  // the same code object as id 4 here
  auto reader = read_in_memory(logs);
  analysis::StackInterner stacks;
  Replay r(stacks);
  reader.read_events(r);
  r.finish();
  const auto groups = analysis::group_live(
      r, [](const analysis::SeriesKey&) { return true; }, false);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].count, 2u);  // offset 20 from both threads
  EXPECT_EQ(groups[1].count, 1u);  // offset 40
  EXPECT_EQ(r.stacks().size(), 2u);
}

TEST(Replay, CheckpointsSeeTheStateAfterTheirEvent) {
  Scenario s(10);
  for (uint64_t i = 1; i <= 6; ++i) s.alloc(11, ApiId::cudaMalloc, 0x1000 * i, 10 * i);
  const ProcessLogs logs = s.build(true);
  auto reader = read_in_memory(logs);
  analysis::StackInterner stacks;
  Replay r(stacks);
  std::vector<std::pair<uint64_t, uint64_t>> seen;  // (seq, live bytes)
  analysis::Checkpoints at_seqs({4, 2, 99}, [&](const Replay& now, uint64_t seq) {
    seen.push_back({seq, now.series()[0].live_bytes});
  });
  uint64_t at_time = 0;
  analysis::Checkpoints at_2500us(kStartNs + 2500000,
                                  [&](const Replay& now) { at_time = now.series()[0].live_bytes; });
  r.observe(at_seqs);
  r.observe(at_2500us);
  reader.read_events(r);
  r.finish();
  const std::vector<std::pair<uint64_t, uint64_t>> expected = {{2, 30}, {4, 100}, {99, 210}};
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(at_time, 30u);  // after seq 2 (2 ms), before seq 3 (3 ms)
}

TEST(Replay, APassCanStopAfterItsLastCheckpoint) {
  Scenario s(10);
  for (uint64_t i = 1; i <= 6; ++i) s.alloc(11, ApiId::cudaMalloc, 0x1000 * i, 10);
  const ProcessLogs logs = s.build(true);
  auto reader = read_in_memory(logs);
  analysis::StackInterner stacks;
  Replay r(stacks);
  uint64_t live = 0;
  analysis::Checkpoints at_3(
      {3}, [&](const Replay& now, uint64_t) { live = now.series()[0].live_bytes; }, true);
  r.observe(at_3);
  EXPECT_THROW(reader.read_events(r), Replay::Stop);
  EXPECT_EQ(live, 30u);
  EXPECT_EQ(r.last_seq(), 3u);
  // The reader starts over on the next pass.
  Replay again(stacks);
  reader.read_events(again);
  again.finish();
  EXPECT_EQ(again.series()[0].live_bytes, 60u);
}

// A pass is a new Replay with new observers: nothing of an earlier pass over the same reader
// (a stream still capturing at its end, counters, the --api filter) carries over into the next.
TEST(Replay, ASecondPassStartsClean) {
  Scenario s(10);
  s.event(11, ApiId::cudaStreamBeginCapture).f.set_stream(0x77);  // never ended
  format::Event& a = s.event(11, ApiId::cudaMallocAsync);
  a.f.set_stream(0x77);
  a.f.set_address(0x1000);
  a.f.set_size(4096);
  a.f.set_device(0);
  s.alloc(11, ApiId::cudaMalloc, 0x2000, 64);
  const ProcessLogs logs = s.build(true);
  auto reader = read_in_memory(logs);
  analysis::StackInterner stacks;
  auto pass = [&](const std::vector<std::string>& apis) {
    Replay r(stacks, apis);
    analysis::GraphTracker graphs;
    analysis::PoolTracker pools;
    r.observe(graphs);
    r.observe(pools);
    reader.read_events(r);
    r.finish();
    return std::make_tuple(r.series()[0].live_bytes, graphs.activity().capture_allocations,
                           graphs.activity().captures, pools.pools().size());
  };
  const auto first = pass({"cudaMalloc"});
  EXPECT_EQ(first, std::make_tuple(uint64_t{64}, uint64_t{0}, uint64_t{0}, size_t{0}));
  const auto second = pass({});
  // The captured allocation is a node of a graph that was never made, so never memory.
  EXPECT_EQ(second, std::make_tuple(uint64_t{64}, uint64_t{1}, uint64_t{1}, size_t{0}));
  EXPECT_EQ(pass({}), second);
}

// What each site holds is recounted from the live set when read, not kept per event: at any
// moment it must be the sum of the changes the replay reported, with more kinds of sites per
// stack than the stack's own table holds, addresses handed out again and physical handles.
TEST(Replay, SiteTotalsRecountedWhenReadMatchEveryChange) {
  struct Changes : analysis::ReplayObserver {
    Changes() : ReplayObserver(kSites) {}
    std::vector<int64_t> bytes, count;
    void site_changed(const Replay&, uint32_t site, int64_t b, int64_t c) override {
      if (site >= bytes.size()) bytes.resize(site + 1), count.resize(site + 1);
      bytes[site] += b;
      count[site] += c;
    }
  };
  const std::pair<ApiId, ApiId> kinds[] = {{ApiId::cudaMalloc, ApiId::cudaFree},
                                           {ApiId::cuMemAlloc_v2, ApiId::cuMemFree_v2},
                                           {ApiId::cudaMallocManaged, ApiId::cudaFree},
                                           {ApiId::cudaMallocHost, ApiId::cudaFreeHost}};
  Scenario s(10);
  std::mt19937_64 rng(5);
  std::vector<uint32_t> stacks;
  for (uint64_t i = 0; i < 3; ++i) stacks.push_back(s.stack(11, {0x402000 + i * 16}));
  std::vector<std::pair<uint64_t, ApiId>> live;
  std::vector<uint64_t> handles;
  uint64_t next = 0x10000000, next_handle = 1;
  for (int i = 0; i < 20000; ++i) {
    const uint64_t r = rng() % 100;
    const uint32_t stack = stacks[rng() % stacks.size()];
    const int32_t device = static_cast<int32_t>(rng() % 3);
    if (live.empty() || r < 50) {
      const auto& [api, free_api] = kinds[rng() % 4];
      if (!live.empty() && rng() % 100 == 0) {  // its free was not recorded
        auto& again = live[rng() % live.size()];
        s.alloc(11, api, again.first, 256 + rng() % 4096, device, stack);
        again.second = free_api;
      } else {
        s.alloc(11, api, next, 256 + rng() % 4096, device, stack);
        live.push_back({next, free_api});
        next += 8192;
      }
    } else if (r < 55) {
      s.create(11, next_handle, 2 << 20, device, stack);
      handles.push_back(next_handle++);
    } else if (r < 58 && !handles.empty()) {
      const size_t k = rng() % handles.size();
      s.release(11, handles[k]);
      handles[k] = handles.back();
      handles.pop_back();
    } else {
      const size_t k = rng() % live.size();
      s.free(11, live[k].second, live[k].first);
      live[k] = live.back();
      live.pop_back();
    }
  }
  const ProcessLogs logs = s.build(true);  // the reader reads it in place
  auto reader = read_in_memory(logs);
  analysis::StackInterner interned;
  Replay r(interned);
  Changes changes;
  std::vector<uint64_t> seqs;
  for (uint64_t seq = 500; seq < 20000; seq += 997) seqs.push_back(seq);
  int compared = 0;
  analysis::Checkpoints at_seqs(seqs, [&](const Replay& now, uint64_t) {
    const auto& sites = now.sites();
    for (size_t i = 0; i < sites.size(); ++i) {
      const int64_t b = i < changes.bytes.size() ? changes.bytes[i] : 0;
      const int64_t c = i < changes.count.size() ? changes.count[i] : 0;
      ASSERT_EQ(sites[i].bytes, static_cast<uint64_t>(b)) << "site " << i;
      ASSERT_EQ(sites[i].count, static_cast<uint64_t>(c)) << "site " << i;
    }
    ++compared;
  });
  r.observe(changes);
  r.observe(at_seqs);
  reader.read_events(r);
  r.finish();
  EXPECT_EQ(compared, static_cast<int>(seqs.size()));
  // Each stack allocated through more kinds (series, api, kind) than its table of ways holds.
  EXPECT_GT(r.sites().size(), 3u * 9u);
}

// An observer of calls sees every event of the kinds it asked for, in order, and none of the
// others (the replay files observers by kind when they are attached).
TEST(Replay, CallObserversSeeOnlyTheKindsTheyAskFor) {
  struct Calls : analysis::ReplayObserver {
    explicit Calls(std::vector<format::EventKind> wanted)
        : ReplayObserver(kCalls), wanted(std::move(wanted)) {}
    std::vector<format::EventKind> wanted;
    std::vector<uint64_t> seqs;
    bool calls_of(format::EventKind kind) const override {
      return std::find(wanted.begin(), wanted.end(), kind) != wanted.end();
    }
    void call(const Replay&, const format::Event& ev, const format::ApiInfo&) override {
      seqs.push_back(ev.seq);
    }
  };
  Scenario s(10);
  const uint32_t st = s.stack(11, {0x401000});
  s.alloc(11, ApiId::cudaMalloc, 0x1000, 100, 0, st);  // seq 1
  s.free(11, ApiId::cudaFree, 0x1000);                 // seq 2
  s.create(11, 7, 2 << 20, 0, st);                     // seq 3
  s.alloc(11, ApiId::cudaMalloc, 0x2000, 100, 0, st);  // seq 4
  s.release(11, 7);                                    // seq 5
  s.free(11, ApiId::cudaFree, 0x2000);                 // seq 6
  const ProcessLogs logs = s.build(true);
  auto reader = read_in_memory(logs);
  analysis::StackInterner interned;
  Replay r(interned);
  Calls frees({format::EventKind::Free});
  Calls handles({format::EventKind::Create, format::EventKind::Release});
  struct All : analysis::ReplayObserver {
    All() : ReplayObserver(kCalls) {}
    std::vector<uint64_t> seqs;
    void call(const Replay&, const format::Event& ev, const format::ApiInfo&) override {
      seqs.push_back(ev.seq);
    }
  } all;
  r.observe(frees);
  r.observe(handles);
  r.observe(all);
  reader.read_events(r);
  EXPECT_EQ(frees.seqs, (std::vector<uint64_t>{2, 6}));
  EXPECT_EQ(handles.seqs, (std::vector<uint64_t>{3, 5}));
  EXPECT_EQ(all.seqs, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6}));
}

// The one-pass capture of who held the memory at each peak and first failure must agree with
// stopping a second pass right there. Long stretches after each peak make the capture log
// overflow its bound and take the groups early, so both of its paths run.
TEST(Replay, SitesCapturedInOnePassMatchASecondPass) {
  Scenario s(10);
  std::mt19937_64 rng(11);
  std::vector<uint32_t> stacks;
  for (uint64_t i = 0; i < 40; ++i) stacks.push_back(s.stack(11, {0x401000 + i * 16}));
  std::vector<std::pair<uint64_t, int32_t>> live;
  uint64_t next = 0x10000000;
  for (int i = 0; i < 60000; ++i) {
    const bool grow = i % 20000 < 3000;  // three ramps, each followed by a long churn
    if (live.empty() || rng() % 100 < (grow ? 80u : 48u)) {
      const int32_t device = static_cast<int32_t>(rng() % 2);
      const uint32_t result = rng() % 500 == 0 ? 2 : 0;
      s.alloc(11, rng() % 4 ? ApiId::cudaMalloc : ApiId::cuMemAlloc_v2, next, 512 + rng() % 4096,
              device, stacks[rng() % stacks.size()], result);
      if (!result) live.push_back({next, device});
      next += 8192;
    } else {
      const size_t k = rng() % live.size();
      s.free(11, ApiId::cudaFree, live[k].first);
      live[k] = live.back();
      live.pop_back();
    }
  }
  const ProcessLogs logs = s.build(true);
  auto reader = read_in_memory(logs);
  analysis::StackInterner interned;
  Replay one(interned);
  analysis::PeakSites captured;
  one.observe(captured);
  reader.read_events(one);
  one.finish();

  Replay two(interned);
  std::vector<uint64_t> seqs;
  for (const Series& x : one.series()) {
    seqs.push_back(x.peak_seq);
    if (!x.failures.empty()) seqs.push_back(x.failures[0].seq);
  }
  std::map<std::pair<size_t, uint64_t>, std::vector<analysis::SiteGroup>> seen;
  analysis::Checkpoints at_seqs(seqs, [&](const Replay& now, uint64_t seq) {
    for (size_t i = 0; i < now.series().size(); ++i) {
      const analysis::SeriesKey key = now.series()[i].key;
      seen[{i, seq}] = now.sites_now([&](const analysis::SeriesKey& k) { return k == key; });
    }
  });
  two.observe(at_seqs);
  reader.read_events(two);
  two.finish();

  auto same = [](const std::vector<analysis::SiteGroup>& a,
                 const std::vector<analysis::SiteGroup>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].stack != b[i].stack || a[i].bytes != b[i].bytes || a[i].count != b[i].count ||
          a[i].api != b[i].api || !(a[i].series == b[i].series))
        return false;
    return true;
  };
  ASSERT_EQ(one.series().size(), 2u);
  for (size_t i = 0; i < one.series().size(); ++i) {
    const Series& x = one.series()[i];
    const std::vector<analysis::SiteGroup>& at_peak = captured.at_peak(x.key);
    ASSERT_FALSE(at_peak.empty());
    uint64_t total = 0;
    for (const auto& g : at_peak) total += g.bytes;
    EXPECT_EQ(total, x.peak_bytes);
    EXPECT_TRUE(same(at_peak, seen[{i, x.peak_seq}])) << "series " << i;
    ASSERT_FALSE(x.failures.empty());
    EXPECT_TRUE(same(captured.at_first_failure(x.key), seen[{i, x.failures[0].seq}]))
        << "series " << i;
  }
}

TEST(Timeline, StaysBoundedAndKeepsThePeak) {
  analysis::Timeline t;
  for (uint64_t i = 1; i <= 200000; ++i) t.add(i, i * 10, i == 123457 ? 999999 : i % 1000);
  const auto points = t.points();
  EXPECT_LE(points.size(), 2 * analysis::Timeline::kPoints + 2);
  uint64_t high = 0;
  for (const auto& p : points) high = std::max(high, p.bytes);
  EXPECT_EQ(high, 999999u);
  EXPECT_EQ(points.back().seq, 200000u);  // ends with the latest value
  for (size_t i = 1; i < points.size(); ++i) EXPECT_LT(points[i - 1].seq, points[i].seq);
}

// Once the buffer halved, each point stands for a window of two changes and is the higher of
// them, even when both are below every earlier point (a window must not keep the last one's).
TEST(Timeline, EachPointIsTheHighestOfItsWindow) {
  analysis::Timeline t;
  uint64_t seq = 0;
  const auto add = [&](uint64_t bytes) {
    ++seq;
    t.add(seq, seq * 10, bytes);
  };
  for (size_t i = 0; i < 2 * analysis::Timeline::kPoints; ++i) add(1000);
  const uint64_t first_small = seq + 1;
  for (const uint64_t bytes : {5u, 3u, 2u, 7u, 0u, 0u, 4u, 4u, 1u}) add(bytes);
  const auto points = t.points();
  ASSERT_EQ(points.size(), analysis::Timeline::kPoints + 5);
  // The windows (5, 3), (2, 7), (0, 0), (4, 4): the higher, the later of equals; then the
  // pending 1, which is also the latest value.
  const std::pair<uint64_t, uint64_t> want[] = {{first_small, 5},
                                                {first_small + 3, 7},
                                                {first_small + 5, 0},
                                                {first_small + 7, 4},
                                                {first_small + 8, 1}};
  for (size_t i = 0; i < 5; ++i) {
    const auto& p = points[analysis::Timeline::kPoints + i];
    EXPECT_EQ(p.seq, want[i].first) << i;
    EXPECT_EQ(p.bytes, want[i].second) << i;
    EXPECT_EQ(p.time_ns, p.seq * 10) << i;
  }
}

// id() tells the thread files it knows by a count kept beside its table: a file met first with a
// high index makes the ones below it known too (with no stacks), and none above it.
TEST(StackInterner, IdsOfEachThreadFileAndNoneBeyond) {
  analysis::StackInterner stacks;
  const uint64_t first[] = {0x10, 0x20}, second[] = {0x30};
  stacks.add(2, 1, first);
  stacks.add(0, 5, first);  // the same frames in another file: the same stack
  stacks.add(2, 3, second);
  EXPECT_EQ(stacks.id(2, 1), 1u);
  EXPECT_EQ(stacks.id(0, 5), 1u);
  EXPECT_EQ(stacks.id(2, 3), 2u);
  EXPECT_EQ(stacks.id(1, 1), 0u);  // a file without stacks
  EXPECT_EQ(stacks.id(3, 1), 0u);  // beyond every file met
  EXPECT_EQ(stacks.id(2, 0), 0u);  // no stack
  EXPECT_EQ(stacks.id(2, 2), 0u);
  EXPECT_EQ(stacks.id(2, 4), 0u);
}

TEST(AddressMap, BehavesLikeAnUnorderedMap) {
  analysis::AddressMap<uint64_t> map;
  std::unordered_map<uint64_t, uint64_t> ref;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const uint64_t key = 0x7f0000000000ull + (rng() % 5000) * 512;
    if (rng() % 3) {
      auto [v, added] = map.find_or_add(key);
      EXPECT_EQ(added, !ref.count(key));
      *v = i;
      ref[key] = i;
    } else {
      uint64_t out = 0;
      const bool had = map.take(key, &out);
      ASSERT_EQ(had, ref.count(key) == 1);
      if (had) {
        EXPECT_EQ(out, ref[key]);
      }
      ref.erase(key);
    }
    ASSERT_EQ(map.size(), ref.size());
  }
  for (const auto& [k, v] : ref) {
    ASSERT_NE(map.find(k), nullptr);
    EXPECT_EQ(*map.find(k), v);
  }
  size_t visited = 0;
  map.for_each([&](uint64_t k, const uint64_t& v) {
    ++visited;
    EXPECT_EQ(ref.at(k), v);
  });
  EXPECT_EQ(visited, ref.size());
}

TEST(AddressMap, ValuesMoveWithKeysWhenARemovalShiftsPastTheEnd) {
  // Keys whose probes start at the last of the 1024 first slots (the map's Fibonacci hash,
  // written out here to find them): the second and third wrap to slots 0 and 1, and taking the
  // first shifts them back across the end, each value with its key (they are two arrays).
  auto home = [](uint64_t key) { return ((key * 0x9E3779B97F4A7C15ull) >> 32) & 1023; };
  std::vector<uint64_t> keys;
  for (uint64_t k = 0x7f0000000000ull; keys.size() < 3; k += 256)
    if (home(k) == 1023) keys.push_back(k);
  analysis::AddressMap<uint64_t> map;
  for (size_t i = 0; i < keys.size(); ++i) map.insert(keys[i], 100 + i);
  uint64_t out = 0;
  ASSERT_TRUE(map.take(keys[0], &out));
  EXPECT_EQ(out, 100u);
  ASSERT_NE(map.find(keys[1]), nullptr);
  EXPECT_EQ(*map.find(keys[1]), 101u);
  ASSERT_NE(map.find(keys[2]), nullptr);
  EXPECT_EQ(*map.find(keys[2]), 102u);
  std::vector<std::pair<uint64_t, uint64_t>> seen;
  map.for_each([&](uint64_t k, const uint64_t& v) { seen.emplace_back(k, v); });
  // In slot order: keys[2] shifted into slot 0, keys[1] into the last slot.
  EXPECT_EQ(seen, (std::vector<std::pair<uint64_t, uint64_t>>{{keys[2], 102}, {keys[1], 101}}));
}

}  // namespace
}  // namespace gmemhook::test_logs

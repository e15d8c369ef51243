// The allocated layer on a process built event by event: blocks inside segments, the
// allocated peak and its sites, the reserved peak's share, PyTorch's totals, the segments each
// block lies in and what the allocator caches, without changing the reserved layer.
#include "analyzer/model/block_layer.h"

#include <gtest/gtest.h>

#include <memory>

#include "analyzer/model/replay.h"
#include "block_scenario.h"

namespace gmemhook::test_logs {
namespace {

using analysis::BlockDevice;
using analysis::Replay;

constexpr uint64_t kMiB = BlockScenario::kMiB;

// A pass with the allocated layer watching it.
struct BlockRun {
  analysis::StackInterner stacks;
  Replay replay{stacks};
  analysis::BlockLayer blocks;
};

std::unique_ptr<BlockRun> run_blocks(const Scenario& s) {
  auto run = std::make_unique<BlockRun>();
  run->replay.observe(run->blocks);
  const ProcessLogs logs = s.build(true);
  auto reader = read_in_memory(logs);
  reader.read_events(run->replay);
  run->replay.finish();
  return run;
}

std::unique_ptr<BlockRun> run_block_scenario(BlockScenario* b = nullptr) {
  Scenario s(10);
  const BlockScenario made = add_block_scenario(s);
  if (b) *b = made;
  return run_blocks(s);
}

TEST(BlockLayer, ReservedLayerNeverCountsABlockTwice) {
  const auto x = run_block_scenario();
  ASSERT_EQ(x->replay.series().size(), 1u);
  const analysis::Series& s = x->replay.series()[0];
  EXPECT_EQ(s.allocations, 3u);  // the segments and the plain cudaMalloc, never the blocks
  EXPECT_EQ(s.peak_bytes, BlockScenario::kReservedPeak);
  EXPECT_EQ(s.peak_seq, BlockScenario::kReservedPeakSeq);
  EXPECT_EQ(s.live_bytes, 23 * kMiB);
}

TEST(BlockLayer, AllocatedPeakSitesAndTorchTotals) {
  const auto x = run_block_scenario();
  const BlockDevice* d = x->blocks.device(0);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->allocations, 3u);
  EXPECT_EQ(d->frees, 2u);
  EXPECT_EQ(d->peak_bytes, BlockScenario::kAllocatedPeak);
  EXPECT_EQ(d->peak_seq, BlockScenario::kAllocatedPeakSeq);
  EXPECT_EQ(d->live_bytes, BlockScenario::kLiveBlockBytes);
  EXPECT_EQ(d->live_count, 1u);
  ASSERT_EQ(d->sites_at_peak.size(), 2u);
  EXPECT_EQ(d->sites_at_peak[0].bytes, 4096 + 10 * kMiB);
  EXPECT_EQ(d->sites_at_peak[0].count, 2u);
  EXPECT_EQ(d->sites_at_peak[1].bytes, 1024u);
  EXPECT_EQ(d->allocated_at_reserved_peak, BlockScenario::kLiveBlockBytes);
  EXPECT_TRUE(d->has_torch_totals);
  EXPECT_EQ(d->torch_allocated, d->live_bytes);
  EXPECT_EQ(d->torch_max_allocated, d->peak_bytes);
  EXPECT_EQ(d->torch_reserved, 22 * kMiB);
  // Reserved minus allocated is highest once the plain 1 MiB arrives with 4 KiB allocated.
  EXPECT_EQ(d->worst_idle_seq, 8u);
  EXPECT_EQ(d->worst_idle_bytes, 23 * kMiB - 4096);
}

TEST(BlockLayer, SegmentsTheirBlocksAndTheCache) {
  const auto x = run_block_scenario();
  const auto use = x->blocks.segment_use(0);
  ASSERT_EQ(use.size(), 2u);  // the plain cudaMalloc never held a block
  EXPECT_EQ(use[0].address, BlockScenario::kSegA);
  EXPECT_EQ(use[0].allocated_bytes, 4096u);
  EXPECT_EQ(use[0].blocks, 1u);
  EXPECT_EQ(use[0].free_bytes, 2 * kMiB - 4096);
  EXPECT_EQ(use[0].largest_free_bytes, 2 * kMiB - 5120);  // after the block; 1 KiB before it
  EXPECT_EQ(use[1].address, BlockScenario::kSegB);
  EXPECT_EQ(use[1].blocks, 0u);
  EXPECT_EQ(use[1].largest_free_bytes, 20 * kMiB);
  const auto cached = x->blocks.cached(0);
  EXPECT_EQ(cached.bytes, BlockScenario::kCachedBytes);
  EXPECT_EQ(cached.segments, 1u);
  const auto now = x->blocks.groups_now();
  ASSERT_EQ(now.size(), 1u);
  EXPECT_EQ(now[0].bytes, 4096u);
}

TEST(BlockLayer, BlockOfAnExpandableSegmentSpanningTwoMappings) {
  // expandable_segments: one reservation, mapped piece by piece; a block may cross pieces.
  Scenario s(10);
  s.reserve(11, 0x40000000, 64 * kMiB);
  s.create(11, 1, 2 * kMiB);
  s.map(11, 0x40000000, 2 * kMiB, 1);
  s.create(11, 2, 2 * kMiB);
  s.map(11, 0x40200000, 2 * kMiB, 2);
  block_event(s, 11, 0x40000000 + kMiB, 2 * kMiB, 2 * kMiB, 4 * kMiB, 0);
  const auto run = run_blocks(s);
  const Replay& r = run->replay;
  const auto use = run->blocks.segment_use(0);
  ASSERT_EQ(use.size(), 1u);  // the block starts in the first mapping: only it is marked
  EXPECT_EQ(use[0].allocated_bytes, kMiB);  // the part of the block inside it
  EXPECT_EQ(run->blocks.device(0)->live_bytes, 2 * kMiB);
  EXPECT_EQ(r.series()[0].live_bytes, 4 * kMiB);  // physical handles: the reserved layer
}

// Before its first block the layer takes the segments from the core's live set instead of
// following each call; they must be what following each call gives, odd calls included.
TEST(BlockLayer, SegmentsMadeBeforeTheFirstBlock) {
  using format::ApiId;
  constexpr uint64_t kA = 0x10000000, kGone = 0x11000000, kReused = 0x12000000;
  constexpr uint64_t kMapped = 0x40000000, kOther = 0x50000000, kPinned = 0x60000000;
  Scenario s(10);
  s.alloc(11, ApiId::cudaMalloc, kA, 2 * kMiB);
  s.alloc(11, ApiId::cudaMallocHost, kPinned, kMiB);  // host memory: never a segment
  s.alloc(11, ApiId::cudaMalloc, kGone, kMiB);
  s.free(11, ApiId::cudaFree, kGone);
  s.alloc(11, ApiId::cudaMalloc, kOther, kMiB, 1);
  s.create(11, 7, 2 * kMiB);
  s.map(11, kMapped, 2 * kMiB, 7);
  s.alloc(11, ApiId::cudaMalloc, kReused, 2 * kMiB);
  // Its free went unrecorded and host memory came at its address: the segment stays.
  s.alloc(11, ApiId::cudaMallocHost, kReused, kMiB);
  block_event(s, 11, kA, 1024, 1024, 0, 0);
  block_event(s, 11, kGone, 1024, 2048, 0, 0);  // in no segment
  block_event(s, 11, kReused + 4096, 1024, 3072, 0, 0);
  block_event(s, 11, kMapped, 1024, 4096, 0, 0);
  block_event(s, 11, kOther, 1024, 1024, 0, 0, 1);
  const auto run = run_blocks(s);
  const auto use = run->blocks.segment_use(0);
  ASSERT_EQ(use.size(), 3u);
  EXPECT_EQ(use[0].address, kA);
  EXPECT_EQ(use[0].size, 2 * kMiB);
  EXPECT_EQ(use[1].address, kReused);
  EXPECT_EQ(use[1].size, 2 * kMiB);
  EXPECT_EQ(use[2].address, kMapped);
  EXPECT_EQ(use[2].size, 2 * kMiB);
  const auto other = run->blocks.segment_use(1);
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0].address, kOther);
  EXPECT_EQ(run->blocks.segments().size(), 4u);  // kPinned and kGone are none
}

// Asleep, the layer is called only for the allocations, frees and maps the core applies
// otherwise than a list of segments would (segment_calls.h); each case here alone would leave
// the segments taken from the core at the first block wrong if that call were not made.
TEST(BlockLayer, OddCallsBeforeTheFirstBlockReachIt) {
  using format::ApiId;
  constexpr uint64_t kA = 0x10000000, kMapped = 0x40000000;
  {
    // A free of a mapped address ends the segment here, not the core's mapping.
    Scenario s(10);
    s.create(11, 7, 2 * kMiB);
    s.map(11, kMapped, 2 * kMiB, 7);
    s.free(11, ApiId::cudaFree, kMapped);
    block_event(s, 11, kA, 1024, 1024, 0, 0);
    const auto run = run_blocks(s);
    EXPECT_EQ(run->replay.mappings().count(kMapped), 1u);
    EXPECT_EQ(run->blocks.segments().count(kMapped), 0u);
  }
  {
    // A device below -1: the core counts the allocation on no device, the segment keeps it.
    Scenario s(10);
    format::Event& e = s.event(11, ApiId::cudaMalloc);
    e.f.set_address(kA);
    e.f.set_size(2 * kMiB);
    e.f.set_device(-5);
    block_event(s, 11, kA, 1024, 1024, 0, 0);
    const auto run = run_blocks(s);
    ASSERT_EQ(run->blocks.segments().count(kA), 1u);
    EXPECT_EQ(run->blocks.segments().at(kA).device, -5);
  }
}

TEST(BlockLayer, FreeOfABlockNeverSeenIsCountedNotFatal) {
  Scenario s(10);
  block_event(s, 11, 0x5000, -512, 0, 0, 0);
  const auto run = run_blocks(s);
  EXPECT_EQ(run->replay.anomalies().unknown_frees, 0u);  // not the core's: a block
  ASSERT_NE(run->blocks.device(0), nullptr);
  EXPECT_EQ(run->blocks.device(0)->unknown_frees, 1u);
  EXPECT_EQ(run->blocks.device(0)->live_bytes, 0u);
}

}  // namespace
}  // namespace gmemhook::test_logs

// Grouping of the live set and the fragmentation figures, on layouts built on purpose so the
// span, gaps, largest gap and fragmentation are known exactly.
#include "analyzer/model/live_view.h"

#include <gtest/gtest.h>

#include "analyzer/model/replay.h"
#include "report_scenario.h"

namespace gmemhook::test_logs {
namespace {

using analysis::Fragmentation;
using analysis::LiveKind;
using analysis::Replay;
using format::ApiId;
using format::MemoryType;

constexpr uint64_t kMiB = 1 << 20;

// Device `device`'s layout at the end of the scenario.
Fragmentation measure(const Scenario& s, int32_t device) {
  const auto r = replay(s);
  return analysis::measure_fragmentation(r->replay, r->pools, device);
}

TEST(GrantedBytes, RoundsToTheDocumentedGranularity) {
  EXPECT_EQ(analysis::granted_bytes(1, LiveKind::Allocation, MemoryType::Device), 512u);
  EXPECT_EQ(analysis::granted_bytes(512, LiveKind::Allocation, MemoryType::Device), 512u);
  EXPECT_EQ(analysis::granted_bytes(513, LiveKind::Allocation, MemoryType::Managed), 1024u);
  EXPECT_EQ(analysis::granted_bytes(1, LiveKind::Allocation, MemoryType::HostPinned), 4096u);
  EXPECT_EQ(analysis::granted_bytes(1, LiveKind::Physical, MemoryType::Device), 2 * kMiB);
  EXPECT_EQ(analysis::granted_bytes(2 * kMiB + 1, LiveKind::Mapping, MemoryType::Device), 4 * kMiB);
}

TEST(Fragmentation, ExactFiguresOfALayoutBuiltOnPurpose) {
  Scenario s(10);
  // Device 0, in address order (granted sizes in brackets):
  //   A 0x100000 +4096           gap 0x1000 (4096) to B
  //   B 0x102000 +4096           gap 0x3000 (12288) to C
  //   C 0x106000 +8192           back to back with D
  //   D 0x108000 +256 [512]      gap 0x1e00 (7680) to E
  //   E 0x10a000 +1000 [1024]
  s.alloc(11, ApiId::cudaMalloc, 0x106000, 8192);
  s.alloc(11, ApiId::cudaMalloc, 0x100000, 4096);
  s.alloc(11, ApiId::cuMemAlloc_v2, 0x10a000, 1000);
  s.alloc(11, ApiId::cudaMalloc, 0x102000, 4096);
  s.alloc(11, ApiId::cudaMalloc, 0x108000, 256);
  // Not device 0's: another device, and pinned host memory inside the span.
  s.alloc(11, ApiId::cudaMalloc, 0x104000, 4096, 1);
  s.alloc(11, ApiId::cudaMallocHost, 0x103000, 4096, 0);
  const Fragmentation f = measure(s, 0);
  EXPECT_EQ(f.live_count, 5u);
  EXPECT_EQ(f.live_bytes, 4096u + 4096 + 8192 + 256 + 1000);
  EXPECT_EQ(f.granted_bytes, 4096u + 4096 + 8192 + 512 + 1024);
  EXPECT_EQ(f.ranges, 5u);
  EXPECT_EQ(f.lowest_address, 0x100000u);
  EXPECT_EQ(f.span_bytes, 0xa000u + 1024);
  EXPECT_EQ(f.gap_count, 3u);
  EXPECT_EQ(f.gap_bytes, 4096u + 12288 + 7680);
  EXPECT_EQ(f.largest_gap_bytes, 12288u);
  EXPECT_DOUBLE_EQ(f.fragmentation, 1.0 - 12288.0 / 24064.0);
  ASSERT_EQ(f.histogram.size(), 4u);
  EXPECT_EQ(f.histogram[0].min_bytes, 256u);
  EXPECT_EQ(f.histogram[0].max_bytes, 512u);
  EXPECT_EQ(f.histogram[0].count, 1u);
  EXPECT_EQ(f.histogram[1].min_bytes, 512u);
  EXPECT_EQ(f.histogram[1].bytes, 1000u);
  EXPECT_EQ(f.histogram[2].min_bytes, 4096u);
  EXPECT_EQ(f.histogram[2].count, 2u);
  EXPECT_EQ(f.histogram[2].bytes, 8192u);
  EXPECT_EQ(f.histogram[3].min_bytes, 8192u);
  EXPECT_EQ(f.histogram[3].max_bytes, 16384u);

  const Fragmentation other = measure(s, 1);
  EXPECT_EQ(other.live_count, 1u);
  EXPECT_EQ(other.gap_bytes, 0u);
  EXPECT_EQ(other.fragmentation, 0.0);
}

TEST(Fragmentation, EqualHolesBetweenLiveBlocks) {
  // The fragmentation sample's shape: 9 blocks of 8 MiB back to back, every other one freed.
  Scenario s(10);
  const uint64_t base = 0x7f0000000000;
  for (uint64_t i = 0; i < 9; ++i) s.alloc(11, ApiId::cudaMalloc, base + i * 8 * kMiB, 8 * kMiB);
  for (uint64_t i = 1; i < 9; i += 2) s.free(11, ApiId::cudaFree, base + i * 8 * kMiB);
  const Fragmentation f = measure(s, 0);
  EXPECT_EQ(f.live_count, 5u);
  EXPECT_EQ(f.span_bytes, 72 * kMiB);
  EXPECT_EQ(f.gap_count, 4u);
  EXPECT_EQ(f.gap_bytes, 32 * kMiB);
  EXPECT_EQ(f.largest_gap_bytes, 8 * kMiB);
  EXPECT_DOUBLE_EQ(f.fragmentation, 0.75);
}

TEST(Fragmentation, VmmMappingsArePartOfTheLayoutAndHandlesOfTheLiveBytes) {
  Scenario s(10);
  s.reserve(11, 0x40000000, 16 * kMiB);
  s.create(11, 1, 2 * kMiB);
  s.create(11, 2, 2 * kMiB);
  s.map(11, 0x40000000, 2 * kMiB, 1);
  s.map(11, 0x40800000, 2 * kMiB, 2);  // 6 MiB further on: one gap
  s.create(11, 3, 2 * kMiB);           // not mapped: memory, but no address
  const Fragmentation f = measure(s, 0);
  EXPECT_EQ(f.live_count, 3u);
  EXPECT_EQ(f.live_bytes, 6 * kMiB);
  EXPECT_EQ(f.granted_bytes, 6 * kMiB);
  EXPECT_EQ(f.ranges, 2u);
  EXPECT_EQ(f.span_bytes, 10 * kMiB);
  EXPECT_EQ(f.gap_bytes, 6 * kMiB);
  EXPECT_EQ(f.largest_gap_bytes, 6 * kMiB);
  EXPECT_EQ(f.fragmentation, 0.0);
  EXPECT_EQ(f.reserved_bytes, 16 * kMiB);
  EXPECT_EQ(f.mapped_bytes, 4 * kMiB);
  EXPECT_EQ(f.physical_bytes, 6 * kMiB);
}

TEST(Fragmentation, PoolsReportLiveBytesAgainstTheirHighWaterMark) {
  Scenario s(10);
  for (uint64_t i = 0; i < 3; ++i) {
    format::Event& ev = s.event(11, ApiId::cudaMallocFromPoolAsync);
    ev.f.set_address(0x1000000 * (i + 1));
    ev.f.set_size(kMiB);
    ev.f.set_pool(0xabc);
    ev.f.set_stream(1);
    ev.f.set_device(0);
  }
  s.event(11, ApiId::cudaFreeAsync).f.set_address(0x1000000);
  s.event(11, ApiId::cudaFreeAsync).f.set_address(0x2000000);
  const Fragmentation f = measure(s, 0);
  ASSERT_EQ(f.pools.size(), 1u);
  EXPECT_EQ(f.pools[0].handle, 0xabcu);
  EXPECT_EQ(f.pools[0].live_bytes, kMiB);
  EXPECT_EQ(f.pools[0].high_water_bytes, 3 * kMiB);
  EXPECT_EQ(f.pools[0].high_water_seq, 3u);
}

TEST(GroupLive, LargestFirstThenByCountThenByStackOrder) {
  Scenario s(10);
  const uint32_t a = s.stack(11, {0x401000});
  const uint32_t b = s.stack(11, {0x402000});
  const uint32_t c = s.stack(11, {0x403000});
  s.alloc(11, ApiId::cudaMalloc, 0x1000, 100, 0, c);
  s.alloc(11, ApiId::cudaMalloc, 0x2000, 100, 0, b);
  s.alloc(11, ApiId::cudaMalloc, 0x3000, 50, 0, a);
  s.alloc(11, ApiId::cudaMalloc, 0x4000, 50, 0, a);
  s.alloc(11, ApiId::cudaMalloc, 0x5000, 300, 0, a);
  s.alloc(11, ApiId::cudaMallocHost, 0x6000, 999, 0, a);
  const auto run = replay(s);
  const Replay& r = run->replay;
  const auto groups = analysis::group_live(
      r, [](const analysis::SeriesKey& k) { return k.memory == MemoryType::Device; }, false);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].bytes, 400u);
  EXPECT_EQ(groups[0].count, 3u);
  EXPECT_EQ(r.stacks().frames(groups[0].stack)[0], 0x401000u);
  // 100 bytes in 1 allocation each: the stack whose record came first in the log (b) first.
  EXPECT_EQ(r.stacks().frames(groups[1].stack)[0], 0x402000u);
  EXPECT_EQ(r.stacks().frames(groups[2].stack)[0], 0x403000u);
}

}  // namespace
}  // namespace gmemhook::test_logs

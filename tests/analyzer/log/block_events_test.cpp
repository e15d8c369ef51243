// Allocator block events (format version 2): totals stored as corrections round-trip exactly,
// cost nothing when they move as predicted, damaged masks are refused, and version-1 logs still
// read with their one-byte mask.
#include <gtest/gtest.h>

#include <random>

#include "analyzer/log/event_info.h"
#include "analyzer/log/reader.h"
#include "log_builder.h"
#include "sample_logs.h"

namespace gmemhook::test_logs {
namespace {

using format::ApiId;
using format::EventKind;
using format::RecordType;

constexpr ApiId kBlockApi = ApiId::_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE;

format::Event block(uint64_t seq, uint64_t address, int64_t size, uint64_t allocated,
                    uint64_t reserved, int32_t device = 0) {
  format::Event ev = make_event(kBlockApi, seq, kStartNs + seq * 1000);
  ev.f.set_address(address);
  ev.f.set_size(size < 0 ? static_cast<uint64_t>(-size) : static_cast<uint64_t>(size));
  if (size < 0) ev.f.set_free();
  ev.f.set_device(device);
  ev.f.set_totals(allocated, reserved);
  return ev;
}

size_t encoded_size(const format::Event& ev, format::EventDeltas& d) {
  uint8_t buf[format::kMaxEventPayload];
  return format::encode_event(buf, ev, d).size;
}

TEST(BlockEvents, TotalsRoundTripThroughEveryCorrection) {
  // A random walk of two devices' allocators interleaved in one file: corrections of both
  // signs, wrap-around, frees larger than the running total.
  std::mt19937_64 rng(9);
  std::vector<format::Event> events;
  uint64_t allocated[2] = {}, reserved[2] = {};
  for (uint64_t seq = 1; seq <= 2000; ++seq) {
    const int device = rng() % 5 == 0;
    const int64_t size = static_cast<int64_t>(rng() % (1 << 22)) * (rng() % 3 == 0 ? -1 : 1);
    allocated[device] += static_cast<uint64_t>(size);
    if (rng() % 7 == 0) reserved[device] += (rng() % 4) << 21;
    if (rng() % 50 == 0) allocated[device] = rng();  // totals the block does not explain
    events.push_back(
        block(seq, rng() % (1ull << 40), size, allocated[device], reserved[device], device));
  }
  format::EventDeltas writer, reader;
  for (const format::Event& ev : events) {
    uint8_t buf[format::kMaxEventPayload];
    const format::EncodedEvent encoded = format::encode_event(buf, ev, writer);
    format::Event got;
    ASSERT_TRUE(format::decode_event(static_cast<uint8_t>(encoded.type), buf, encoded.size, &got,
                                     reader))
        << ev.seq;
    EXPECT_EQ(got.f.mask, ev.f.mask);
    EXPECT_EQ(got.f.address, ev.f.address);
    EXPECT_EQ(got.f.size, ev.f.size);
    EXPECT_EQ(got.f.allocated, ev.f.allocated) << ev.seq;
    EXPECT_EQ(got.f.reserved, ev.f.reserved) << ev.seq;
    EXPECT_EQ(analysis::event_kind(got),
              ev.f.has(format::kIsFree) ? EventKind::BlockFree : EventKind::BlockAlloc);
  }
}

TEST(BlockEvents, TotalsThatMoveAsPredictedCostNothing) {
  format::EventDeltas with_totals, without_totals;
  const uint64_t reserved = 20 << 20;
  uint64_t allocated = 0;
  const int64_t sizes[] = {4096, 1 << 20, -4096, 512, -(1 << 20), -512};
  uint64_t seq = 0;
  for (int64_t size : sizes) {
    ++seq;
    allocated += static_cast<uint64_t>(size);
    format::Event ev = block(seq, 0x7f0000000000 + seq * 4096, size, allocated, reserved);
    format::Event plain = ev;
    plain.f.mask &= ~format::kHasTotals;
    const size_t n = encoded_size(ev, with_totals);
    const size_t n_plain = encoded_size(plain, without_totals);
    // The first event corrects reserved from 0 to 20 MiB; every later one stores no total.
    if (seq > 1) {
      EXPECT_EQ(n, n_plain) << seq;
    }
  }
}

// The damage a version-2 mask can carry: unknown bits, corrections without totals, a truncated
// correction (here in a version-7 file: the same layout).
TEST(BlockEvents, DamagedMasksAreRefused) {
  format::EventDeltas d;
  d.version = 7;
  format::Event ev;
  constexpr auto kEvent = static_cast<uint8_t>(RecordType::Event);
  const uint8_t unknown_bit[] = {64, 1, 0, 0, 0, 0x80, 0x20};  // mask 1 << 12
  EXPECT_FALSE(format::decode_event(kEvent, unknown_bit, sizeof unknown_bit, &ev, d));
  const uint8_t moved_alone[] = {64, 1, 0, 0, 0, 0x80, 0x08, 2};  // AllocatedMoved, no totals
  EXPECT_FALSE(format::decode_event(kEvent, moved_alone, sizeof moved_alone, &ev, d));
  const uint8_t truncated[] = {64, 1, 0, 0, 0, 0x90, 0x08};  // totals, AllocatedMoved, no value
  EXPECT_FALSE(format::decode_event(kEvent, truncated, sizeof truncated, &ev, d));
  const uint8_t fine[] = {64, 1, 0, 0, 0, 0x90, 0x08, 2};
  ASSERT_TRUE(format::decode_event(kEvent, fine, sizeof fine, &ev, d));
  EXPECT_EQ(ev.f.allocated, 1u);
  EXPECT_EQ(ev.f.mask, format::kHasTotals) << "the codec's correction bits stay inside it";
}

// A version-1 thread file: one-byte mask with the old bit numbers (device 0x40, memory 0x80).
TEST(BlockEvents, VersionOneLogsStillRead) {
  ThreadLogBuilder t(4242, 4243, kStartNs);
  t.file.header().version = 1;
  const uint8_t v1_event[] = {static_cast<uint8_t>(ApiId::cuMemCreate),
                              1,
                              5,
                              0,
                              0,
                              0xD2,
                              0x80,
                              0x20,  // size 4096
                              0x10,  // handle 16
                              0x02,  // device 1
                              1};    // memory: host-pinned
  t.file.record(RecordType::Event, v1_event);
  ProcessLogs logs = small_two_thread_process(true);
  logs.threads = {{4243, t.file.bytes()}};
  auto reader = read_in_memory(logs);
  std::vector<format::Event> seen;
  struct Collect : analysis::EventVisitor {
    std::vector<format::Event>* out;
    void on_event(const format::Event& ev, const analysis::ThreadFileReader&) override {
      out->push_back(ev);
    }
  } collect;
  collect.out = &seen;
  reader.read_events(collect);
  ASSERT_EQ(seen.size(), 1u);
  const format::EventFields& f = seen[0].f;
  EXPECT_EQ(f.mask,
            format::kHasSize | format::kHasHandle | format::kHasDevice | format::kHasMemory);
  EXPECT_EQ(f.size, 4096u);
  EXPECT_EQ(f.handle, 16u);
  EXPECT_EQ(f.device, 1);
  EXPECT_EQ(f.memory, format::MemoryType::HostPinned);
}

}  // namespace
}  // namespace gmemhook::test_logs

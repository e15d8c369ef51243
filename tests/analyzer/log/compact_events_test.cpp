// Version 8's compact events (at most 12 bytes per event): every part round-trips,
// including the numbers too large to scale; the bytes of a few events are pinned, so a change to
// the layout cannot pass unnoticed; a version-7 file still reads exactly; and the hook loop's
// events stay within their budget.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "analyzer/log/reader.h"
#include "log_builder.h"
#include "sample_logs.h"

namespace gmemhook::test_logs {
namespace {

using format::ApiId;
using format::RecordType;

std::vector<format::Event> read_thread(const Bytes& thread) {
  ProcessLogs logs = small_two_thread_process(true);
  logs.threads = {{4243, thread}};
  auto reader = read_in_memory(logs);
  struct Collect : analysis::EventVisitor {
    std::vector<format::Event> seen;
    void on_event(const format::Event& ev, const analysis::ThreadFileReader&) override {
      seen.push_back(ev);
    }
  } collect;
  reader.read_events(collect);
  return collect.seen;
}

// A number of the shape CUDA hands out: aligned to one of the scale classes, or to none, or
// beyond what scaling holds.
uint64_t some_number(std::mt19937_64& rng) {
  switch (rng() % 6) {
    case 0: return (rng() % (1u << 20)) << 21;
    case 1: return (rng() % (1u << 30)) << 12;
    case 2: return (rng() % (1u << 30)) << 8;
    case 3: return rng() % (1ull << 48);
    case 4: return rng() | 1ull << 63;  // PlainNumbers
    default: return 0;
  }
}

TEST(CompactEvents, EveryPartRoundTrips) {
  std::mt19937_64 rng(8);
  format::EventDeltas writer, reader;
  writer.last_time_ns = reader.last_time_ns = kStartNs + 7;  // a start off the 32 ns grid
  uint64_t seq = 0, time = kStartNs + 7;
  for (int i = 0; i < 20000; ++i) {
    format::Event ev;
    ev.api = static_cast<uint8_t>(rng() % 6 == 0 ? rng() % 256 : rng() % 4);
    seq += rng() % 3 == 0 ? 1 + rng() % 1000 : 1;
    time += rng() % 4 == 0 ? rng() % (1ull << 40) : rng() % 5000;
    ev.seq = seq;
    ev.time_ns = time;
    ev.result = rng() % 10 == 0 ? static_cast<uint32_t>(rng()) : 0;
    ev.stack_id = rng() % 2 ? static_cast<uint32_t>(rng() % 300) : 0;
    format::EventFields& f = ev.f;
    if (rng() % 4) f.set_address(some_number(rng));
    if (rng() % 2) f.set_size(some_number(rng));
    if (rng() % 5 == 0) f.set_stream(rng() % 3 ? 0x5500000000 + rng() % 4 * 0x100 : rng());
    if (rng() % 2) f.set_device(rng() % 8 == 0 ? static_cast<int32_t>(rng()) : rng() % 2);
    if (rng() % 9 == 0) f.set_pool(rng());
    if (rng() % 9 == 0) f.set_handle(rng());
    if (rng() % 9 == 0) f.set_offset(rng());
    if (rng() % 9 == 0) f.set_memory(static_cast<format::MemoryType>(rng() % 4));
    if (rng() % 6 == 0) f.set_totals(rng(), rng() % 2 ? 0 : rng());
    if (rng() % 9 == 0) f.set_free();
    if (rng() % 9 == 0) f.set_graph(rng());
    if (rng() % 9 == 0) f.set_flags(rng());

    uint8_t buf[format::kMaxEventPayload];
    const format::EncodedEvent encoded = format::encode_event(buf, ev, writer);
    ASSERT_LE(encoded.size, format::kMaxEventPayload);
    format::Event got;
    ASSERT_TRUE(format::decode_event(static_cast<uint8_t>(encoded.type), buf, encoded.size, &got,
                                     reader))
        << i;
    EXPECT_EQ(got.api, ev.api);
    EXPECT_EQ(got.seq, ev.seq);
    EXPECT_EQ(got.time_ns, (time + 31) / 32 * 32) << i;
    EXPECT_EQ(got.result, ev.result);
    EXPECT_EQ(got.stack_id, ev.stack_id);
    EXPECT_EQ(got.f.mask, f.mask) << i;
    EXPECT_EQ(got.f.address, f.address) << i;
    EXPECT_EQ(got.f.size, f.size) << i;
    EXPECT_EQ(got.f.stream, f.stream);
    EXPECT_EQ(got.f.device, f.device) << i;
    EXPECT_EQ(got.f.pool, f.pool);
    EXPECT_EQ(got.f.handle, f.handle);
    EXPECT_EQ(got.f.offset, f.offset);
    EXPECT_EQ(got.f.memory, f.memory);
    EXPECT_EQ(got.f.allocated, f.allocated);
    EXPECT_EQ(got.f.reserved, f.reserved);
    EXPECT_EQ(got.f.graph, f.graph);
    EXPECT_EQ(got.f.flags, f.flags);
    if (HasFailure()) return;
  }
}

// Three events byte by byte, as format.h describes them.
TEST(CompactEvents, TheBytesOfAFewEvents) {
  const auto malloc_api = static_cast<uint8_t>(ApiId::cudaMalloc);
  const auto free_api = static_cast<uint8_t>(ApiId::cudaFree);
  ThreadLogBuilder t(4242, 4243, kStartNs);
  format::Event alloc = make_event(ApiId::cudaMalloc, 1, kStartNs + 64);
  alloc.f.set_address(0x200000);
  alloc.f.set_size(512);
  alloc.f.set_device(1);
  t.event(alloc);
  format::Event free = make_event(ApiId::cudaFree, 3, kStartNs + 160);
  free.f.set_address(0x200000);
  t.event(free);
  format::Event failed = make_event(ApiId::cudaMalloc, 4, kStartNs + 170);
  failed.result = 2;
  failed.f.set_address(0x200100);
  failed.f.set_size(1000);
  failed.f.set_device(1);
  t.event(failed);

  const Bytes expected = {
      // NewFields | NewDevice; api; time 64 ns = 2 units; fields address|size|device;
      // address 2 MiB: class 3, 1 -> zigzag 2 -> 2 << 2 | 3; size 512: class 1, 2 << 2 | 1;
      // device zigzag(1).
      0x38, 6, malloc_api, 2, 0x0b, 11, 9, 2,
      // SeqGap | NewFields; api; seq + 2; time 3 units; fields address; address unchanged.
      0x29, 5, free_api, 2, 3, 0x01, 0,
      // Failed, fields and device as this api's last event; api; time 170 ns is unit 6: + 1;
      // result 2; address + 256: class 1, zigzag(1) << 2 | 1; size 1000, class 0: 4000.
      0x22, 6, malloc_api, 1, 2, 9, 0xa0, 0x1f};
  const Bytes& file = t.file.bytes();
  ASSERT_GE(file.size(), sizeof(format::FileHeader) + expected.size());
  EXPECT_EQ(Bytes(file.begin() + sizeof(format::FileHeader),
                  file.begin() + sizeof(format::FileHeader) + expected.size()),
            expected);

  const std::vector<format::Event> seen = read_thread(file);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[1].seq, 3u);
  EXPECT_EQ(seen[1].time_ns, kStartNs + 160);
  EXPECT_EQ(seen[2].time_ns, kStartNs + 192) << "times are rounded up to 32 ns";
  EXPECT_EQ(seen[2].result, 2u);
  EXPECT_EQ(seen[2].f.address, 0x200100u);
  EXPECT_EQ(seen[2].f.size, 1000u);
  EXPECT_EQ(seen[2].f.device, 1);
  EXPECT_EQ(seen[2].f.mask, format::kHasAddress | format::kHasSize | format::kHasDevice);
}

// A version-7 thread file: every part stored, record type 1, times exact to the nanosecond.
TEST(CompactEvents, VersionSevenLogsStillRead) {
  ThreadLogBuilder t(4242, 4243, kStartNs);
  t.file.header().version = 7;
  const uint8_t v7_event[] = {static_cast<uint8_t>(ApiId::cudaMalloc),
                              1,           // seq delta
                              5,           // time delta, ns
                              0,           // result
                              0,           // stack id
                              0x0b,        // address, size, device
                              0x80, 0x40,  // address zigzag(0x1000)
                              0x80, 0x20,  // size 4096
                              0x02};       // device 1
  t.file.record(RecordType::Event, v7_event);
  t.file.record(RecordType::Event, v7_event);
  const std::vector<format::Event> seen = read_thread(t.file.bytes());
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].seq, 2u);
  EXPECT_EQ(seen[1].time_ns, kStartNs + 10);
  EXPECT_EQ(seen[1].f.address, 0x2000u);
  EXPECT_EQ(seen[1].f.size, 4096u);
  EXPECT_EQ(seen[1].f.device, 1);
}

// A version-7 file has no version-8 event types: a record of type 0x21 after a sound event is an
// unknown record, as it always was, not an event (RecordCursor::next_event takes version-8 files
// only, and would otherwise frame it as one).
TEST(CompactEvents, VersionSevenLogsHaveNoHeadTypes) {
  ThreadLogBuilder t(4242, 4243, kStartNs);
  t.file.header().version = 7;
  const uint8_t v7_event[] = {static_cast<uint8_t>(ApiId::cudaMalloc),
                              1,
                              5,
                              0,
                              0,
                              0x01,
                              0x80,
                              0x40};  // seq 1, 5 ns, address 0x1000
  t.file.record(RecordType::Event, v7_event);
  const uint8_t v8_like[] = {static_cast<uint8_t>(ApiId::cudaMalloc), 5};
  t.file.raw_record(format::kEventTypeBase | format::kSeqGap, sizeof v8_like, v8_like);
  t.note(std::string(400, 'x'));  // the file goes on: next_event's room for a record is there
  ProcessLogs logs = small_two_thread_process(true);
  logs.threads = {{4243, t.file.bytes()}};
  std::string error;
  try {
    analysis::ProcessReader r = read_in_memory(logs);
    collect_events(r);
  } catch (const analysis::ReadError& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("unknown record type 0x21"), std::string::npos) << error;
}

// hook_bench's loop (bench/run_hook_bench.sh): cudaMalloc and cudaFree of the same address, a
// microsecond apart, the allocation with its stack. What its records may cost, headers included.
TEST(CompactEvents, TheHookLoopStaysWithinItsBudget) {
  ThreadLogBuilder t(4242, 4243, kStartNs);
  t.stack({0x401000, 0x401100});
  size_t before = t.file.bytes().size();
  uint64_t seq = 0, time = kStartNs;
  for (int i = 0; i < 100; ++i) {
    format::Event alloc = make_event(ApiId::cudaMalloc, ++seq, time += 1000, 1);
    alloc.f.set_address(0x7f4a00000000);
    alloc.f.set_size(1 << 20);
    alloc.f.set_device(0);
    t.event(alloc);
    format::Event free = make_event(ApiId::cudaFree, ++seq, time += 1000);
    free.f.set_address(0x7f4a00000000);
    t.event(free);
    const size_t pair = t.file.bytes().size() - before;
    before = t.file.bytes().size();
    // alloc: header 2, api, time, stack, address 1, size 2; free: header 2, api, time, address.
    if (i > 0) {
      EXPECT_LE(pair, 13u);
    }
  }
  EXPECT_EQ(read_thread(t.file.bytes()).size(), 200u);
}

}  // namespace
}  // namespace gmemhook::test_logs

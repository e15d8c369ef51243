// The stacked timeline behind gmemhook html (reports/site_timeline.h), on a process written event
// by event: its rows are the largest sites, a spike shorter than a bucket survives, a bucket no
// event fell in repeats the state the previous one ended in, the buckets run to the exit, and the
// peak and failures are placed in the bucket they happened in (where the page marks them).
#include "analyzer/reports/site_timeline.h"

#include <gtest/gtest.h>

#include "report_scenario.h"

namespace gmemhook::analysis {
namespace {

using format::ApiId;
using test_logs::Scenario;

struct Timeline {
  test_logs::ProcessLogs logs;
  ProcessReader reader;
  std::vector<std::string> apis;
  ProcessContext process;
  std::vector<SiteTrack> tracks;

  Timeline(const Scenario& s, size_t buckets, size_t rows)
      : logs(s.build(true)), reader(test_logs::read_in_memory(logs)), process(reader, apis) {
    SiteTimelineOptions o;
    o.buckets = buckets;
    o.rows = rows;
    tracks = site_timeline(process, o);
  }
};

uint64_t total(const SiteTrack& t, size_t bucket) {
  uint64_t sum = 0;
  for (const auto& row : t.values) sum += row[bucket];
  return sum;
}

// The peak, reached by event `seq`, marked in `bucket`, which holds it (`bytes`) at its time.
void expect_peak_in(const SiteTrack& d, uint64_t seq, size_t bucket, uint64_t bytes) {
  EXPECT_EQ(d.peak_seq, seq);
  EXPECT_EQ(d.peak_bytes, bytes);
  EXPECT_EQ(d.peak_bucket, bucket);
  EXPECT_EQ(total(d, bucket), bytes);
  EXPECT_EQ(d.time_ns[bucket], d.peak_time_ns);
}

TEST(SiteTimeline, RowsSpikesAndQuietBuckets) {
  Scenario s(10);
  const uint32_t a = s.stack(11, {0x401000}), b = s.stack(11, {0x402000}),
                 c = s.stack(11, {0x403000});
  s.alloc(11, ApiId::cudaMalloc, 0x1000, 100, 0, a);    // 1 ms: 100
  s.alloc(11, ApiId::cudaMalloc, 0x2000, 1000, 0, b);   // 2 ms: 1100, the peak
  s.free(11, ApiId::cudaFree, 0x2000);                  // 3 ms: 100
  s.alloc(11, ApiId::cudaMalloc, 0x3000, 50, 0, c);     // 4 ms: 150
  s.alloc(11, ApiId::cudaMalloc, 0, 1ull << 40, 0, a, 2);  // 5 ms: fails
  // 12 buckets of 0.5 ms, to the exit at 6 ms: the events fall in buckets 1, 3, 5, 7 and 9.
  const Timeline t(s, 12, 2);
  ASSERT_EQ(t.tracks.size(), 1u);
  const SiteTrack& d = t.tracks[0];
  EXPECT_EQ(d.peak_bytes, 1100u);
  EXPECT_EQ(d.end_bytes, 150u);
  ASSERT_EQ(d.rows.size(), 2u);  // the largest at the peak or the end: b, then a; c is "other"
  ASSERT_EQ(d.values.size(), 3u);
  EXPECT_EQ(d.values[0][4], 1000u);
  EXPECT_EQ(d.values[1][4], 100u);
  EXPECT_EQ(d.values[2][8], 50u);
  // Quiet buckets repeat the state before them: 100 between the spike and c, 150 after c.
  EXPECT_EQ(total(d, 2), 100u);
  EXPECT_EQ(total(d, 4), 1100u);
  EXPECT_EQ(total(d, 9), 150u);
  // The buckets run on to the exit, not only to the last event (5 ms), with what was live then:
  // a process's timelines all span the process.
  EXPECT_EQ(d.end_time_ns, 6000000u);
  EXPECT_EQ(total(d, 11), 150u);
  EXPECT_GT(d.time_ns[11], 5000000u);
  EXPECT_EQ(d.seq[3], 2u);  // the bucket's highest moment: right after the peak's event
  EXPECT_EQ(d.peak_bucket, 3u);
  ASSERT_EQ(d.failures.size(), 1u);
  EXPECT_EQ(d.failures[0].bytes, 1ull << 40);
  EXPECT_EQ(d.failures[0].bucket, 9u);  // at 5 ms, not with c's change at 4 ms (bucket 7)
  EXPECT_EQ(d.peak_stacks.size(), 2u);
}

TEST(SiteTimeline, ASpikeShorterThanABucketIsKept) {
  Scenario s(10);
  const uint32_t a = s.stack(11, {0x401000});
  s.alloc(11, ApiId::cudaMalloc, 0x1000, 100, 0, a);
  s.alloc(11, ApiId::cudaMalloc, 0x2000, 5000, 0, a);
  s.free(11, ApiId::cudaFree, 0x2000);
  s.free(11, ApiId::cudaFree, 0x1000);
  const Timeline t(s, 2, 8);
  ASSERT_EQ(t.tracks.size(), 1u);
  EXPECT_EQ(std::max(total(t.tracks[0], 0), total(t.tracks[0], 1)), 5100u);
  EXPECT_EQ(t.tracks[0].end_bytes, 0u);
}

// Where the page marks the peak: the bucket its event was applied in, which holds the peak's
// state at the peak's time. A peak at the last event was marked at the exit: every bucket after
// that event repeats its sequence number, and the page took the last bucket carrying it.
TEST(SiteTimeline, PeakAtTheLastEventIsMarkedWhereItHappened) {
  Scenario s(10);
  const uint32_t a = s.stack(11, {0x401000});
  s.alloc(11, ApiId::cudaMalloc, 0x1000, 100, 0, a);  // 1 ms
  s.alloc(11, ApiId::cudaMalloc, 0x2000, 200, 0, a);  // 2 ms: 300, the peak and the last event
  s.skip_events(9);                                   // the exit at 12 ms
  // 12 buckets of 1 ms: an event at k ms falls in bucket k - 1 (the span is 12 ms + 1 ns).
  const Timeline t(s, 12, 2);
  ASSERT_EQ(t.tracks.size(), 1u);
  const SiteTrack& d = t.tracks[0];
  expect_peak_in(d, 2, 1, 300);
  EXPECT_EQ(d.seq[11], 2u);  // why a lookup by `seq` cannot tell: the exit's bucket says 2 too
}

TEST(SiteTimeline, PeakAtTheFirstEventIsMarkedInTheFirstBucket) {
  Scenario s(10);
  const uint32_t a = s.stack(11, {0x401000});
  s.alloc(11, ApiId::cudaMalloc, 0x1000, 500, 0, a);  // 1 ms: the peak
  s.free(11, ApiId::cudaFree, 0x1000);                // 2 ms
  s.alloc(11, ApiId::cudaMalloc, 0x2000, 100, 0, a);  // 3 ms
  s.skip_events(8);                                   // the exit at 12 ms
  const Timeline t(s, 12, 2);
  ASSERT_EQ(t.tracks.size(), 1u);
  const SiteTrack& d = t.tracks[0];
  expect_peak_in(d, 1, 0, 500);
}

// Times in coarse ticks (the kernel's 4 ms by default): many events share a time, and the
// bucket that the first of them starts carries its number with the state before it.
TEST(SiteTimeline, PeakInTheMiddleOfEventsSharingATick) {
  Scenario s(10);
  const uint32_t a = s.stack(11, {0x401000});
  s.set_time_ms(4);
  s.alloc(11, ApiId::cudaMalloc, 0x1000, 100, 0, a);
  s.set_time_ms(8);
  s.alloc(11, ApiId::cudaMalloc, 0x2000, 200, 0, a);  // seq 2: 300, the peak
  s.set_time_ms(8);
  s.free(11, ApiId::cudaFree, 0x2000);
  s.set_time_ms(8);
  s.alloc(11, ApiId::cudaMalloc, 0x3000, 50, 0, a);
  s.set_time_ms(8);
  s.alloc(11, ApiId::cudaMalloc, 0x4000, 50, 0, a);  // seq 5: 200
  s.skip_events(10);                                 // the exit at 16 ms
  // 16 buckets of 1 ms: the ticks at 4 and 8 ms fall in buckets 3 and 7.
  const Timeline t(s, 16, 2);
  ASSERT_EQ(t.tracks.size(), 1u);
  const SiteTrack& d = t.tracks[0];
  expect_peak_in(d, 2, 7, 300);
  EXPECT_EQ(d.time_ns[7], 8000000u);
  EXPECT_EQ(total(d, 8), 200u);  // the state after the tick's last event holds from then on
}

// What "after event N" on the page names: the last event whose change the bucket's state holds.
// A bucket that a free starts keeps the state before the free (its highest moment), and a quiet
// bucket the state before the next event: `seq` names that next event in both, one too late.
TEST(SiteTimeline, EachBucketNamesTheLastEventItsStateIncludes) {
  Scenario s(10);
  const uint32_t a = s.stack(11, {0x401000});
  s.alloc(11, ApiId::cudaMalloc, 0x1000, 100, 0, a);  // seq 1 at 1 ms: 100
  s.alloc(11, ApiId::cudaMalloc, 0x2000, 200, 0, a);  // seq 2 at 2 ms: 300
  s.set_time_ms(4);
  s.free(11, ApiId::cudaFree, 0x2000);  // seq 3 at 4 ms: 100
  s.skip_events(8);                     // the exit at 12 ms
  // 12 buckets of 1 ms: an event at k ms falls in bucket k - 1; bucket 2 (3 ms) is quiet.
  const Timeline t(s, 12, 2);
  ASSERT_EQ(t.tracks.size(), 1u);
  const SiteTrack& d = t.tracks[0];
  ASSERT_EQ(d.after_seq.size(), 12u);
  EXPECT_EQ(total(d, 0), 100u);
  EXPECT_EQ(d.after_seq[0], 1u);
  EXPECT_EQ(total(d, 1), 300u);
  EXPECT_EQ(d.after_seq[1], 2u);
  EXPECT_EQ(total(d, 2), 300u);  // quiet: the state after event 2 ...
  EXPECT_EQ(d.after_seq[2], 2u);
  EXPECT_EQ(d.seq[2], 3u);       // ... where `seq` names the free to come
  EXPECT_EQ(total(d, 3), 300u);  // the free's bucket, at its highest: before the free
  EXPECT_EQ(d.after_seq[3], 2u);
  EXPECT_EQ(d.seq[3], 3u);
  for (size_t b = 4; b < 12; ++b) {  // after the free, to the exit
    EXPECT_EQ(total(d, b), 100u) << b;
    EXPECT_EQ(d.after_seq[b], 3u) << b;
  }
}

// A graph whose nodes allocate and free: its launch makes the memory live and gives it back in
// one call. The bucket keeps that moment, its highest, which no "after event N" shows: it is
// said to lie inside the launch.
TEST(SiteTimeline, AMomentInsideAGraphLaunchIsSaidToBeInsideIt) {
  Scenario s(10);
  const uint32_t a = s.stack(11, {0x401000});
  s.alloc(11, ApiId::cudaMalloc, 0x1000, 100, 0, a);                      // seq 1 at 1 ms
  format::Event& node = s.event(11, ApiId::cudaGraphAddMemAllocNode, a);  // seq 2
  node.f.set_graph(0x900);
  node.f.set_address(0x10000000);
  node.f.set_size(2 << 20);
  node.f.set_device(0);
  format::Event& free_node = s.event(11, ApiId::cudaGraphAddMemFreeNode);  // seq 3
  free_node.f.set_graph(0x900);
  free_node.f.set_address(0x10000000);
  format::Event& exec = s.event(11, ApiId::cudaGraphInstantiateWithFlags);  // seq 4
  exec.f.set_handle(0x901);
  exec.f.set_graph(0x900);
  format::Event& launch = s.event(11, ApiId::cudaGraphLaunch);  // seq 5 at 5 ms
  launch.f.set_handle(0x901);
  launch.f.set_stream(0x77);
  s.skip_events(6);  // the exit at 12 ms
  const Timeline t(s, 12, 2);
  ASSERT_EQ(t.tracks.size(), 1u);
  const SiteTrack& d = t.tracks[0];
  expect_peak_in(d, 5, 4, (2 << 20) + 100);
  EXPECT_EQ(d.after_seq[4], 5u);
  EXPECT_EQ(d.inside_event, std::vector<size_t>{4});
  EXPECT_EQ(total(d, 5), 100u);  // after the launch
  EXPECT_EQ(d.after_seq[5], 5u);
}

// Threads' clocks may disagree a little: an event can come (by sequence number) after one with
// a later time. Its change lands in the bucket the track is in, and so does its mark, where the
// click shows the state it made; the bucket of its time holds what was live before.
TEST(SiteTimeline, APeakWithAnEarlierTimeIsMarkedWhereItWasApplied) {
  Scenario s(10);
  const uint32_t a = s.stack(11, {0x401000}), b = s.stack(12, {0x402000});
  s.set_time_ms(5);
  s.alloc(11, ApiId::cudaMalloc, 0x1000, 100, 0, a);  // 5 ms
  s.set_time_ms(3);
  s.alloc(12, ApiId::cudaMalloc, 0x2000, 200, 0, b);  // seq 2 at 3 ms: 300, the peak
  s.skip_events(9);                                   // the exit at 12 ms
  const Timeline t(s, 12, 2);
  ASSERT_EQ(t.tracks.size(), 1u);
  const SiteTrack& d = t.tracks[0];
  EXPECT_EQ(total(d, 2), 0u);  // 3 ms: nothing yet
  expect_peak_in(d, 2, 4, 300);
}

// A failed call changes nothing and starts no bucket: it is marked in the bucket of its time, not
// in the last one a change recorded (1 ms here, four buckets early).
TEST(SiteTimeline, FailuresAreMarkedInTheBucketOfTheirTime) {
  Scenario s(10);
  const uint32_t a = s.stack(11, {0x401000});
  s.alloc(11, ApiId::cudaMalloc, 0x1000, 100, 0, a);  // 1 ms
  s.set_time_ms(5);
  s.alloc(11, ApiId::cudaMalloc, 0, 1ull << 40, 0, a, 2);  // 5 ms: fails
  s.set_time_ms(9);
  s.alloc(11, ApiId::cudaMalloc, 0x2000, 100, 0, a);  // 9 ms
  s.set_time_ms(10);
  s.alloc(11, ApiId::cudaMalloc, 0, 1ull << 40, 0, a, 2);  // 10 ms: fails, the last event
  s.skip_events(7);                                        // the exit at 12 ms
  const Timeline t(s, 12, 2);
  ASSERT_EQ(t.tracks.size(), 1u);
  const SiteTrack& d = t.tracks[0];
  ASSERT_EQ(d.failures.size(), 2u);
  EXPECT_EQ(d.failures[0].bucket, 4u);
  EXPECT_EQ(d.failures[1].bucket, 9u);
  EXPECT_EQ(d.peak_bucket, 8u);  // the second allocation, at 9 ms
}

}  // namespace
}  // namespace gmemhook::analysis

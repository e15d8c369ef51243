// The stacked timeline behind gmemhook html (reports/site_timeline.h), on a process written event
// by event: its rows are the largest sites, a spike shorter than a bucket survives, a bucket no
// event fell in repeats the state the previous one ended in, and the buckets run to the exit.
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
  ASSERT_EQ(d.failures.size(), 1u);
  EXPECT_EQ(d.failures[0].bytes, 1ull << 40);
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

}  // namespace
}  // namespace gmemhook::analysis

// The k-way merge's heads, the heap (MergeHeads) and the scan for up to 16 files (MergeScan):
// files come out in (seq, file) order whatever their runs, holes, ties and ends, as a sort of
// every head would put them.
#include "analyzer/log/merge_heads.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "analyzer/log/merge_scan.h"

namespace gmemhook::analysis {
namespace {

using Files = std::vector<std::vector<uint64_t>>;
using Order = std::vector<std::pair<uint64_t, uint32_t>>;

// Merges `files` (each a rising list of seqs) through Heads as ProcessReader does and returns
// (seq, file) in the order they came out.
template <class Heads>
Order merge(const Files& files) {
  Heads heads;
  std::vector<size_t> next(files.size(), 0);
  for (uint32_t f = 0; f < files.size(); ++f)
    if (!files[f].empty()) heads.push({files[f][next[f]++], f});
  Order out;
  while (!heads.empty()) {
    const uint32_t f = heads.top_file();
    for (;;) {
      const uint64_t seq = files[f][next[f] - 1];
      out.emplace_back(seq, f);
      if (next[f] == files[f].size()) {
        heads.pop_top(seq);
        break;
      }
      if (!heads.replace_top(files[f][next[f]++], seq)) break;
    }
  }
  return out;
}

Order sorted(const Files& files) {
  Order all;
  for (uint32_t f = 0; f < files.size(); ++f)
    for (uint64_t s : files[f]) all.emplace_back(s, f);
  std::sort(all.begin(), all.end());
  return all;
}

template <class Heads>
class MergeOrder : public testing::Test {};
using BothHeads = testing::Types<MergeHeads, MergeScan>;
TYPED_TEST_SUITE(MergeOrder, BothHeads);

TYPED_TEST(MergeOrder, GivesSeqThenFileOrder) {
  std::mt19937_64 rng(14);
  for (int round = 0; round < 3000; ++round) {
    const size_t n = 1 + rng() % MergeScan::kMaxFiles;
    Files files(n);
    uint64_t seq = rng() % 3;
    // Runs of one file (the file stays on top), random files, a hole now and then (an event
    // lost), and a seq that another file holds too (damage: the file index must still break
    // the tie).
    for (int i = 0; i < 80; ++i) {
      const size_t f = rng() % 4 == 0 ? files.size() - 1 : rng() % n;
      if (rng() % 7 != 0) ++seq;
      if (rng() % 11 == 0) seq += 1 + rng() % 3;
      if (files[f].empty() || files[f].back() < seq) files[f].push_back(seq);
    }
    EXPECT_EQ(merge<TypeParam>(files), sorted(files)) << "round " << round;
  }
}

// A file whose next seq is one past the event just merged may still not be next: another file
// can hold a duplicate of either seq.
TYPED_TEST(MergeOrder, ConsecutiveSeqsWaitForADuplicate) {
  for (const Files& files :
       {Files{{1, 2, 3, 4}, {2}}, Files{{2}, {1, 2, 3}}, Files{{5, 6, 7}, {9}, {6}},
        Files{{1, 3}, {2, 3}}, Files{{1, 2, 3, 4, 5}, {4}}, Files{{1, 2, 3, 4, 5, 6}, {7}, {5}}})
    EXPECT_EQ(merge<TypeParam>(files), sorted(files));
}

// Every event from another file than the last (sixteen files taking turns), then files
// ending one by one while the rest go on.
TYPED_TEST(MergeOrder, FollowsTheFileChangingEveryEvent) {
  Files files(MergeScan::kMaxFiles);
  for (uint64_t seq = 1; seq <= 16 * 20; ++seq) files[(seq - 1) % 16].push_back(seq);
  EXPECT_EQ(merge<TypeParam>(files), sorted(files));
  for (uint32_t f = 0; f < files.size(); ++f) files[f].resize(1 + f);
  EXPECT_EQ(merge<TypeParam>(files), sorted(files));
}

// A hole (seqs 3 and 4 lost): no head holds the next seq, the smallest is taken.
TYPED_TEST(MergeOrder, GoesOnAfterAHole) {
  for (const Files& files : {Files{{1, 2, 5}, {6, 7}}, Files{{1, 2}, {9}, {5}},
                             Files{{3, 4}, {1, 7}}, Files{{10}, {20}, {30}}})
    EXPECT_EQ(merge<TypeParam>(files), sorted(files));
}

// Heads far apart whose low bits are the next seq's (MergeScan compares the low 16 bits first):
// only a head whose whole seq is the next one is taken for it. (Each file list starts with a
// search, 1 then 2, after which MergeScan's compare is trusted for 3.)
TYPED_TEST(MergeOrder, TellsHeadsApartThatShareLowBits) {
  const uint64_t far = uint64_t{1} << 16, farther = uint64_t{1} << 32;
  for (const Files& files :
       {Files{{1, 2, 3 + far}, {4}}, Files{{1, 2}, {3 + far}, {5}},
        Files{{1, 2}, {3 + farther}, {4}}, Files{{1, 2, 3 + far}, {3 + farther}, {5}},
        Files{{1, 2 + far}, {2}}, Files{{1, 2 + far, 3 + far}, {2 + farther}}})
    EXPECT_EQ(merge<TypeParam>(files), sorted(files));
}

}  // namespace
}  // namespace gmemhook::analysis

// The k-way merge's heads: files come out in (seq, file) order whatever their runs, ties and
// ends, as a sort of every head would put them.
#include "analyzer/log/merge_heads.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

namespace gmemhook::analysis {
namespace {

// Merges `files` (each a rising list of seqs) through MergeHeads as ProcessReader does and
// returns (seq, file) in the order they came out.
std::vector<std::pair<uint64_t, uint32_t>> merge(const std::vector<std::vector<uint64_t>>& files) {
  MergeHeads heads;
  std::vector<size_t> next(files.size(), 0);
  for (uint32_t f = 0; f < files.size(); ++f)
    if (!files[f].empty()) heads.push({files[f][next[f]++], f});
  std::vector<std::pair<uint64_t, uint32_t>> out;
  while (!heads.empty()) {
    const uint32_t f = heads.top().file;
    uint64_t seq = heads.top().seq;
    for (;;) {
      out.emplace_back(seq, f);
      if (next[f] == files[f].size()) {
        heads.pop_top();
        break;
      }
      seq = files[f][next[f]++];
      if (!heads.replace_top(seq)) break;
    }
  }
  return out;
}

std::vector<std::pair<uint64_t, uint32_t>> sorted(const std::vector<std::vector<uint64_t>>& files) {
  std::vector<std::pair<uint64_t, uint32_t>> all;
  for (uint32_t f = 0; f < files.size(); ++f)
    for (uint64_t s : files[f]) all.emplace_back(s, f);
  std::sort(all.begin(), all.end());
  return all;
}

TEST(MergeHeads, GivesSeqThenFileOrder) {
  std::mt19937_64 rng(14);
  for (int round = 0; round < 2000; ++round) {
    const size_t n = 1 + rng() % 9;
    std::vector<std::vector<uint64_t>> files(n);
    uint64_t seq = rng() % 3;
    // Runs of one file (the file stays on top), random files, and now and then a seq that
    // another file holds too (damage: the file index must still break the tie).
    for (int i = 0; i < 60; ++i) {
      const size_t f = rng() % 4 == 0 ? files.size() - 1 : rng() % n;
      if (rng() % 7 != 0) ++seq;
      if (files[f].empty() || files[f].back() < seq) files[f].push_back(seq);
    }
    EXPECT_EQ(merge(files), sorted(files)) << "round " << round;
  }
}

// A file whose next seq is one past the event just merged may still not be next: another file
// can hold a duplicate of either seq.
TEST(MergeHeads, ConsecutiveSeqsWaitForADuplicate) {
  EXPECT_EQ(merge({{1, 2, 3, 4}, {2}}), sorted({{1, 2, 3, 4}, {2}}));
  EXPECT_EQ(merge({{2}, {1, 2, 3}}), sorted({{2}, {1, 2, 3}}));
  EXPECT_EQ(merge({{5, 6, 7}, {9}, {6}}), sorted({{5, 6, 7}, {9}, {6}}));
}

}  // namespace
}  // namespace gmemhook::analysis

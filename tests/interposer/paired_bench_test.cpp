// bench/hook_bench's paired mode times the hooked call against the same call
// made past the hook, in one process. Its figure means something only if the direct windows
// really bypass the recorder: the log must hold the traced windows' events and none of the
// direct windows'. Counts only; the timing itself lives in bench/run_hook_bench.sh.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

#include "harness.h"

namespace gmemhook::test {
namespace {

namespace fs = std::filesystem;
using format::EventKind;

// The number after `key` in hook_bench's line, or -1.
long field(const std::string& out, const std::string& key) {
  std::istringstream in(out);
  std::string word;
  while (in >> word)
    if (word == key && in >> word) return std::stol(word);
  return -1;
}

TEST(PairedBench, LogHoldsTheTracedWindowsAndNoneOfTheDirectOnes) {
  if (on_real_gpu()) GTEST_SKIP() << "the direct path is the simulated device's aliases";
  const fs::path out = temp_dir("paired");
  // 3 windows a side of 25 pairs, 8 frames deep; one more window a side warms up.
  RunResult r = run({GMEMHOOK_TEST_HOOK_BENCH, "8", "25", "paired", "3"}, traced_env(out));
  ASSERT_TRUE(r.exited(0)) << r.err << r.out;
  const long traced = field(r.out, "traced_pairs");
  ASSERT_EQ(traced, 25 * (3 + 1)) << r.out;
  auto dirs = process_dirs(out);
  ASSERT_EQ(dirs.size(), 1u);
  const LoggedProcess p = read_process(dirs[0]);
  std::map<std::string, long> by_api;
  long allocs = 0, frees = 0;
  for (const auto& e : p.events) {
    ++by_api[e.api];
    allocs += e.kind == EventKind::Alloc;
    frees += e.kind == EventKind::Free;
  }
  // The direct windows made as many pairs again: had any reached the recorder, these would be 2x.
  EXPECT_EQ(by_api["cuMemAlloc_v2"], traced);
  EXPECT_EQ(by_api["cuMemFree_v2"], traced);
  EXPECT_EQ(allocs, traced);
  EXPECT_EQ(frees, traced);
}

}  // namespace
}  // namespace gmemhook::test

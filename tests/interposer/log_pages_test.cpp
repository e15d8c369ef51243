// The "gmemhook-pages" thread (interposer/log/log_pages.h) maps the logs' next pages ahead of
// their writers. It may change when a page is mapped, never what a log holds; and a writer never
// unmaps a chunk the thread may still work on. Its speed lives in bench/run_hook_bench.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "harness.h"

namespace gmemhook::test {
namespace {

namespace fs = std::filesystem;

// What a run recorded, less what differs between two runs of one program (times, thread ids,
// the order in which threads' events interleave): each thread's events in order, as text, the
// threads sorted.
std::vector<std::vector<std::string>> recorded(const fs::path& out, uint64_t* not_recorded) {
  auto dirs = process_dirs(out);
  EXPECT_EQ(dirs.size(), 1u);
  if (dirs.empty()) return {};
  LoggedProcess p = read_process(dirs[0]);
  EXPECT_TRUE(p.end);
  if (not_recorded) *not_recorded = p.end ? p.end->not_recorded : ~0ull;
  std::map<uint64_t, std::vector<std::string>> by_thread;
  for (const auto& e : p.events) {
    char line[160];
    std::snprintf(line, sizeof line, "%s kind %d size %llu result %u frames %zu", e.api.c_str(),
                  static_cast<int>(e.kind), static_cast<unsigned long long>(e.ev.f.size),
                  e.ev.result, e.stack.size());
    by_thread[e.tid].push_back(line);
  }
  std::vector<std::vector<std::string>> threads;
  for (auto& [tid, events] : by_thread) threads.push_back(std::move(events));
  std::sort(threads.begin(), threads.end());
  return threads;
}

size_t events_in(const std::vector<std::vector<std::string>>& threads) {
  size_t n = 0;
  for (const auto& t : threads) n += t.size();
  return n;
}

std::map<std::string, std::string> slowed_pages_env(const fs::path& out, const char* delay_us) {
  auto env = traced_env(out);
  env["GMEMHOOK_TEST_PAGE_DELAY_US"] = delay_us;
  return env;
}

// Writers that cross many windows and chunks while the thread is slow (2 ms a window: every
// window is late, and every chunk's end waits for it) record what they record without it.
TEST(LogPagesThread, SlowThreadLosesNoWriteAcrossWindowsAndChunks) {
  for (const char* threads : {"1", "4"}) {
    SCOPED_TRACE(std::string("threads ") + threads);
    const fs::path off = temp_dir(std::string("pages-off-") + threads);
    const fs::path slow = temp_dir(std::string("pages-slow-") + threads);
    auto off_env = traced_env(off);
    off_env["GMEMHOOK_PAGE_THREAD"] = "0";
    RunResult a = run({scenario_path(), "threads", threads, "60000"}, off_env);
    RunResult b =
        run({scenario_path(), "threads", threads, "60000"}, slowed_pages_env(slow, "2000"));
    ASSERT_TRUE(a.exited(0)) << a.err;
    ASSERT_TRUE(b.exited(0)) << b.err;
    uint64_t lost_a = 0, lost_b = 0;
    const auto ra = recorded(off, &lost_a);
    const auto rb = recorded(slow, &lost_b);
    EXPECT_EQ(events_in(rb), std::stoul(threads) * 60000 * 2);
    EXPECT_EQ(lost_b, 0u);
    EXPECT_EQ(ra, rb);
  }
}

// A thread exits while the pages thread (100 ms a window) works on a window of its last chunk:
// the exit waits for it. Unmapped at once, the chunk's address range went to memory this
// program mapped next, and the pages thread made that memory resident behind its back.
TEST(LogPagesThread, ThreadExitWaitsForTheWindowUnderWay) {
  const fs::path out = temp_dir("pages-exit");
  RunResult r = run({scenario_path(), "pages-after-unmap", "exit", "20000", "1000"},
                    slowed_pages_env(out, "100000"));
  ASSERT_TRUE(r.exited(0)) << r.err;
  EXPECT_EQ(r.out, "resident 0 after exit\n");
  uint64_t lost = 0;
  EXPECT_EQ(events_in(recorded(out, &lost)), 2u * 20000);
  EXPECT_EQ(lost, 0u);
}

// The same when the log dies (the disk fills after process.gmh's chunk, the main thread's and
// six of the writer's): the chunk it unmaps is handed back by the pages thread first.
TEST(LogPagesThread, LogThatDiesWaitsForTheWindowUnderWay) {
  const fs::path out = temp_dir("pages-dead");
  auto env = slowed_pages_env(out, "100000");
  env["GMEMHOOK_TEST_DISK_FULL_AFTER"] = "8";
  RunResult r = run({scenario_path(), "pages-after-unmap", "dead", "200000", "1000"}, env);
  ASSERT_TRUE(r.exited(0)) << r.err;
  EXPECT_EQ(r.out, "resident 0 after dying\n");
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
}

// A full disk with the pages thread slow: every event recorded or counted lost, and those
// recorded are what the run without the thread recorded up to where its disk filled (the exact
// place varies from run to run with or without it: event times take 1 to 10 bytes).
TEST(LogPagesThread, FullDiskRecordsWhatItDoesWithoutTheThread) {
  const fs::path off = temp_dir("pages-full-off");
  const fs::path slow = temp_dir("pages-full-slow");
  auto off_env = traced_env(off);
  off_env["GMEMHOOK_PAGE_THREAD"] = "0";
  off_env["GMEMHOOK_TEST_DISK_FULL_AFTER"] = "8";
  auto slow_env = slowed_pages_env(slow, "2000");
  slow_env["GMEMHOOK_TEST_DISK_FULL_AFTER"] = "8";
  RunResult a = run({scenario_path(), "threads", "1", "60000"}, off_env);
  RunResult b = run({scenario_path(), "threads", "1", "60000"}, slow_env);
  ASSERT_TRUE(a.exited(0)) << a.err;
  ASSERT_TRUE(b.exited(0)) << b.err;
  uint64_t lost_a = 0, lost_b = 0;
  const auto ra = recorded(off, &lost_a);
  const auto rb = recorded(slow, &lost_b);
  ASSERT_EQ(ra.size(), 1u);
  ASSERT_EQ(rb.size(), 1u);
  EXPECT_GT(lost_b, 0u);
  EXPECT_EQ(events_in(rb) + lost_b, 2u * 60000);
  const size_t n = std::min(ra[0].size(), rb[0].size());
  EXPECT_GT(n, 40000u);
  EXPECT_TRUE(std::equal(ra[0].begin(), ra[0].begin() + n, rb[0].begin()));
}

// A new chunk's first write does not read ahead (on the EPYC VM's disk, read_ahead_kb 8192, that
// would make the whole chunk's page-cache pages on the traced thread): with the pages thread
// stalled, only the writer's own first pages are in the page cache. Without the thread the writer
// reads ahead; where the file system does not read ahead at all there is nothing to see.
TEST(LogPagesThread, NewChunkIsNotReadAheadByTheWriter) {
  auto resident = [](const char* thread, const char* delay_us) {
    const fs::path out = temp_dir(std::string("pages-new-chunk-") + thread);
    auto env = slowed_pages_env(out, delay_us);
    env["GMEMHOOK_PAGE_THREAD"] = thread;
    RunResult r = run({scenario_path(), "new-chunk-pages", "256"}, env);
    EXPECT_TRUE(r.exited(0)) << r.err;
    int n = -1, of = 0;
    EXPECT_EQ(std::sscanf(r.out.c_str(), "resident %d of %d", &n, &of), 2) << r.out;
    EXPECT_EQ(of, 64) << r.out;
    return n;
  };
  const int without_thread = resident("0", "0");
  const int stalled_thread = resident("1", "300000");
  if (without_thread <= 8) GTEST_SKIP() << "this file system does not read ahead on a fault";
  EXPECT_LE(stalled_thread, 8) << "the writer's 16 KiB, and nothing read ahead";
}

// A fork child has no pages thread; what its parent had asked of it must not make the child wait.
TEST(LogPagesThread, ForkChildDoesNotWaitForItsParentsWindow) {
  const fs::path out = temp_dir("pages-fork");
  RunResult r = run({scenario_path(), "fork-pages", "3000"}, slowed_pages_env(out, "500000"));
  ASSERT_TRUE(r.exited(0)) << r.err;
  EXPECT_EQ(r.out, "child exited 0\n");
  const auto dirs = process_dirs(out);
  ASSERT_EQ(dirs.size(), 2u);
  for (const auto& d : dirs) {
    LoggedProcess p = read_process(d);
    EXPECT_EQ(p.events.size(), 2u * 3000) << d;
  }
}

}  // namespace
}  // namespace gmemhook::test

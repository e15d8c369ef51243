// Thread logs cost what they hold. 2000 threads that each make one allocation leave small
// files (no chunk reserved up front stays behind) and every event.
// The time bound (≤ 3× the plain run) lives in bench/run_short_threads_bench.sh, not here.
// And the traced thread does not fault the log's pages in one by one, and the exit seals the logs
// of threads still running.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <optional>

#include "harness.h"

namespace gmemhook::test {
namespace {

namespace fs = std::filesystem;

// Bytes the directory's files occupy on disk and claim (the larger of both, so neither sparse
// files nor preallocated blocks hide anything).
uint64_t disk_bytes(const fs::path& dir) {
  uint64_t total = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    struct stat st {};
    if (!e.is_regular_file() || stat(e.path().c_str(), &st) != 0) continue;
    total += std::max<uint64_t>(static_cast<uint64_t>(st.st_blocks) * 512,
                                static_cast<uint64_t>(st.st_size));
  }
  return total;
}

TEST(ShortLivedThreads, TwoThousandThreadsLeaveSmallLogsAndEveryEvent) {
  constexpr int kThreads = 2000;
  fs::path out = temp_dir("short-threads");
  RunResult r = run({scenario_path(), "short-threads", std::to_string(kThreads), "8"},
                    traced_env(out));
  ASSERT_TRUE(r.exited(0)) << r.err;
  EXPECT_EQ(r.out, "failures 0\n");
  EXPECT_NE(r.err.find("2000 allocations, 2000 frees recorded"), std::string::npos) << r.err;

  auto dirs = process_dirs(out);
  ASSERT_EQ(dirs.size(), 1u);
  EXPECT_LE(disk_bytes(dirs[0]), 64u << 20) << "a chunk reserved per thread stayed behind";

  LoggedProcess p = read_process(dirs[0]);
  EXPECT_EQ(p.thread_files, static_cast<size_t>(kThreads));
  size_t allocs = 0, frees = 0;
  for (const auto& e : p.events) {
    allocs += e.api == "cudaMalloc";
    frees += e.api == "cudaFree";
    if (e.api == "cudaMalloc") {
      EXPECT_FALSE(e.stack.empty()) << "seq " << e.ev.seq << ": captured by stepping, not cached";
    }
  }
  EXPECT_EQ(allocs, static_cast<size_t>(kThreads));
  EXPECT_EQ(frees, static_cast<size_t>(kThreads));
  ASSERT_TRUE(p.end);
  EXPECT_EQ(p.end->last_seq, 2u * kThreads);
  EXPECT_EQ(p.events.size(), 2u * kThreads);
}

// A thread's log is written through a MAP_SHARED mapping, and each page written the
// first time was a page fault on the traced thread (~6 ns an event); the log prefaults the pages
// ahead of the writer in one system call per 64 KiB. 100 000 pairs write ~1.2 MB (~290 pages).
TEST(ThreadLogPages, AreNotFaultedInOneByOneByTheTracedThread) {
  fs::path out = temp_dir("log-pages");
  auto env = traced_env(out);
  env["GMEMHOOK_DEPTH"] = "0";  // the log's pages only: no stack records
  RunResult r = run({scenario_path(), "log-pages", "100000"}, env);
  ASSERT_TRUE(r.exited(0)) << r.err;
  if (r.out == "faults unknown\n") GTEST_SKIP() << "perf events are not allowed here";
  long faults = -1;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "faults %ld", &faults), 1) << r.out;
  auto dirs = process_dirs(out);
  ASSERT_EQ(dirs.size(), 1u);
  LoggedProcess p = read_process(dirs[0]);
  EXPECT_GE(p.events.size(), 220000u);
  EXPECT_LT(faults, 40) << "one fault per page written is ~290";
}

// The scenario's 4 threads × 300 pairs, then exit() beside them while they wait or allocate
// (`how`): the process log after one pass over its events, read back. Fails the test unless the
// program ran as it would without the hook.
std::optional<analysis::ProcessReader> exit_beside_threads(const std::string& how) {
  fs::path out = temp_dir("exit-" + how);
  RunResult r = run({scenario_path(), "exit-beside-threads", "4", "300", how}, traced_env(out));
  EXPECT_TRUE(r.exited(0)) << r.err;
  auto dirs = process_dirs(out);
  EXPECT_EQ(dirs.size(), 1u);
  if (!r.exited(0) || dirs.size() != 1) return std::nullopt;
  auto reader = analysis::ProcessReader::open(dirs[0]);
  reader.for_each_event([](const format::Event&, const analysis::ThreadFileReader&) {});
  EXPECT_GE(reader.events_read(), 4u * 300 * 2);
  return reader;
}

// Threads still there at exit, waiting: the exiting thread seals their logs too, so damage to
// the last chunk they wrote is found like damage anywhere else (format.h, "Chunk seals").
TEST(ThreadLogsAtExit, ThreadsStillThereHaveTheirLastChunkSealed) {
  auto reader = exit_beside_threads("wait");
  ASSERT_TRUE(reader);
  EXPECT_EQ(reader->events_read(), 4u * 300 * 2);
  for (const auto& u : reader->unsealed_chunks())
    ADD_FAILURE() << u.file << ": chunk at " << u.chunk.offset << " left unsealed";
  EXPECT_TRUE(reader->warnings().empty());
}

// Threads still allocating while the process exits: whatever the exiting thread sealed and
// whatever they wrote after, no chunk reads as damaged. (A seal racing a thread's append would
// show here, in some of the runs.)
TEST(ThreadLogsAtExit, ThreadsStillAllocatingLeaveNoDamage) {
  for (int run_no = 0; run_no < 5; ++run_no) {
    auto reader = exit_beside_threads("busy");
    ASSERT_TRUE(reader);
    EXPECT_EQ(reader->damaged_chunks(), 0u);
    for (const auto& w : reader->warnings())
      EXPECT_EQ(w.message.find("damaged"), std::string::npos) << w.file << ": " << w.message;
  }
}

}  // namespace
}  // namespace gmemhook::test

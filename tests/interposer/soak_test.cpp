// Soak: 64 threads × 20000 cudaMalloc/cudaFree pairs, killed with SIGKILL at a random
// moment, 30 rounds; after each, every thread's log holds exactly the calls the program saw
// return. These are the defaults (~1.5 min on two cores; `ctest -L soak`);
// GMEMHOOK_SOAK_ROUNDS / _THREADS / _PAIRS / _SEED change them.
//
// The exact rule. A hook records after the real call returned and before it returns to the
// program: it stores the event's payload, then its header (the commit), then returns; the
// program counts the call after it returned (scenario.cpp, soak). A SIGKILL between the commit
// and the program's count leaves one event the count does not have yet; anywhere else the two
// agree. So per thread: logged == returned, or logged == returned + 1 (one call in flight), and
// exactly returned for a run that finished.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <random>
#include <thread>

#include "harness.h"

namespace gmemhook::test {
namespace {

namespace fs = std::filesystem;

// Must match scenario.cpp's SoakSlot.
struct SoakSlot {
  std::atomic<uint64_t> tid;
  std::atomic<uint64_t> returned;
};

int env_int(const char* name, int def) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : def;
}

// Calls each thread id saw return, read from the counts file after the process is gone.
std::map<uint64_t, uint64_t> returned_per_thread(const fs::path& counts, int threads) {
  std::vector<SoakSlot> slots(static_cast<size_t>(threads));
  int fd = open(counts.c_str(), O_RDONLY);
  EXPECT_GE(fd, 0);
  ssize_t n = pread(fd, slots.data(), slots.size() * sizeof(SoakSlot), 0);
  EXPECT_EQ(n, static_cast<ssize_t>(slots.size() * sizeof(SoakSlot)));
  close(fd);
  std::map<uint64_t, uint64_t> out;
  for (const SoakSlot& s : slots)
    if (uint64_t tid = s.tid.load()) out[tid] = s.returned.load();
  return out;
}

TEST(Soak, RandomKillsLeaveExactCountsPerThread) {
  const int rounds = env_int("GMEMHOOK_SOAK_ROUNDS", 30);
  const int threads = env_int("GMEMHOOK_SOAK_THREADS", 64);
  const int pairs = env_int("GMEMHOOK_SOAK_PAIRS", 20000);
  const unsigned seed = static_cast<unsigned>(env_int("GMEMHOOK_SOAK_SEED", 15));
  std::mt19937 rng(seed);
  // Kill times spread over about one whole run, measured by the first round (not killed).
  int full_ms = 0;
  int killed = 0, in_flight = 0;
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round) + " (seed " + std::to_string(seed) + ")");
    fs::path out = temp_dir("soak-out");
    fs::path counts = temp_dir("soak-counts") / "counts";
    {
      int fd = open(counts.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
      ASSERT_GE(fd, 0);
      ASSERT_EQ(ftruncate(fd, static_cast<off_t>(sizeof(SoakSlot) * threads)), 0);
      close(fd);
    }
    auto env = traced_env(out);
    env["GMEMHOOK_QUIET"] = "1";
    auto t0 = std::chrono::steady_clock::now();
    TracedProcess proc(
        {scenario_path(), "soak", std::to_string(threads), std::to_string(pairs), counts.string()},
        env);
    ASSERT_EQ(proc.read_line(), "started");
    const bool kill = round > 0 && full_ms > 0;
    if (kill) {
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % (full_ms + 1)));
      proc.kill(SIGKILL);
    }
    const int status = proc.wait(300);
    if (round == 0)
      full_ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::steady_clock::now() - t0)
                                     .count());
    const bool finished = WIFEXITED(status);
    if (finished) {
      ASSERT_EQ(WEXITSTATUS(status), 0) << proc.stderr_text();
    } else {
      ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
      ++killed;
    }

    const auto returned = returned_per_thread(counts, threads);
    ASSERT_EQ(returned.size(), static_cast<size_t>(threads));
    std::map<uint64_t, uint64_t> logged;
    // Killed before its first CUDA call returned, the process may have left no process
    // directory, or one without its log yet: nothing recorded, and no call returned.
    std::vector<fs::path> dirs;
    try {
      dirs = process_dirs(out);
    } catch (const analysis::ReadError& e) {
      if (finished) ADD_FAILURE() << e.what();
    }
    // A kill right after the process made its directory leaves a log of nothing (the reports
    // skip such a process and say so): then no thread may have seen a call return.
    bool nothing_recorded = false;
    try {
      if (!dirs.empty()) analysis::ProcessReader::open(dirs.at(0));
    } catch (const analysis::NothingRecordedError&) {
      nothing_recorded = !finished;
    }
    if (!dirs.empty() && !nothing_recorded) {
      auto reader = analysis::ProcessReader::open(dirs.at(0));
      reader.for_each_event(
          [&](const format::Event&, const analysis::ThreadFileReader& t) { ++logged[t.tid()]; });
      for (const auto& w : reader.warnings())
        EXPECT_EQ(w.message.find("damaged"), std::string::npos) << w.to_string();
    }
    for (const auto& [tid, n] : returned) {
      const uint64_t got = logged.count(tid) ? logged.at(tid) : 0;
      if (finished) {
        EXPECT_EQ(n, 2u * pairs) << "tid " << tid;
        EXPECT_EQ(got, n) << "tid " << tid;
      } else {
        EXPECT_TRUE(got == n || got == n + 1)
            << "tid " << tid << ": logged " << got << ", the program saw " << n << " return";
        in_flight += got == n + 1;
      }
    }
    for (const auto& [tid, n] : logged)
      EXPECT_TRUE(returned.count(tid)) << "events of a thread the program does not know: " << tid;
    if (HasFailure()) return;
    fs::remove_all(out);
    fs::remove_all(counts.parent_path());
  }
  std::printf(
      "soak: %d rounds (%d killed, one full run %d ms), %d threads x %d pairs; %d "
      "thread logs held one committed call the program had not counted yet\n",
      rounds, killed, full_ms, threads, pairs, in_flight);
}

}  // namespace
}  // namespace gmemhook::test

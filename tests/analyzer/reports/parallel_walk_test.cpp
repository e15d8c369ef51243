// Processes analysed in parallel (-j): every report gives the same document whatever
// the number of workers, the hint line still sums up every process, and an unreadable log stops
// the report as it does with one worker.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "analyzer/reports/process_walk.h"
#include "analyzer/reports/report.h"
#include "log_builder.h"
#include "report_scenario.h"

namespace gmemhook::test_logs {
namespace {

using format::ApiId;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kBias = Scenario::kModuleBias;
constexpr uint32_t kProcesses = 7;

struct Output {
  int status;
  std::string out, err;
};

Output report(const std::string& name, const std::filesystem::path& run, unsigned jobs,
              const std::string& format = "text") {
  analysis::ReportOptions o;
  o.run = run;
  o.run_arg = run.string();
  o.format = format;
  o.jobs = jobs;
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  Output r{analysis::run_report(*analysis::find_report(name), o, out, err), file_contents(out),
           file_contents(err)};
  std::fclose(out);
  std::fclose(err);
  return r;
}

class ParallelWalk : public ::testing::Test {
 protected:
  // Seven processes of different sizes (so workers finish out of order); only the last leaks.
  void SetUp() override {
    run_ = make_temp_dir("parallel-walk");
    for (uint32_t p = 0; p < kProcesses; ++p) {
      const uint32_t pid = 400 + 10 * p, tid = pid + 1;
      Scenario s(pid, "rank", std::to_string(p));
      const uint32_t site = s.stack(tid, {kBias + 0x1100 + 0x10 * p, kBias + 0x1900});
      const uint64_t rounds = (kProcesses - p) * 2000;
      for (uint64_t i = 0; i < rounds; ++i) {
        s.alloc(tid, ApiId::cudaMalloc, 0x7f0000000000 + (i % 64) * kMiB, kMiB, 0, site);
        s.free(tid, ApiId::cudaFree, 0x7f0000000000 + (i % 64) * kMiB);
      }
      if (p == kProcesses - 1) s.alloc(tid, ApiId::cudaMalloc, 0x7f1000000000, 3 * kMiB, 0, site);
      s.write(run_, true);
    }
  }
  void TearDown() override { std::filesystem::remove_all(run_); }

  std::filesystem::path run_;
};

TEST_F(ParallelWalk, EveryReportIsTheSameWithOneOrManyWorkers) {
  for (const analysis::ReportEntry& entry : analysis::reports()) {
    for (const char* format : {"text", "json"}) {
      const Output one = report(entry.name, run_, 1, format);
      ASSERT_EQ(one.status, analysis::kExitOk) << entry.name << " " << format << one.err;
      for (unsigned jobs : {2u, 3u, 16u}) {
        const Output many = report(entry.name, run_, jobs, format);
        EXPECT_EQ(many.status, analysis::kExitOk) << entry.name << " -j " << jobs;
        EXPECT_EQ(many.out, one.out) << entry.name << " " << format << " -j " << jobs;
      }
    }
  }
}

TEST_F(ParallelWalk, TheHintSumsUpEveryProcess) {
  // Only the last process leaked: merged from its own report instance, it still turns the leaks
  // hint to `peak` (with nothing leaked anywhere it would point to `summary`).
  const Output leaks = report("leaks", run_, 4);
  ASSERT_EQ(leaks.status, analysis::kExitOk) << leaks.err;
  EXPECT_NE(leaks.out.find("hint: "), std::string::npos);
  EXPECT_NE(leaks.out.find("gmemhook peak"), std::string::npos) << leaks.out;
  for (uint32_t p = 0; p < kProcesses; ++p)
    EXPECT_NE(leaks.out.find("process " + std::to_string(400 + 10 * p)), std::string::npos)
        << "process " << p << " missing:\n"
        << leaks.out;
}

TEST_F(ParallelWalk, AnUnreadableLogStopsTheReportAsWithOneWorker) {
  // The fourth process's thread file cut to a few bytes: damaged, whatever the worker count.
  for (const auto& dir : std::filesystem::directory_iterator(run_)) {
    if (dir.path().filename().string().find(".430") == std::string::npos) continue;
    for (const auto& f : std::filesystem::directory_iterator(dir.path()))
      if (f.path().filename().string().rfind("thread.", 0) == 0)
        std::filesystem::resize_file(f.path(), 20);
  }
  const Output one = report("summary", run_, 1);
  EXPECT_EQ(one.status, analysis::kExitUnreadable);
  for (unsigned jobs : {2u, 8u}) {
    const Output many = report("summary", run_, jobs);
    EXPECT_EQ(many.status, analysis::kExitUnreadable) << "-j " << jobs;
    EXPECT_EQ(many.err, one.err) << "-j " << jobs;
    EXPECT_EQ(many.out, one.out) << "-j " << jobs;
  }
  EXPECT_NE(one.err.find("gmemhook: "), std::string::npos) << one.err;
}

TEST_F(ParallelWalk, AProcessKilledWhileStartingIsSkippedAndSaid) {
  // Killed after making its directory, before its first record: process.gmh holds only the
  // zeros the writer allocated ahead (as left by SIGKILL in the soak test).
  const std::filesystem::path dir = run_ / "rank.999";
  std::filesystem::create_directories(dir);
  std::FILE* f = std::fopen((dir / "process.gmh").c_str(), "wb");
  ASSERT_NE(f, nullptr);
  const std::string zeros(65536, '\0');
  std::fwrite(zeros.data(), 1, zeros.size(), f);
  std::fclose(f);
  const std::string said =
      "gmemhook: 1 process was killed while starting, before recording anything, skipped: "
      "rank.999\n";
  for (unsigned jobs : {1u, 4u}) {
    const Output r = report("summary", run_, jobs);
    EXPECT_EQ(r.status, analysis::kExitOk) << "-j " << jobs << ": " << r.err;
    EXPECT_EQ(r.err, said) << "-j " << jobs;
    for (uint32_t p = 0; p < kProcesses; ++p)
      EXPECT_NE(r.out.find("process " + std::to_string(400 + 10 * p)), std::string::npos);
  }
  // Named alone, its directory is an unreadable log like any other.
  EXPECT_EQ(report("summary", dir, 1).status, analysis::kExitUnreadable);
}

// A process directory with no process.gmh cannot be read; in a run of other processes it is named,
// never passed over: empty, its process was killed between making it and creating the file; with
// thread files, its process.gmh was lost.
TEST_F(ParallelWalk, ADirectoryWithoutAProcessFileIsNamed) {
  std::filesystem::create_directories(run_ / "rank.997");
  const std::filesystem::path lost = run_ / "rank.998";
  std::filesystem::create_directories(lost);
  for (const auto& dir : std::filesystem::directory_iterator(run_))
    if (dir.path().filename() == "rank.400")
      std::filesystem::copy_file(dir.path() / "thread.401.gmh", lost / "thread.401.gmh");
  std::filesystem::create_directories(run_ / "notes.1" / "sub");  // someone else's: not ours
  for (unsigned jobs : {1u, 4u}) {
    const Output r = report("summary", run_, jobs);
    EXPECT_EQ(r.status, analysis::kExitOk) << r.err;
    EXPECT_EQ(r.err,
              "gmemhook: 1 process was killed while starting, before recording anything, "
              "skipped: rank.997\n"
              "gmemhook: 1 process directory has no process.gmh (its events cannot be read "
              "without it): rank.998 (1 thread file)\n")
        << "-j " << jobs;
  }
  // `dump` walks the run the same way.
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  EXPECT_EQ(analysis::walk_processes(run_, std::nullopt, out, err, [](analysis::ProcessReader&) {}),
            analysis::kExitOk);
  EXPECT_NE(file_contents(err).find("rank.998 (1 thread file)"), std::string::npos);
  std::fclose(out);
  std::fclose(err);
}

// Every process killed while starting: nothing to report, and no hint pointing at another report
// of nothing.
TEST(ParallelWalkAlone, ARunOfProcessesKilledWhileStartingSaysSoAndNothingElse) {
  const std::filesystem::path run = make_temp_dir("all-killed");
  for (const char* name : {"rank.10", "rank.11"}) {
    std::filesystem::create_directories(run / name);
    std::FILE* f = std::fopen((run / name / "process.gmh").c_str(), "wb");
    ASSERT_NE(f, nullptr);
    const std::string zeros(65536, '\0');
    std::fwrite(zeros.data(), 1, zeros.size(), f);
    std::fclose(f);
  }
  std::filesystem::create_directories(run / "rank.12");  // killed before process.gmh existed
  for (const char* name : {"summary", "peak", "leaks"}) {
    const Output r = report(name, run, 2);
    EXPECT_EQ(r.status, analysis::kExitReportFailure) << name;
    EXPECT_EQ(r.out, "") << name;
    EXPECT_EQ(r.err,
              "gmemhook: 3 processes were killed while starting, before recording anything, "
              "skipped: rank.10, rank.11, rank.12\n"
              "gmemhook: nothing to report: every process in " +
                  run.string() + " was skipped\n")
        << name;
  }
  std::filesystem::remove_all(run);
}

}  // namespace
}  // namespace gmemhook::test_logs

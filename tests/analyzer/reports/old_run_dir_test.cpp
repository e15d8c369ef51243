// Run directories left by hooks of log format 1 and 2: those hooks made a directory
// for every traced process at start-up, so a `python3 script.py` through a pyenv shim left one per
// bash, env, readlink ... Reports list only the processes that used CUDA and say in one line how
// many directories they skipped; a directory named on its own, or a --pid, is still shown.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "report_scenario.h"

namespace gmemhook::test_logs {
namespace {

using nlohmann::json;

// A process directory as a format-2 hook wrote it for a process that never reached CUDA: the
// header and ProcessInfo, no thread file; an End record only when the process exited (an image
// replaced by exec has none). `cuda_used` is the End record's own flag.
std::filesystem::path old_process(const std::filesystem::path& run, uint32_t pid,
                                  const std::string& exe, bool exited, bool cuda_used = false) {
  ProcessLogBuilder p(pid, kStartNs);
  p.file.header().version = 2;
  analysis::ProcessInfo info;
  info.pid = pid;
  info.ppid = 1;
  info.exe = "/usr/bin/" + exe;
  info.argv = {exe};
  p.info(info);
  if (exited) {
    // Version 2's End: how = exit, status 0, last seq 0, 5 ns, cuda_used; no not-recorded tail.
    const Bytes end = {0x01, 0x00, 0x00, 0x05, static_cast<uint8_t>(cuda_used ? 1 : 0)};
    p.file.record(format::RecordType::End, end);
  }
  ProcessLogs logs;
  logs.pid = pid;
  logs.exe_name = exe;
  logs.process = p.file.bytes();
  return write_process_dir(run, logs);
}

std::vector<uint64_t> pids(const CliResult& r) {
  EXPECT_EQ(r.status, 0) << r.err;
  std::vector<uint64_t> out;
  const json report = json::parse(r.out);
  for (const json& p : report["processes"]) out.push_back(p["pid"]);
  return out;
}

class OldRunDir : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = make_temp_dir("old_run");
    old_process(run_, 301, "bash", false);     // a shim replaced by exec: no End record
    old_process(run_, 302, "readlink", true);  // exited, End says CUDA was never used
    old_process(run_, 303, "env", false);
    old_process(run_, 304, "python3", true, true);  // no event, but the End says CUDA was used
    Scenario s(310, "python3");
    s.alloc(311, format::ApiId::cudaMalloc, 0x7f0000000000, 1 << 20);
    s.write(run_, true);
  }
  void TearDown() override { std::filesystem::remove_all(run_); }

  std::filesystem::path run_;
};

TEST_F(OldRunDir, ReportsListOnlyProcessesThatUsedCudaAndSaySoOnce) {
  for (const char* report : {"summary", "leaks", "peak"}) {
    const CliResult r = run_cli(std::string(report) + " --json " + quote(run_));
    EXPECT_EQ(pids(r), (std::vector<uint64_t>{304, 310})) << report;
    EXPECT_EQ(r.err,
              "gmemhook: 3 process directories of processes that made no CUDA call skipped (left "
              "by a hook older than log format 3)\n")
        << report;
  }
  const CliResult text = run_cli("summary " + quote(run_));
  EXPECT_EQ(text.status, 0);
  EXPECT_EQ(text.out.find("bash"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("readlink"), std::string::npos) << text.out;
}

TEST_F(OldRunDir, ADirectoryOrPidAskedForIsShown) {
  CliResult r = run_cli("summary --json --pid 301 " + quote(run_));
  EXPECT_EQ(pids(r), (std::vector<uint64_t>{301}));
  EXPECT_EQ(r.err, "");
  r = run_cli("summary --json " + quote(run_ / "readlink.302"));
  EXPECT_EQ(pids(r), (std::vector<uint64_t>{302}));
  EXPECT_EQ(r.err, "");
}

// The page and the trace walk the same processes.
TEST_F(OldRunDir, HtmlAndPerfettoSkipThemToo) {
  const std::filesystem::path page = run_ / "page.html";
  CliResult r = run_cli("html " + quote(run_) + " -o " + quote(page));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("3 process directories"), std::string::npos) << r.err;
  std::ifstream in(page);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find("/usr/bin/readlink"), std::string::npos);
  EXPECT_NE(text.find("python3"), std::string::npos);
  r = run_cli("html --format perfetto " + quote(run_) + " -o " + quote(run_ / "t.json"));
  EXPECT_EQ(r.status, 0) << r.err;
  // Said once, though the trace walks the run twice.
  EXPECT_EQ(r.err.find("3 process directories"), r.err.rfind("3 process directories")) << r.err;
}

}  // namespace
}  // namespace gmemhook::test_logs

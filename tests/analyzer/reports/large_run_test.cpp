// Ten million allocations live at once (a run that leaks a small tensor per step for days): every
// report and export, run as a user runs it, must stay under 2 GiB of memory. Outputs that would
// grow with the allocations are cut, and say so.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "log_builder.h"
#include "sample_logs.h"

namespace gmemhook::test_logs {
namespace {

using format::ApiId;

constexpr uint64_t kLive = 10'000'000;
constexpr uint64_t kMaxRssKiB = 2ull << 20;  // 2 GiB
constexpr uint32_t kPid = 5150;
constexpr uint64_t kBias = 0x400000;

// One thread allocating kLive 1-byte blocks from four call sites, none freed.
std::filesystem::path write_large_run(const std::filesystem::path& run) {
  ProcessLogs logs;
  logs.pid = kPid;
  logs.exe_name = "leaky";
  ProcessLogBuilder p(kPid, kStartNs);
  analysis::ProcessInfo info;
  info.pid = kPid;
  info.ppid = 1;
  info.exe = "/nonexistent/leaky";
  info.argv = {"leaky"};
  info.library_version = "0.1.0";
  info.chunk_size_hint = 1 << 20;
  p.info(info);
  p.snapshot(0, {{"/nonexistent/leaky", "", kBias, {{0, 0x100000, 5}}}});
  p.end(format::EndHow::Exit, 0, kLive, (kLive + 1) * 1000, true);
  logs.process = p.file.bytes();

  ThreadLogBuilder t(kPid, kPid, kStartNs, 1 << 20);
  uint32_t stacks[4];
  for (uint32_t s = 0; s < 4; ++s)
    stacks[s] = t.stack({kBias + 0x1000 + 0x100 * s, kBias + 0x9000});
  for (uint64_t i = 0; i < kLive; ++i) {
    format::Event ev =
        make_event(ApiId::cudaMalloc, i + 1, kStartNs + (i + 1) * 1000, stacks[i % 4]);
    ev.f.set_address(0x7f0000000000 + i * 512);
    ev.f.set_size(1);
    ev.f.set_device(0);
    t.event(ev);
  }
  t.file.seal_cut();
  logs.threads.push_back({kPid, std::move(t.file.bytes())});
  return write_process_dir(run, logs);
}

struct Measured {
  int status = -1;
  uint64_t max_rss_kib = 0;
  double seconds = 0;
};

// Runs the gmemhook binary with `args`, its stdout into `out` and stderr into `err`, and measures
// its peak RSS.
Measured run_measured(const std::vector<std::string>& args, const std::filesystem::path& out,
                      const std::filesystem::path& err) {
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int errors = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, STDOUT_FILENO);
    dup2(errors, STDERR_FILENO);
    std::vector<char*> argv{const_cast<char*>(GMEMHOOK_CLI)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(GMEMHOOK_CLI, argv.data());
    _exit(127);
  }
  Measured m;
  int status = 0;
  rusage usage{};
  if (wait4(pid, &status, 0, &usage) != pid) return m;
  m.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  m.max_rss_kib = static_cast<uint64_t>(usage.ru_maxrss);
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return m;
}

// Each command a test of its own, so ctest -j runs them side by side; each writes the run anew
// (a few seconds) rather than sharing one between processes.
class LargeRun : public ::testing::TestWithParam<std::vector<std::string>> {};

TEST_P(LargeRun, StaysUnder2GiB) {
  const auto dir = make_temp_dir("large-run");
  const std::string run = write_large_run(dir / "run").parent_path().string();
  std::vector<std::string> args;
  for (const std::string& a : GetParam())
    args.push_back(a == "RUN" ? run : a == "OUT" ? (dir / "exported").string() : a);
  const Measured m = run_measured(args, dir / "stdout", dir / "stderr");
  const std::filesystem::path output =
      std::filesystem::exists(dir / "exported") ? dir / "exported" : dir / "stdout";
  std::printf("%.1f s, %.0f MiB of memory, %.1f MiB written\n", m.seconds,
              static_cast<double>(m.max_rss_kib) / 1024,
              static_cast<double>(std::filesystem::file_size(output)) / 1048576);
  EXPECT_EQ(m.status, 0);
  EXPECT_LT(m.max_rss_kib, kMaxRssKiB);
  // The snapshot's segments would grow with the allocations: they are cut, and the cut said.
  std::ifstream err(dir / "stderr");
  const std::string said{std::istreambuf_iterator<char>(err), {}};
  if (std::find(args.begin(), args.end(), "memory-viz") != args.end())
    EXPECT_NE(said.find("segments were cut to the largest 100000"), std::string::npos) << said;
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    EveryReportAndExport, LargeRun,
    ::testing::Values(std::vector<std::string>{"summary", "RUN"},
                      std::vector<std::string>{"leaks", "RUN"},
                      std::vector<std::string>{"leaks", "RUN", "--json"},
                      std::vector<std::string>{"peak", "RUN", "--format", "folded"},
                      std::vector<std::string>{"peak", "RUN", "--format", "speedscope"},
                      std::vector<std::string>{"fragmentation", "RUN"},
                      std::vector<std::string>{"html", "RUN", "-o", "OUT"},
                      std::vector<std::string>{"html", "RUN", "--format", "perfetto", "-o", "OUT"},
                      std::vector<std::string>{"html", "RUN", "--format", "memory-viz", "-o",
                                               "OUT"}),
    [](const ::testing::TestParamInfo<std::vector<std::string>>& info) {
      std::string name;
      for (const std::string& a : info.param)
        if (a != "RUN" && a != "OUT" && a != "-o" && a != "--format") {
          if (!name.empty()) name += '_';
          for (char c : a)
            if (std::isalnum(static_cast<unsigned char>(c))) name += c;
        }
      return name;
    });

}  // namespace
}  // namespace gmemhook::test_logs

// nvidia-smi reconciled: summary and peak split NVML's figure at its peak into what
// the log allocated and what no allocation explains; leaks and peaks never count the samples.
#include "analyzer/reports/nvidia_smi.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "report_scenario.h"

namespace gmemhook::test_logs {
namespace {

using format::ApiId;
using format::NvmlReason;
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

format::NvmlSamplePayload sample(NvmlReason reason, uint64_t seq, uint64_t ms, uint64_t process) {
  // 32 MiB of another process on the device besides this one.
  return {reason, seq, ms * 1000000, 0, true, process, kGiB, process + 32 * kMiB};
}

// A context (48 MiB by NVML), 64 MiB, 128 MiB more, the 128 MiB freed; the 64 MiB leak.
Scenario steps(bool with_samples) {
  Scenario s(400);
  s.free(401, ApiId::cudaFree, 0);  // cudaFree(0): the context
  if (with_samples) s.nvml(sample(NvmlReason::FirstCall, 1, 1, 48 * kMiB));
  s.alloc(401, ApiId::cudaMalloc, 0x10000000, 64 * kMiB);
  if (with_samples) s.nvml(sample(NvmlReason::FirstAllocation, 2, 2, 112 * kMiB));
  s.alloc(401, ApiId::cudaMalloc, 0x20000000, 128 * kMiB);
  if (with_samples) s.nvml(sample(NvmlReason::Peak, 3, 3, 240 * kMiB));
  s.free(401, ApiId::cudaFree, 0x20000000);
  if (with_samples) {
    s.nvml(sample(NvmlReason::Periodic, 4, 4, 112 * kMiB));
    s.nvml(sample(NvmlReason::Exit, 4, 5, 112 * kMiB));
  }
  return s;
}

std::filesystem::path written(const char* name, bool with_samples) {
  auto run = make_temp_dir(name);
  steps(with_samples).write(run, true);
  return run;
}

TEST(NvidiaSmi, SummarySplitsThePeakIntoAllocatedAndUntracked) {
  auto run = written("smi-summary", true);
  const CliResult r = run_cli("summary " + quote(run));
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* line :
       {"  nvidia-smi, device 0 (NVML, sampled inside the process)\n",
        "    at its peak   240.0 MiB (251658240 bytes) at 3.00 ms = 192.0 MiB allocated through "
        "CUDA (this log)\n",
        "                  + 48.0 MiB not allocated by the program (context, modules, library "
        "workspaces)\n",
        "    headroom      752.0 MiB of 1.0 GiB free on the device then (all processes)\n",
        "5 samples, top 240.0 MiB\n"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\nin:\n" << r.out;

  const CliResult j = run_cli("summary --json " + quote(run));
  ASSERT_EQ(j.status, 0) << j.err;
  auto doc = nlohmann::json::parse(j.out);
  const auto& smi = doc["processes"][0]["nvidia_smi"];
  ASSERT_EQ(smi.size(), 1u) << smi;
  EXPECT_EQ(smi[0]["device"], 0);
  EXPECT_EQ(smi[0]["listed"], true);
  EXPECT_EQ(smi[0]["peak"]["process_bytes"], 240 * kMiB);
  EXPECT_EQ(smi[0]["peak"]["allocated_bytes"], 192 * kMiB);
  EXPECT_EQ(smi[0]["peak"]["untracked_bytes"], 48 * kMiB);
  EXPECT_EQ(smi[0]["peak"]["device_free_bytes"], kGiB - 272 * kMiB);
  EXPECT_EQ(smi[0]["peak"]["seq"], 3);
  ASSERT_EQ(smi[0]["samples"].size(), 5u);
  EXPECT_EQ(smi[0]["samples"][0]["reason"], "first-call");
  EXPECT_EQ(smi[0]["samples"][0]["allocated_bytes"], 0);
  EXPECT_EQ(smi[0]["samples"][3]["allocated_bytes"], 64 * kMiB);
  EXPECT_EQ(smi[0]["samples"][4]["reason"], "exit");
  std::filesystem::remove_all(run);
}

// The samples change no allocation figure: leaks is identical, peak's own numbers too.
TEST(NvidiaSmi, LeaksAndPeaksNeverCountSamples) {
  auto with = written("smi-with", true), without = written("smi-without", false);
  const CliResult lw = run_cli("leaks " + quote(with)), lo = run_cli("leaks " + quote(without));
  ASSERT_EQ(lw.status, 0) << lw.err;
  auto unnamed = [](std::string s, const std::filesystem::path& dir) {
    for (size_t at; (at = s.find(dir.string())) != std::string::npos;)
      s.erase(at, dir.string().size());
    return s;
  };
  EXPECT_EQ(unnamed(lw.out, with), unnamed(lo.out, without));
  const CliResult pw = run_cli("peak --json " + quote(with)),
                  po = run_cli("peak --json " + quote(without));
  ASSERT_EQ(pw.status, 0) << pw.err;
  auto dw = nlohmann::json::parse(pw.out)["processes"][0],
       d0 = nlohmann::json::parse(po.out)["processes"][0];
  EXPECT_EQ(dw["devices"], d0["devices"]);
  EXPECT_EQ(dw["nvidia_smi"][0]["peak"]["untracked_bytes"], 48 * kMiB);
  EXPECT_TRUE(d0["nvidia_smi"].empty());
  const CliResult pt = run_cli("peak " + quote(with));
  EXPECT_NE(pt.out.find("device 0: peak 192.0 MiB"), std::string::npos) << pt.out;
  EXPECT_NE(pt.out.find("+ 48.0 MiB not allocated by the program"), std::string::npos) << pt.out;
  std::filesystem::remove_all(with);
  std::filesystem::remove_all(without);
}

// A process that only made a context: nothing allocated, all of NVML's figure untracked.
TEST(NvidiaSmi, ContextOnlyIsAllUntracked) {
  auto run = make_temp_dir("smi-context");
  Scenario s(402);
  s.free(403, ApiId::cudaFree, 0);
  s.nvml(sample(NvmlReason::FirstCall, 1, 1, 500 * kMiB));
  s.nvml(sample(NvmlReason::Exit, 1, 900, 500 * kMiB));
  s.write(run, true);
  const CliResult j = run_cli("summary --json " + quote(run));
  ASSERT_EQ(j.status, 0) << j.err;
  const auto smi = nlohmann::json::parse(j.out)["processes"][0]["nvidia_smi"][0]["peak"];
  EXPECT_EQ(smi["allocated_bytes"], 0);
  EXPECT_EQ(smi["untracked_bytes"], 500 * kMiB);
  const CliResult t = run_cli("summary " + quote(run));
  EXPECT_NE(t.out.find("+ 500.0 MiB not allocated by the program"), std::string::npos) << t.out;
  std::filesystem::remove_all(run);
}

// NVML does not list the pid (a container): no split is invented, the device's figures remain.
TEST(NvidiaSmi, UnlistedProcessShowsOnlyTheDevice) {
  auto run = make_temp_dir("smi-unlisted");
  Scenario s(404);
  s.alloc(405, ApiId::cudaMalloc, 0x10000000, 64 * kMiB);
  s.nvml({NvmlReason::FirstCall, 1, 1000000, 0, false, 0, kGiB, 200 * kMiB});
  s.write(run, true);
  const CliResult t = run_cli("summary " + quote(run));
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("NVML does not list this process under its pid"), std::string::npos)
      << t.out;
  EXPECT_NE(t.out.find("824.0 MiB of 1.0 GiB free"), std::string::npos) << t.out;
  EXPECT_EQ(t.out.find("not allocated by the program"), std::string::npos) << t.out;
  std::filesystem::remove_all(run);
}

// The page asks for a bounded series: each stretch keeps its highest process and device figures,
// so the highs survive and the count stays near the budget; a short series is kept whole.
TEST(NvidiaSmi, ThinnedSeriesKeepsTheHighs) {
  std::vector<analysis::ReconciledSample> series(1000);
  for (size_t i = 0; i < series.size(); ++i) {
    series[i].nvml.process_used = (i % 7) * kMiB;
    series[i].nvml.used = (i % 11) * kMiB;
  }
  series[500].nvml.process_used = 900 * kMiB;  // the peak
  series[501].nvml.used = 950 * kMiB;          // the device's high, one sample later
  const std::vector<size_t> kept = analysis::thinned_samples(series, 100);
  EXPECT_LE(kept.size(), 100u);
  EXPECT_GE(kept.size(), 50u);
  EXPECT_TRUE(std::is_sorted(kept.begin(), kept.end()));
  EXPECT_NE(std::find(kept.begin(), kept.end(), 500u), kept.end());
  EXPECT_NE(std::find(kept.begin(), kept.end(), 501u), kept.end());
  EXPECT_EQ(analysis::thinned_samples(series, 0).size(), 1000u);
  series.resize(80);
  EXPECT_EQ(analysis::thinned_samples(series, 100).size(), 80u);
}

}  // namespace
}  // namespace gmemhook::test_logs

// The reports' allocated layer end to end: on a PyTorch-shaped process built event by
// event (block_scenario.h) the leaks are the tensors and the cache is a total, the peak names the
// tensor sites and the allocator's overhead, fragmentation shows the segments, diff compares
// tensors, the summary puts PyTorch's totals beside ours; and on the simulated device's fake c10
// under the hook, PyTorch's own totals and ours agree.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "block_scenario.h"

namespace gmemhook::test_logs {
namespace {

using nlohmann::json;

constexpr uint64_t kMiB = BlockScenario::kMiB;

json report_json(const std::string& args) {
  const CliResult r = run_cli(args);
  EXPECT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

class BlocksReport : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    run_ = new std::filesystem::path(make_temp_dir("blocks-report"));
    Scenario s(100, "python");
    add_block_scenario(s);
    s.write(*run_, true, 0);
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*run_);
    delete run_;
  }
  static std::string run() { return quote(*run_); }
  static std::filesystem::path* run_;
};
std::filesystem::path* BlocksReport::run_ = nullptr;

TEST_F(BlocksReport, LeaksAreTheTensorsAndTheCacheIsATotal) {
  const json p = report_json("leaks --json " + run())["processes"][0];
  uint64_t block_bytes = 0, other_bytes = 0;
  for (const json& l : p["leaks"]) {
    if (l["kind"] == "block")
      block_bytes += l["bytes"].get<uint64_t>();
    else
      other_bytes += l["bytes"].get<uint64_t>();
  }
  EXPECT_EQ(block_bytes, BlockScenario::kLiveBlockBytes);
  EXPECT_EQ(other_bytes, kMiB) << "only the cudaMalloc outside the allocator: " << p.dump(1);
  EXPECT_EQ(p["total_bytes"], BlockScenario::kLiveBlockBytes + kMiB);
  ASSERT_EQ(p["cached_by_allocator"].size(), 1u);
  EXPECT_EQ(p["cached_by_allocator"][0]["bytes"], BlockScenario::kCachedBytes);
  EXPECT_EQ(p["cached_by_allocator"][0]["segments"], 1u);

  const CliResult text = run_cli("leaks " + run());
  EXPECT_NE(
      text.out.find("Leaked 4.0 KiB (4096 bytes) in 1 block (PyTorch allocator, device 0)"),
      std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("Cached by PyTorch's allocator, not leaked: 20.0 MiB"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("(20.0 MiB more cached by PyTorch's allocator, not leaked)."),
            std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find("Leaked 20.0 MiB"), std::string::npos) << text.out;
}

TEST_F(BlocksReport, PeakNamesTensorSitesAndTheAllocatorOverhead) {
  const json d = report_json("peak --json " + run())["processes"][0]["devices"][0];
  EXPECT_EQ(d["peak_bytes"], BlockScenario::kReservedPeak);
  const json& a = d["allocated"];
  EXPECT_EQ(a["peak_bytes"], BlockScenario::kAllocatedPeak);
  EXPECT_EQ(a["peak_seq"], BlockScenario::kAllocatedPeakSeq);
  ASSERT_EQ(a["sites"].size(), 2u);
  EXPECT_EQ(a["sites"][0]["bytes"], 10 * kMiB + 4096);
  EXPECT_EQ(a["allocated_at_reserved_peak"], BlockScenario::kLiveBlockBytes);
  EXPECT_EQ(a["overhead_at_reserved_peak"],
            BlockScenario::kReservedPeak - BlockScenario::kLiveBlockBytes);

  const CliResult text = run_cli("peak " + run());
  EXPECT_NE(text.out.find("device 0 allocated (PyTorch tensors): peak 10.0 MiB"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("PEAK TENSOR CONSUMERS"), std::string::npos) << text.out;
  // A row's stacks of blocks are counted in blocks.
  EXPECT_NE(text.out.find("stack 1 of 2: 10.0 MiB in 2 blocks:"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("allocator overhead (reserved - allocated) 23.0 MiB"), std::string::npos)
      << text.out;
  // What --top leaves out of the tensors' sites is counted in blocks, as their rows are.
  const CliResult top = run_cli("peak --group-by stack --top 1 " + run());
  const size_t tensors = top.out.find("PEAK TENSOR CONSUMERS");
  const size_t rest = top.out.find(" more in 1 block (--top 0 shows all)", tensors);
  EXPECT_NE(rest, std::string::npos) << top.out;
  EXPECT_LT(rest, top.out.find("PEAK MEMORY CONSUMERS")) << top.out;
}

// The exports a flame-graph viewer opens: folded adds every profile up, so it carries the
// tensors alone (never a tensor and its segment twice); speedscope keeps profiles apart and has
// the tensors' profile first, then the segments'.
TEST_F(BlocksReport, PeakExportsTheTensorsNotTheSegmentsTwice) {
  const CliResult folded = run_cli("peak --format folded " + run());
  ASSERT_EQ(folded.status, 0) << folded.err;
  uint64_t total = 0;
  std::istringstream lines(folded.out);
  for (std::string line; std::getline(lines, line);)
    total += std::stoull(line.substr(line.rfind(' ') + 1));
  EXPECT_EQ(total, BlockScenario::kAllocatedPeak) << folded.out;

  const json speedscope = report_json("peak --format speedscope " + run());
  const json& profiles = speedscope["profiles"];
  ASSERT_EQ(profiles.size(), 2u) << speedscope.dump(1);
  EXPECT_NE(profiles[0]["name"].get<std::string>().find("allocated (PyTorch tensors) peak"),
            std::string::npos);
  EXPECT_NE(profiles[1]["name"].get<std::string>().find("reserved (segments from CUDA) peak"),
            std::string::npos);
  uint64_t tensors = 0, segments = 0;
  for (const json& w : profiles[0]["weights"]) tensors += w.get<uint64_t>();
  for (const json& w : profiles[1]["weights"]) segments += w.get<uint64_t>();
  EXPECT_EQ(tensors, BlockScenario::kAllocatedPeak);
  EXPECT_EQ(segments, BlockScenario::kReservedPeak);
}

TEST_F(BlocksReport, SummaryPutsPyTorchsTotalsBesideOurs) {
  const json d = report_json("summary --json " + run())["processes"][0]["devices"][0];
  const json& a = d["allocated"];
  EXPECT_EQ(a["allocations"], 3u);
  EXPECT_EQ(a["frees"], 2u);
  EXPECT_EQ(a["peak_bytes"], a["torch"]["max_total_allocated"]);
  EXPECT_EQ(a["live_bytes_at_end"], a["torch"]["total_allocated"]);
  EXPECT_EQ(a["cached_bytes_at_end"], BlockScenario::kCachedBytes);
  EXPECT_EQ(d["allocations"], 3u) << "blocks are never counted on top of their segments";

  const CliResult text = run_cli("summary " + run());
  EXPECT_NE(text.out.find("the same as gmemhook's"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("more cached by PyTorch's allocator, not leaked"), std::string::npos)
      << text.out;
}

TEST_F(BlocksReport, FragmentationShowsTheAllocatorsSegments) {
  const json p = report_json("fragmentation --json " + run())["processes"][0];
  ASSERT_EQ(p["allocator"].size(), 2u) << p.dump(1);  // at the reserved peak, most idle
  for (const json& v : p["allocator"]) {
    EXPECT_EQ(v["seq"], BlockScenario::kReservedPeakSeq);
    EXPECT_EQ(v["reserved_bytes"], BlockScenario::kReservedPeak);
    EXPECT_EQ(v["allocated_bytes"], BlockScenario::kLiveBlockBytes);
    ASSERT_EQ(v["allocator_segments"].size(), 2u);
    EXPECT_EQ(v["allocator_segments"][0]["largest_free_bytes"], 2 * kMiB - 5120);
    EXPECT_EQ(v["allocator_segments"][1]["free_bytes"], 20 * kMiB);
  }
  EXPECT_EQ(p["allocator"][0]["at"], "peak");
  EXPECT_EQ(p["allocator"][1]["at"], "most-idle");
  const CliResult text = run_cli("fragmentation " + run());
  EXPECT_NE(text.out.find("PyTorch's caching allocator at the reserved peak"), std::string::npos)
      << text.out;
}

TEST_F(BlocksReport, DiffComparesTensorsWhenBothRunsHaveThem) {
  const std::filesystem::path other = make_temp_dir("blocks-report-new");
  Scenario s(100, "python");
  add_block_scenario(s);
  block_event(s, 11, BlockScenario::kSegA + 8192, 2 * 4096, 4096 + 8192, 22 * kMiB,
              s.stack(11, {Scenario::kModuleBias + 0x1500}));
  s.write(other, true, 0);
  const json j = report_json("diff --leaks --json " + run() + " " + quote(other));
  EXPECT_EQ(j["layer"], "allocated");
  EXPECT_EQ(j["delta_bytes"], 8192) << j.dump(1);
  std::filesystem::remove_all(other);
}

#ifdef GMEMHOOK_BLOCKS_SCENARIO
// The fake c10 under the hook: what PyTorch's own totals said is what gmemhook counted.
TEST(BlocksOnFakeC10, TorchTotalsAgreeWithTheReports) {
  const std::filesystem::path run = make_temp_dir("blocks-fakec10");
  const std::string cmd = "env GMEMHOOK_OUT=" + quote(run) + " GMEMHOOK_QUIET=1 LD_PRELOAD='" +
                          GMEMHOOK_HOOK + "' LD_LIBRARY_PATH='" + GMEMHOOK_FAKECUDA_DIR + "' '" +
                          GMEMHOOK_BLOCKS_SCENARIO + "' blocks >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const json summary = report_json("summary --json " + quote(run))["processes"][0];
  uint64_t live_blocks = 0;
  for (const json& d : summary["devices"]) {
    if (d["allocated"].is_null()) continue;
    const json& a = d["allocated"];
    EXPECT_EQ(a["live_bytes_at_end"], a["torch"]["total_allocated"]) << d.dump(1);
    EXPECT_EQ(a["peak_bytes"], a["torch"]["max_total_allocated"]) << d.dump(1);
    EXPECT_EQ(a["unknown_frees"], 0u);
    live_blocks += a["live_bytes_at_end"].get<uint64_t>();
  }
  EXPECT_GT(live_blocks, 0u);
  const json leaks = report_json("leaks --json " + quote(run))["processes"][0];
  EXPECT_EQ(leaks["total_bytes"], live_blocks) << "every segment is the allocator's";
  for (const json& l : leaks["leaks"]) EXPECT_EQ(l["kind"], "block") << l.dump(1);
  std::filesystem::remove_all(run);
}
#endif

}  // namespace
}  // namespace gmemhook::test_logs

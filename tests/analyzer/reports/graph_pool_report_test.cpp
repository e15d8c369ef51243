// The CUDA graph memory pool in the reports: on a process built event by event, the
// driver's figures recorded after an upload, a launch and a trim appear beside device 0 in
// `summary` (text and JSON) and `peak`, at the peak (here the upload, which allocates the
// graph's nodes) and after the last graph call, and are never added to what the series counts;
// a device without graph calls reads as before.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "report_scenario.h"

namespace gmemhook::test_logs {
namespace {

using format::ApiId;
using nlohmann::json;

constexpr uint64_t kMiB = 1 << 20, kChunk = 32 * kMiB;
constexpr uint64_t kGraph = 0x900, kExec = 0x901;

// cudaMalloc 10 MiB; a graph of a 4 MiB and a 40 MiB allocation node, uploaded (both allocated
// there: the peak, 54 MiB; the driver says 64 MiB used, the graph's 44 MiB in whole chunks, and
// 96 MiB reserved, as the H200 did for its 52 MiB graph), launched (on that memory: the same
// figures), the 40 MiB freed, the pool trimmed to the 32 MiB still used. Device 1 only ever sees
// a cudaMalloc.
class GraphPoolReport : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    run_ = new std::filesystem::path(make_temp_dir("graph-pool-report"));
    Scenario s(300, "graphs");
    s.alloc(11, ApiId::cudaMalloc, 0x7000000, 10 * kMiB);
    s.alloc(11, ApiId::cudaMalloc, 0x9000000, kMiB, 1);
    for (auto [address, size] : {std::pair{0x10000000ull, 4 * kMiB}, {0x20000000ull, 40 * kMiB}}) {
      format::Event& node = s.event(11, ApiId::cudaGraphAddMemAllocNode);
      node.f.set_graph(kGraph);
      node.f.set_address(address);
      node.f.set_size(size);
      node.f.set_device(0);
    }
    format::Event& inst = s.event(11, ApiId::cudaGraphInstantiate);
    inst.f.set_handle(kExec);
    inst.f.set_graph(kGraph);
    const auto pool_call = [&](ApiId api, uint64_t used, uint64_t reserved) {
      return s.graph_pool_call(11, api, kExec, used, reserved);
    };
    upload_seq_ = pool_call(ApiId::cudaGraphUpload, 2 * kChunk, 3 * kChunk);
    launch_seq_ = pool_call(ApiId::cudaGraphLaunch, 2 * kChunk, 3 * kChunk);
    s.free(11, ApiId::cudaFree, 0x20000000);
    trim_seq_ = pool_call(ApiId::cudaDeviceGraphMemTrim, kChunk, kChunk);
    s.write(*run_, true, 0);
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*run_);
    delete run_;
  }
  static std::string run() { return quote(*run_); }
  static json report_json(const std::string& report) {
    const CliResult r = run_cli(report + " --json " + run());
    EXPECT_EQ(r.status, 0) << r.err;
    json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j["processes"][0];
  }
  static std::filesystem::path* run_;
  static uint64_t upload_seq_, launch_seq_, trim_seq_;
};
std::filesystem::path* GraphPoolReport::run_ = nullptr;
uint64_t GraphPoolReport::upload_seq_ = 0, GraphPoolReport::launch_seq_ = 0,
         GraphPoolReport::trim_seq_ = 0;

TEST_F(GraphPoolReport, SummaryJsonHasThePoolBesideTheDeviceNotInIt) {
  const json p = report_json("summary");
  ASSERT_EQ(p["devices"].size(), 2u);
  const json& d = p["devices"][0];
  ASSERT_EQ(d["device"], 0);
  EXPECT_EQ(d["peak_bytes"], 54 * kMiB) << "cudaMalloc + both nodes, nothing of the pool";
  EXPECT_EQ(d["peak_seq"], upload_seq_) << "the upload allocates the nodes";
  EXPECT_EQ(d["live_bytes_at_end"], 14 * kMiB);
  const json& g = d["graph_pool"];
  EXPECT_EQ(g["last"], json({{"reserved_bytes", kChunk},
                             {"used_bytes", kChunk},
                             {"spare_bytes", 0},
                             {"seq", trim_seq_}}));
  EXPECT_EQ(g["at_peak"], json({{"reserved_bytes", 3 * kChunk},
                                {"used_bytes", 2 * kChunk},
                                {"spare_bytes", kChunk},
                                {"seq", upload_seq_}}));
  EXPECT_EQ(g["reserved_high_bytes"], 3 * kChunk);
  EXPECT_EQ(g["used_high_bytes"], 2 * kChunk);
  EXPECT_TRUE(p["devices"][1]["graph_pool"].is_null()) << "device 1 made no graph call";
  EXPECT_EQ(p["cuda_graphs"]["uploads"], 1);
  EXPECT_EQ(p["cuda_graphs"]["launches"], 1);
}

TEST_F(GraphPoolReport, SummaryTextSaysReservedHighWaterAndUsedAtThePeakAndAfterTheLastCall) {
  const CliResult r = run_cli("summary " + run());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("    graph pool    CUDA graph memory pool: reserved 32.0 MiB (high-water "
                       "96.0 MiB), used by graph allocations 32.0 MiB, after the last graph "
                       "launch, upload or trim (seq " +
                       std::to_string(trim_seq_) + ")\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("                  at the peak: reserved 96.0 MiB, used 64.0 MiB, spare "
                       "32.0 MiB: the pool's, not in the peak"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("graph pool", r.out.find("  device 1")), std::string::npos)
      << "one device's pool only: " << r.out;
  EXPECT_NE(r.out.find("1 launch replayed (and 1 upload: nodes live from the upload)"),
            std::string::npos)
      << r.out;
}

TEST_F(GraphPoolReport, PeakShowsThePoolAtThePeak) {
  const json p = report_json("peak");
  const json& d = p["devices"][0];
  EXPECT_EQ(d["peak_bytes"], 54 * kMiB);
  // At the upload: both nodes, under their call site.
  const json* nodes = nullptr;
  for (const json& site : d["sites"])
    if (site["api"] == "cudaGraphAddMemAllocNode") nodes = &site;
  ASSERT_NE(nodes, nullptr) << d["sites"].dump(1);
  EXPECT_EQ((*nodes)["bytes"], 44 * kMiB);
  EXPECT_EQ((*nodes)["count"], 2);
  EXPECT_EQ(d["graph_pool"]["at_peak"]["reserved_bytes"], 3 * kChunk);
  EXPECT_EQ(d["graph_pool"]["at_peak"]["spare_bytes"], kChunk);
  EXPECT_TRUE(p["devices"][1]["graph_pool"].is_null());
  const CliResult r = run_cli("peak " + run());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("  CUDA graph memory pool at the peak: reserved 96.0 MiB (high-water "
                       "96.0 MiB), used by graph allocations 64.0 MiB, spare 32.0 MiB "
                       "(33554432 bytes); not in the peak"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace gmemhook::test_logs

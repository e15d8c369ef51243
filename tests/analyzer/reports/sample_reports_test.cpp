// The reports on real runs: each sample program runs under libgmemhook.so on the simulated device,
// and the reports must find the numbers its header comment states, attributed to the functions
// it names. Skipped where the samples were not built (no nvcc).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "report_scenario.h"

#if !defined(GMEMHOOK_SAMPLES_DIR) || !defined(GMEMHOOK_HOOK) || !defined(GMEMHOOK_FAKECUDA_DIR)
#error "GMEMHOOK_SAMPLES_DIR, GMEMHOOK_HOOK and GMEMHOOK_FAKECUDA_DIR must be defined by CMake"
#endif

namespace gmemhook::test_logs {
namespace {

using nlohmann::json;

constexpr uint64_t kMiB = 1 << 20;

struct SampleRun {
  std::filesystem::path run;
  std::string out;
  int status = -1;
};

// Runs samples/<name> traced into a fresh run directory; skips the test when it was not built.
SampleRun run_sample(const std::string& name, const std::string& env = "") {
  const std::filesystem::path exe = std::filesystem::path(GMEMHOOK_SAMPLES_DIR) / name;
  SampleRun r;
  if (!std::filesystem::exists(exe)) return r;
  r.run = make_temp_dir("sample-" + name);
  const std::string cmd = "env GMEMHOOK_OUT=" + quote(r.run) + " GMEMHOOK_QUIET=1 LD_PRELOAD='" +
                          GMEMHOOK_HOOK + "' LD_LIBRARY_PATH='" + GMEMHOOK_FAKECUDA_DIR + "' " +
                          env + " " + quote(exe) + " >" + quote(r.run / "stdout.txt") + " 2>&1";
  const int rc = std::system(cmd.c_str());
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  std::ifstream in(r.run / "stdout.txt");
  std::stringstream s;
  s << in.rdbuf();
  r.out = s.str();
  std::filesystem::remove(r.run / "stdout.txt");
  return r;
}

#define RUN_SAMPLE_OR_SKIP(var, ...)                                                 \
  SampleRun var = run_sample(__VA_ARGS__);                                           \
  if (var.run.empty()) GTEST_SKIP() << "samples not built (no nvcc): " #__VA_ARGS__; \
  ASSERT_EQ(var.status, 0) << var.out

json report(const std::string& args, const SampleRun& s) {
  const CliResult r = run_cli(args + " --json " + quote(s.run));
  EXPECT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["processes"].size(), 1u) << r.out;
  return j["processes"][0];
}

// The innermost frame's function, e.g. "leak_in_loop()".
std::string top_function(const json& stack, size_t i = 0) {
  if (!stack.is_array() || stack.size() <= i || stack[i]["function"].is_null()) return "?";
  return stack[i]["function"].get<std::string>();
}

TEST(SampleReports, LeakFindsTheThreeLeakingSites) {
  RUN_SAMPLE_OR_SKIP(s, "leak");
  const json p = report("leaks", s);
  EXPECT_EQ(p["end"], "exited");
  EXPECT_EQ(p["exit_code"], 0);
  const json& leaks = p["leaks"];
  ASSERT_EQ(leaks.size(), 3u) << leaks.dump(1);
  EXPECT_EQ(leaks[0]["api"], "cudaMalloc");
  EXPECT_EQ(leaks[0]["device"], 0);
  EXPECT_EQ(leaks[0]["memory"], "device");
  EXPECT_EQ(leaks[0]["bytes"], 50331648);
  EXPECT_EQ(leaks[0]["count"], 3);
  EXPECT_TRUE(top_function(leaks[0]["stack"]).starts_with("leak_in_loop"))
      << leaks[0]["stack"].dump(1);
  EXPECT_EQ(leaks[1]["bytes"], 4194304);
  EXPECT_EQ(leaks[1]["count"], 1);
  EXPECT_TRUE(top_function(leaks[1]["stack"]).starts_with("forgotten_buffer"));
  EXPECT_EQ(leaks[2]["api"], "cudaMallocHost");
  EXPECT_EQ(leaks[2]["memory"], "host-pinned");
  EXPECT_EQ(leaks[2]["bytes"], 1048576);
  EXPECT_TRUE(top_function(leaks[2]["stack"]).starts_with("staging_buffer"));
  EXPECT_EQ(p["by_memory"]["device"]["bytes"], 54525952);
  EXPECT_EQ(p["by_memory"]["device"]["count"], 4);
  // No frame of the recorder itself is ever shown.
  for (const json& l : leaks)
    for (const json& f : l["stack"]) {
      if (f["module"].is_string()) {
        EXPECT_EQ(f["module"].get<std::string>().find("libgmemhook"), std::string::npos);
      }
    }

  const json sum = report("summary", s);
  EXPECT_EQ(sum["devices"][0]["allocations"], 11);
  EXPECT_EQ(sum["devices"][0]["frees"], 7);
  EXPECT_EQ(sum["devices"][0]["live_bytes_at_end"], 54525952);
  EXPECT_EQ(sum["devices"][1]["memory"], "host-pinned");

  const CliResult text = run_cli("leaks " + quote(s.run));
  // Headed by the user's line (the sample is built with -g), then the frames.
  EXPECT_NE(text.out.find("Leaked 48.0 MiB (50331648 bytes) in 3 allocations (cudaMalloc, "
                          "device 0) allocated from:\n    "),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("leak.cu:"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(" in leak_in_loop() (leak)\n      #0 leak_in_loop()"), std::string::npos)
      << text.out;
  std::filesystem::remove_all(s.run);
}

TEST(SampleReports, PeakNamesBothSitesWithTheirShares) {
  RUN_SAMPLE_OR_SKIP(s, "peak");
  const json p = report("peak", s);
  const json& d = p["devices"][0];
  EXPECT_EQ(d["device"], 0);
  EXPECT_EQ(d["peak_bytes"], 402653184);
  ASSERT_EQ(d["sites"].size(), 2u) << d.dump(1);
  EXPECT_EQ(d["sites"][0]["bytes"], 268435456);
  EXPECT_EQ(d["sites"][0]["count"], 4);
  EXPECT_DOUBLE_EQ(d["sites"][0]["share"].get<double>(), 2.0 / 3.0);
  EXPECT_TRUE(top_function(d["sites"][0]["stack"]).starts_with("load_weights"));
  EXPECT_EQ(d["sites"][1]["bytes"], 134217728);
  EXPECT_EQ(d["sites"][1]["count"], 1);
  EXPECT_TRUE(top_function(d["sites"][1]["stack"]).starts_with("activations"));
  EXPECT_TRUE(d["first_failure"].is_null());
  EXPECT_EQ(report("leaks", s)["total_bytes"], 0);
  std::filesystem::remove_all(s.run);
}

TEST(SampleReports, OomShowsTheFailureAndWhatHeldTheMemory) {
  RUN_SAMPLE_OR_SKIP(s, "oom", "FAKECUDA_CAPACITY=256M");
  const json sum = report("summary", s);
  const json& d = sum["devices"][0];
  EXPECT_EQ(d["allocations"], 4);
  EXPECT_EQ(d["peak_bytes"], 268435456);
  EXPECT_EQ(d["failed_allocations"], 1);
  ASSERT_EQ(d["failures"].size(), 1u);
  EXPECT_EQ(d["failures"][0]["api"], "cudaMalloc");
  EXPECT_EQ(d["failures"][0]["bytes"], 67108864);
  EXPECT_TRUE(top_function(d["failures"][0]["stack"]).starts_with("try_allocate"));
  EXPECT_TRUE(top_function(d["failures"][0]["stack"], 1).starts_with("allocate_until_oom"));
  EXPECT_EQ(d["live_bytes_at_end"], 0);

  const json peak = report("peak", s);
  const json& f = peak["devices"][0]["first_failure"];
  EXPECT_EQ(f["bytes"], 67108864);
  EXPECT_EQ(f["live_bytes"], 268435456);
  EXPECT_EQ(f["sites"][0]["count"], 4);
  EXPECT_EQ(report("leaks", s)["total_bytes"], 0);
  std::filesystem::remove_all(s.run);
}

TEST(SampleReports, FragmentationRightAfterThePunchedHoles) {
  // The device decides where blocks go; the exact gap figures hold when the sample says its
  // blocks came back to back, as they usually do on the simulated device.
  SampleRun s;
  for (int attempt = 0; attempt < 8; ++attempt) {
    if (!s.run.empty()) std::filesystem::remove_all(s.run);
    s = run_sample("fragmentation");
    if (s.run.empty()) GTEST_SKIP() << "samples not built (no nvcc)";
    ASSERT_EQ(s.status, 0) << s.out;
    if (s.out.find("the blocks are back to back") != std::string::npos) break;
  }
  const bool back_to_back = s.out.find("the blocks are back to back") != std::string::npos;
  // 33 allocations, then 16 frees: seq 49 is right after punch_holes().
  const json p = report("fragmentation --at-seq 49", s);
  const json& devices = p["devices"];
  ASSERT_EQ(devices.size(), 3u) << devices.dump(1);
  EXPECT_EQ(devices[0]["at"], "peak");
  EXPECT_EQ(devices[0]["live_count"], 33);
  EXPECT_EQ(devices[0]["live_bytes"], 276824064);
  const json& punched = devices[1];
  EXPECT_EQ(punched["at"], "seq");
  EXPECT_EQ(punched["live_count"], 17);
  EXPECT_EQ(punched["live_bytes"], 142606336);
  EXPECT_GE(punched["gap_count"].get<uint64_t>(), 16u);
  EXPECT_GE(punched["gap_bytes"].get<uint64_t>(), 134217728u);
  if (back_to_back) {
    EXPECT_EQ(punched["span_bytes"], 33 * 8 * kMiB);
    EXPECT_EQ(punched["gap_count"], 16);
    EXPECT_EQ(punched["gap_bytes"], 134217728);
    EXPECT_EQ(punched["largest_gap_bytes"], 8388608);
    EXPECT_DOUBLE_EQ(punched["fragmentation"].get<double>(), 0.9375);
    EXPECT_EQ(devices[0]["gap_bytes"], 0);
  }
  EXPECT_EQ(devices[2]["at"], "end");
  EXPECT_EQ(devices[2]["live_bytes"], 0);
  EXPECT_FALSE(p["remedies"].empty());
  const json peak = report("peak", s);
  EXPECT_EQ(peak["devices"][0]["peak_bytes"], 276824064);
  EXPECT_TRUE(top_function(peak["devices"][0]["sites"][0]["stack"]).starts_with("carve_blocks"));
  std::filesystem::remove_all(s.run);
}

TEST(SampleReports, PoolAsyncLeaksOneAllocationFromItsPool) {
  RUN_SAMPLE_OR_SKIP(s, "pool_async");
  const json p = report("leaks", s);
  ASSERT_EQ(p["leaks"].size(), 1u) << p.dump(1);
  EXPECT_EQ(p["leaks"][0]["api"], "cudaMallocFromPoolAsync");
  EXPECT_EQ(p["leaks"][0]["bytes"], 4194304);
  EXPECT_TRUE(top_function(p["leaks"][0]["stack"]).starts_with("keep_lookup_table"));
  const json sum = report("summary", s);
  EXPECT_EQ(sum["devices"][0]["peak_bytes"], 50331648);
  ASSERT_EQ(sum["pools"].size(), 2u);
  EXPECT_TRUE(sum["pools"][0]["pool"].is_null());  // the default pool
  EXPECT_EQ(sum["pools"][0]["high_water_bytes"], 48 * kMiB);
  EXPECT_EQ(sum["pools"][1]["high_water_bytes"], 8 * kMiB);
  EXPECT_EQ(sum["pools"][1]["live_bytes"], 4 * kMiB);
  std::filesystem::remove_all(s.run);
}

TEST(SampleReports, VmmKeepsPhysicalMappedAndReservedApart) {
  RUN_SAMPLE_OR_SKIP(s, "vmm");
  const json p = report("leaks", s);
  ASSERT_EQ(p["leaks"].size(), 1u) << p.dump(1);
  EXPECT_EQ(p["leaks"][0]["api"], "cuMemCreate");
  EXPECT_EQ(p["leaks"][0]["kind"], "physical");
  EXPECT_EQ(p["leaks"][0]["bytes"], 16777216);
  EXPECT_TRUE(top_function(p["leaks"][0]["stack"]).starts_with("map_buffer"));
  ASSERT_EQ(p["address_space"].size(), 2u);
  for (const json& a : p["address_space"]) EXPECT_EQ(a["bytes"], 16777216);
  const json sum = report("summary", s);
  const json& d = sum["devices"][0];
  EXPECT_EQ(d["peak_bytes"], 33554432);  // both handles created before the scratch one goes
  EXPECT_EQ(d["virtual_memory"]["physical_bytes"], 16777216);
  EXPECT_EQ(d["virtual_memory"]["mapped_bytes"], 16777216);
  EXPECT_EQ(d["virtual_memory"]["reserved_bytes"], 16777216);
  std::filesystem::remove_all(s.run);
}

// The driver's graph-pool figures a graph sample printed "after <when>" (print_graph_pool):
// used, reserved, used_high, reserved_high.
std::array<unsigned long long, 4> printed_graph_pool(const std::string& out,
                                                     const std::string& when) {
  std::array<unsigned long long, 4> v{};
  const std::string line =
      "graph pool " + when + ": used %llu reserved %llu used_high %llu reserved_high %llu";
  const size_t at = out.find("graph pool " + when + ":");
  EXPECT_NE(at, std::string::npos) << out;
  if (at == std::string::npos) return v;
  EXPECT_EQ(std::sscanf(out.c_str() + at, line.c_str(), &v[0], &v[1], &v[2], &v[3]), 4) << out;
  return v;
}

// samples/graph_upload.cu: the upload allocates the four nodes (the peak, 52 MiB), the
// launch runs on them, three stay, made live by cudaGraphUpload; the 16 MiB node uploaded by an
// instantiation goes with its unlaunched exec. Beside device 0 the graph pool with the figures
// the sample printed from the driver. The simulated device's used figures are the H200's
// (driver 580, gpu-check row graphupload; one graph's live nodes packed into 32 MiB granules):
// 64 MiB after the upload, 64 MiB after the uploading instantiation (12 MiB and 16 MiB in two
// graphs), 32 MiB after the trim.
TEST(SampleReports, GraphUploadShowsThePoolBesideTheDeviceNotInIt) {
  RUN_SAMPLE_OR_SKIP(s, "graph_upload");
  const auto uploaded = printed_graph_pool(s.out, "after upload");
  const auto trimmed = printed_graph_pool(s.out, "after trim");
  EXPECT_EQ(uploaded[0], 64 * kMiB);
  EXPECT_EQ(printed_graph_pool(s.out, "after instantiate-upload")[0], 64 * kMiB);
  EXPECT_EQ(trimmed[0], 32 * kMiB);
  const json p = report("leaks", s);
  EXPECT_EQ(p["total_bytes"], 3 * 4 * kMiB);
  ASSERT_EQ(p["leaks"].size(), 1u) << p["leaks"].dump(1);
  const json& leak = p["leaks"][0];
  EXPECT_EQ(leak["api"], "cudaGraphAddMemAllocNode");
  EXPECT_EQ(leak["launched"]["api"], "cudaGraphUpload");
  EXPECT_TRUE(top_function(leak["launched"]["stack"]).starts_with("uploaded_then_launched"))
      << leak["launched"].dump(1);
  // The peak: the four nodes (two call sites), made live by the upload before any launch.
  const json peak = report("peak", s)["devices"][0];
  EXPECT_EQ(peak["sites"].size(), 2u) << peak.dump(1);
  for (const json& site : peak["sites"]) EXPECT_EQ(site["launched"]["api"], "cudaGraphUpload");
  const json sum = report("summary", s);
  const json& d = sum["devices"][0];
  EXPECT_EQ(d["peak_bytes"], 52 * kMiB);
  EXPECT_EQ(d["graph_pool"]["at_peak"]["used_bytes"], uploaded[0]) << "the peak is at the upload";
  EXPECT_EQ(d["graph_pool"]["last"]["used_bytes"], trimmed[0]);
  EXPECT_EQ(d["graph_pool"]["last"]["reserved_bytes"], trimmed[1]);
  EXPECT_EQ(d["graph_pool"]["reserved_high_bytes"], trimmed[3]);
  EXPECT_EQ(sum["cuda_graphs"]["uploads"], 2);
  std::filesystem::remove_all(s.run);
}

}  // namespace
}  // namespace gmemhook::test_logs

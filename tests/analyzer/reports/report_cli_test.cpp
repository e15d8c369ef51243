// The report commands end to end (the built gmemhook binary on run directories written by the
// tests): the numbers of scenarios known by construction, the documented JSON keys, the text
// shapes, the filters, and the exit statuses.
#include <gtest/gtest.h>

#include <initializer_list>
#include <nlohmann/json.hpp>

#include "report_scenario.h"

namespace gmemhook::test_logs {
namespace {

using format::ApiId;
using nlohmann::json;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kBias = Scenario::kModuleBias;

// Every key docs/json.md promises, at every level.
void expect_keys(const json& j, std::initializer_list<const char*> keys, const std::string& where) {
  for (const char* k : keys) EXPECT_TRUE(j.contains(k)) << where << " lacks \"" << k << "\"";
}

void expect_stack(const json& stack, const std::string& where) {
  ASSERT_TRUE(stack.is_array()) << where;
  for (const json& f : stack) {
    expect_keys(f, {"function", "file", "line", "module", "address", "python"}, where + " frame");
    EXPECT_TRUE(f["address"].is_number_unsigned()) << where;
    EXPECT_TRUE(f["python"].is_boolean()) << where;
  }
}

json parse(const CliResult& r) {
  EXPECT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

// A run of two ranks. Rank 0 (pid 100) exits with status 3 after leaking; rank 1 (pid 200) is
// killed after a failed allocation.
class ReportCli : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = make_temp_dir("reports");
    Scenario a(100, "train", "0");
    const uint32_t loop = a.stack(101, {kBias + 0x1100, kBias + 0x1900});
    const uint32_t forgot = a.stack(101, {kBias + 0x1200, kBias + 0x1900});
    const uint32_t pin = a.stack(101, {kBias + 0x1300, kBias + 0x1900});
    a.alloc(101, ApiId::cudaMalloc, 0x7f0000000000, 16 * kMiB, 0, loop);   // seq 1
    a.alloc(101, ApiId::cudaMalloc, 0x7f0001000000, 16 * kMiB, 0, loop);   // seq 2
    a.alloc(101, ApiId::cudaMalloc, 0x7f0002000000, 16 * kMiB, 0, loop);   // seq 3
    a.alloc(101, ApiId::cudaMalloc, 0x7f0003000000, 4 * kMiB, 0, forgot);  // seq 4: peak 52 MiB
    a.free(101, ApiId::cudaFree, 0x7f0000000000);                          // seq 5
    a.alloc(101, ApiId::cudaMallocHost, 0x600000, kMiB, 0, pin);           // seq 6
    a.free(101, ApiId::cudaFree, 0xdead000);                               // seq 7: unknown
    rank0_ = a.write(run_, true, 3);

    Scenario b(200, "train", "1");
    const uint32_t st = b.stack(201, {kBias + 0x2100, kBias + 0x2900});
    b.alloc(201, ApiId::cudaMalloc, 0x7f1000000000, 8 * kMiB, 1, st);  // seq 1
    b.alloc(201, ApiId::cudaMalloc, 0, 64 * kMiB, 1, st, 2);           // seq 2: out of memory
    b.alloc(201, ApiId::cudaMalloc, 0x7f1000800000, 8 * kMiB, 1, st);  // seq 3
    rank1_ = b.write(run_, false);
  }
  void TearDown() override { std::filesystem::remove_all(run_); }

  std::filesystem::path run_, rank0_, rank1_;
};

TEST_F(ReportCli, SummaryJsonCoversEveryProcessWithTheDocumentedKeys) {
  const json j = parse(run_cli("summary --json " + quote(run_)));
  ASSERT_EQ(j["processes"].size(), 2u);
  for (const json& p : j["processes"]) {
    expect_keys(p, {"pid", "exe", "rank", "end", "exit_code", "devices"}, "summary process");
    for (const json& d : p["devices"]) {
      expect_keys(d,
                  {"device", "memory", "allocations", "frees", "failed_allocations", "peak_bytes",
                   "peak_time_ns", "live_bytes_at_end", "live_count_at_end"},
                  "summary device");
      for (const json& f : d["failures"]) expect_stack(f["stack"], "summary failure");
    }
  }
  const json& a = j["processes"][0];
  EXPECT_EQ(a["pid"], 100);
  EXPECT_EQ(a["exe"], "/nonexistent/train");
  EXPECT_EQ(a["rank"], 0);
  EXPECT_EQ(a["world_size"], 2);
  EXPECT_EQ(a["end"], "exited");
  EXPECT_EQ(a["exit_code"], 3);
  ASSERT_EQ(a["devices"].size(), 2u);
  const json& dev = a["devices"][0];
  EXPECT_EQ(dev["device"], 0);
  EXPECT_EQ(dev["memory"], "device");
  EXPECT_EQ(dev["allocations"], 4);
  EXPECT_EQ(dev["allocations_by_api"]["cudaMalloc"], 4);
  EXPECT_EQ(dev["frees"], 1);
  EXPECT_EQ(dev["failed_allocations"], 0);
  EXPECT_EQ(dev["peak_bytes"], 52 * kMiB);
  EXPECT_EQ(dev["peak_time_ns"], 4000000);
  EXPECT_EQ(dev["peak_seq"], 4);
  EXPECT_EQ(dev["live_bytes_at_end"], 36 * kMiB);
  EXPECT_EQ(dev["live_count_at_end"], 3);
  const json& pinned = a["devices"][1];
  EXPECT_TRUE(pinned["device"].is_null());
  EXPECT_EQ(pinned["memory"], "host-pinned");
  EXPECT_EQ(pinned["live_bytes_at_end"], kMiB);
  EXPECT_EQ(a["anomalies"]["unknown_frees"], 1);

  const json& b = j["processes"][1];
  EXPECT_EQ(b["pid"], 200);
  EXPECT_EQ(b["rank"], 1);
  EXPECT_EQ(b["end"], "unknown");
  EXPECT_TRUE(b["exit_code"].is_null());
  EXPECT_EQ(b["still_running"], false);
  ASSERT_EQ(b["devices"].size(), 1u);
  EXPECT_EQ(b["devices"][0]["device"], 1);
  EXPECT_EQ(b["devices"][0]["failed_allocations"], 1);
  EXPECT_EQ(b["devices"][0]["failures"][0]["bytes"], 64 * kMiB);
  EXPECT_EQ(b["devices"][0]["failures"][0]["api"], "cudaMalloc");
  EXPECT_EQ(b["devices"][0]["failures"][0]["stack"][0]["address"], kBias + 0x2100);
  EXPECT_EQ(b["warnings"][0], "process 200 ended abruptly after record 3 (killed or crashed)");
}

TEST_F(ReportCli, SummaryTextLabelsEachProcessAndEndsWithAHint) {
  const CliResult r = run_cli("summary " + quote(run_));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("process 100 train (rank 0 of 2): exited with status 3"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("process 200 train (rank 1 of 2): ended abruptly after record 3 "
                       "(killed or crashed)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("peak          52.0 MiB (54525952 bytes) at 4.00 ms (seq 4)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("live at end   16.0 MiB (16777216 bytes) in 2 allocations: live at the "
                       "moment it died"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("note: 1 free of an address that was not live"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cudaMalloc of 64.0 MiB (67108864 bytes) at 2.00 ms (seq 2) returned "
                       "cudaErrorMemoryAllocation (2), from:\n        train+0x2100\n"
                       "          #0 train+0x2100\n"),
            std::string::npos)
      << r.out;
}

TEST_F(ReportCli, LeaksJsonGroupsByStackLargestFirst) {
  const json j = parse(run_cli("leaks --json " + quote(run_)));
  ASSERT_EQ(j["processes"].size(), 2u);
  for (const json& p : j["processes"]) {
    expect_keys(p, {"pid", "total_bytes", "total_count", "leaks"}, "leaks process");
    for (const json& l : p["leaks"]) {
      expect_keys(l, {"device", "memory", "api", "bytes", "count", "stack"}, "leak");
      expect_stack(l["stack"], "leak");
    }
  }
  const json& a = j["processes"][0];
  EXPECT_EQ(a["at"], "end");
  EXPECT_EQ(a["total_bytes"], 36 * kMiB + kMiB);
  EXPECT_EQ(a["total_count"], 4);
  ASSERT_EQ(a["leaks"].size(), 3u);
  EXPECT_EQ(a["leaks"][0]["bytes"], 32 * kMiB);
  EXPECT_EQ(a["leaks"][0]["count"], 2);
  EXPECT_EQ(a["leaks"][0]["api"], "cudaMalloc");
  EXPECT_EQ(a["leaks"][0]["device"], 0);
  EXPECT_EQ(a["leaks"][0]["memory"], "device");
  const json& frame = a["leaks"][0]["stack"][0];
  EXPECT_EQ(frame["address"], kBias + 0x1100);
  EXPECT_EQ(frame["offset"], 0x1100);
  EXPECT_EQ(frame["module"], "/nonexistent/train");
  EXPECT_TRUE(frame["function"].is_null());  // the binary is not there: module+offset only
  EXPECT_EQ(frame["python"], false);
  EXPECT_EQ(a["leaks"][1]["bytes"], 4 * kMiB);
  EXPECT_EQ(a["leaks"][1]["stack"][0]["address"], kBias + 0x1200);
  EXPECT_EQ(a["leaks"][2]["memory"], "host-pinned");
  EXPECT_TRUE(a["leaks"][2]["device"].is_null());
  EXPECT_EQ(a["leaks"][2]["api"], "cudaMallocHost");
  EXPECT_EQ(a["by_memory"]["device"]["bytes"], 36 * kMiB);

  const json& b = j["processes"][1];
  EXPECT_EQ(b["end"], "unknown");
  EXPECT_EQ(b["total_bytes"], 16 * kMiB);
  EXPECT_EQ(b["leaks"][0]["count"], 2);
}

TEST_F(ReportCli, LeaksTextHasLeakSanitizersShape) {
  const CliResult r = run_cli("leaks " + quote(run_));
  ASSERT_EQ(r.status, 0) << r.err;
  // Headed by the user frame (here the module+offset of a binary that is not there).
  EXPECT_NE(r.out.find("\nLeaked 32.0 MiB (33554432 bytes) in 2 allocations (cudaMalloc, "
                       "device 0) allocated from:\n    train+0x1100\n      #0 train+0x1100\n"
                       "      #1 train+0x1900\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\nLeaked 1.0 MiB (1048576 bytes) in 1 allocation (cudaMallocHost, "
                       "pinned host memory) allocated from:\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("SUMMARY: gmemhook: leaked 36.0 MiB (37748736 bytes) of device memory in "
                       "3 allocations; 1.0 MiB (1048576 bytes) of pinned host memory in 1 "
                       "allocation.\n"),
            std::string::npos)
      << r.out;
  // The killed rank's memory was live when it died, not leaked at exit.
  EXPECT_NE(r.out.find("\nLive when it died: 16.0 MiB (16777216 bytes) in 2 allocations "
                       "(cudaMalloc, device 1) allocated from:\n"),
            std::string::npos)
      << r.out;
  // Symbolizing against a binary that is not there warns once, on stderr.
  EXPECT_NE(r.err.find("/nonexistent/train"), std::string::npos) << r.err;
}

TEST_F(ReportCli, LeaksAtAMoment) {
  json j = parse(run_cli("leaks --json --pid 100 --at 0.0025 " + quote(run_)));
  ASSERT_EQ(j["processes"].size(), 1u);
  EXPECT_EQ(j["processes"][0]["at"], "time");
  EXPECT_EQ(j["processes"][0]["at_seq"], 2);
  EXPECT_EQ(j["processes"][0]["total_bytes"], 32 * kMiB);

  j = parse(run_cli("leaks --json --pid 100 --at-seq 4 " + quote(run_)));
  EXPECT_EQ(j["processes"][0]["at"], "seq");
  EXPECT_EQ(j["processes"][0]["total_bytes"], 52 * kMiB);
  EXPECT_EQ(j["processes"][0]["leaks"][0]["count"], 3);

  const CliResult r = run_cli("leaks --pid 100 --at 0.0025 " + quote(run_));
  EXPECT_NE(r.out.find("\nLive at 2.50 ms: 32.0 MiB (33554432 bytes) in 2 allocations"),
            std::string::npos)
      << r.out;
}

TEST_F(ReportCli, PeakShowsSitesWithTheirShareAndTheFirstFailure) {
  const json j = parse(run_cli("peak --json " + quote(run_)));
  for (const json& p : j["processes"]) {
    expect_keys(p, {"pid", "devices"}, "peak process");
    for (const json& d : p["devices"]) {
      expect_keys(d, {"device", "peak_bytes", "peak_time_ns", "sites"}, "peak device");
      for (const json& s : d["sites"]) {
        expect_keys(s, {"bytes", "count", "stack"}, "peak site");
        expect_stack(s["stack"], "peak site");
      }
    }
  }
  const json& d = j["processes"][0]["devices"][0];
  EXPECT_EQ(d["device"], 0);
  EXPECT_EQ(d["peak_bytes"], 52 * kMiB);
  EXPECT_EQ(d["peak_time_ns"], 4000000);
  ASSERT_EQ(d["sites"].size(), 2u);
  EXPECT_EQ(d["sites"][0]["bytes"], 48 * kMiB);
  EXPECT_EQ(d["sites"][0]["count"], 3);
  EXPECT_DOUBLE_EQ(d["sites"][0]["share"].get<double>(), 48.0 / 52.0);
  EXPECT_EQ(d["sites"][1]["bytes"], 4 * kMiB);
  EXPECT_TRUE(d["first_failure"].is_null());

  const json& k = j["processes"][1]["devices"][0];
  EXPECT_EQ(k["device"], 1);
  EXPECT_EQ(k["peak_bytes"], 16 * kMiB);
  EXPECT_EQ(k["peak_seq"], 3);
  EXPECT_EQ(k["first_failure"]["bytes"], 64 * kMiB);
  EXPECT_EQ(k["first_failure"]["seq"], 2);
  EXPECT_EQ(k["first_failure"]["live_bytes"], 8 * kMiB);
  EXPECT_EQ(k["first_failure"]["sites"][0]["count"], 1);

  const CliResult r = run_cli("peak " + quote(run_));
  EXPECT_NE(r.out.find("device 0: peak 52.0 MiB (54525952 bytes) at 4.00 ms (seq 4) in 4 "
                       "allocations\nPEAK MEMORY CONSUMERS\n  48.0 MiB (50331648 bytes)  92.3%"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("WHAT HELD THE MEMORY WHEN IT RAN OUT: 8.0 MiB (8388608 bytes) in 1 "
                       "allocation\n"),
            std::string::npos)
      << r.out;
}

// --api keeps only the named entry points (e.g. torch's allocator, to compare with its own
// counters); --memory keeps one kind of memory.
TEST_F(ReportCli, FiltersByApiAndMemory) {
  json j = parse(run_cli("leaks --json --pid 100 --memory device " + quote(run_)));
  EXPECT_EQ(j["processes"][0]["total_bytes"], 36 * kMiB);
  j = parse(run_cli("leaks --json --pid 100 --api cudaMallocHost,cudaFreeHost " + quote(run_)));
  EXPECT_EQ(j["processes"][0]["total_bytes"], kMiB);
  j = parse(run_cli("summary --json --pid 100 --api cudaMallocHost " + quote(run_)));
  ASSERT_EQ(j["processes"][0]["devices"].size(), 1u);
  EXPECT_EQ(j["processes"][0]["devices"][0]["memory"], "host-pinned");
  const CliResult bad = run_cli("leaks --api cudaMallocc " + quote(run_));
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("unknown entry point 'cudaMallocc'"), std::string::npos) << bad.err;
}

TEST_F(ReportCli, FiltersTopAndDepth) {
  json j = parse(run_cli("summary --json --pid 200 " + quote(run_)));
  ASSERT_EQ(j["processes"].size(), 1u);
  EXPECT_EQ(j["processes"][0]["pid"], 200);

  j = parse(run_cli("summary --json --device 1 " + quote(run_)));
  EXPECT_TRUE(j["processes"][0]["devices"].empty());  // rank 0 used device 0 and pinned memory
  EXPECT_EQ(j["processes"][1]["devices"].size(), 1u);

  j = parse(run_cli("leaks --json --pid 100 --top 1 --depth 1 " + quote(run_)));
  ASSERT_EQ(j["processes"][0]["leaks"].size(), 1u);
  EXPECT_EQ(j["processes"][0]["leaks"][0]["stack"].size(), 1u);
  EXPECT_EQ(j["processes"][0]["total_bytes"], 37 * kMiB);  // totals ignore --top

  const CliResult text = run_cli("leaks --pid 100 --top 1 --depth 1 " + quote(run_));
  EXPECT_NE(text.out.find("    train+0x1100\n      #0 train+0x1100\n"
                          "      ... 1 more frame (--depth 0 shows all)\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(
      text.out.find("... and 5.0 MiB (5242880 bytes) more in 2 allocations (--top 0 shows all)"),
      std::string::npos)
      << text.out;

  const CliResult none = run_cli("summary --pid 999 " + quote(run_));
  EXPECT_EQ(none.status, 1);
  EXPECT_EQ(none.err, "gmemhook: no process with pid 999 in " + run_.string() + "\n");
}

TEST_F(ReportCli, EveryTextReportEndsWithAHint) {
  for (const char* report : {"summary", "leaks", "peak", "fragmentation"}) {
    const CliResult r = run_cli(std::string(report) + " " + quote(run_));
    ASSERT_EQ(r.status, 0) << report << r.err;
    ASSERT_TRUE(r.out.ends_with("\n")) << report;
    const size_t last = r.out.rfind('\n', r.out.size() - 2);
    const std::string line = r.out.substr(last + 1);
    // gmemhook as it was invoked (here by its full path), so the hint can be pasted.
    EXPECT_TRUE(line.starts_with(std::string("hint: ") + GMEMHOOK_CLI + " "))
        << report << ": " << line;
    EXPECT_NE(line.find(run_.string()), std::string::npos) << line;
  }
}

// --native writes the stack as recorded, with no heading line; JSON marks the user frame and
// each frame's owner.
TEST_F(ReportCli, NativeFlagAndJsonUserFrame) {
  const CliResult r = run_cli("leaks --native --pid 100 " + quote(run_));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("device 0) allocated from:\n    #0 train+0x1100\n    #1 train+0x1900\n"),
            std::string::npos)
      << r.out;
  const json j = parse(run_cli("leaks --json --pid 100 " + quote(run_)));
  const json& leak = j["processes"][0]["leaks"][0];
  EXPECT_EQ(leak["user_frame"], 0);
  EXPECT_EQ(leak["stack"][0]["owner"], "user");
}

// One row per line of user code: the two stacks of rank 0 reaching different offsets stay two
// rows, and --group-by stack keeps the old one-stack-per-row listing.
TEST_F(ReportCli, GroupByChoosesWhatARowIs) {
  for (const char* by : {"line", "function", "stack"}) {
    const CliResult r = run_cli(std::string("peak --pid 100 --group-by ") + by + " " + quote(run_));
    ASSERT_EQ(r.status, 0) << by << r.err;
    EXPECT_NE(r.out.find("  48.0 MiB (50331648 bytes)  92.3%  in 3 allocations (cudaMalloc) "
                         "from:\n      train+0x1100\n"),
              std::string::npos)
        << by << r.out;
  }
  const CliResult bad = run_cli("peak --group-by file " + quote(run_));
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--group-by"), std::string::npos) << bad.err;
}

// An option a report does not use is a usage error that says so, never ignored.
TEST_F(ReportCli, ReportsRejectOptionsTheyDoNotUse) {
  const struct {
    const char* args;
    const char* says;
  } cases[] = {
      {"summary --top 3", "--top: summary lists no sites; --top is an option of leaks, peak"},
      {"summary --group-by stack", "--group-by: summary groups no sites"},
      {"summary --at 1",
       "--at: summary shows no live set at a chosen moment; --at is an option "
       "of leaks, fragmentation"},
      {"peak --at-seq 3", "--at-seq: peak shows no live set at a chosen moment"},
      {"peak --all-moments",
       "--all-moments: peak has no moments to choose from; --all-moments "
       "is an option of fragmentation"},
      {"fragmentation --top 1", "--top: fragmentation lists no sites"},
      {"fragmentation --depth 2",
       "--depth: fragmentation writes no stacks; --depth is an option "
       "of summary, leaks, peak"},
      {"fragmentation --native", "--native: fragmentation writes no stacks"},
      {"fragmentation --group-by line", "--group-by: fragmentation groups no sites"},
  };
  for (const auto& c : cases) {
    const CliResult r = run_cli(std::string(c.args) + " " + quote(run_));
    EXPECT_EQ(r.status, 2) << c.args;
    EXPECT_EQ(r.out, "") << c.args;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << ": " << r.err;
  }
  // And the reports that use them still take them.
  for (const char* args :
       {"summary --depth 2 --native", "leaks --top 1 --at-seq 3 --depth 1",
        "peak --top 1 --group-by function", "fragmentation --all-moments --at 0"})
    EXPECT_EQ(run_cli(std::string(args) + " " + quote(run_)).status, 0) << args;
}

TEST_F(ReportCli, ADeviceTheRunNeverUsedIsAnError) {
  const CliResult r = run_cli("leaks --device 7 " + quote(run_));
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("gmemhook: device 7 was never used in " + run_.string() +
                       " (devices used: 0, 1)\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(run_cli("summary --device 1 " + quote(run_)).status, 0);
}

TEST_F(ReportCli, WarningsComeOnceAfterTheReport) {
  const CliResult r = run_cli("leaks " + quote(run_));
  ASSERT_EQ(r.status, 0) << r.err;
  // Both ranks ran /nonexistent/train: one warning for the two, not one per process.
  const size_t first = r.err.find("/nonexistent/train");
  ASSERT_NE(first, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("/nonexistent/train", first + 1), std::string::npos) << r.err;
}

TEST_F(ReportCli, AProcessDirectoryAloneIsARun) {
  const json j = parse(run_cli("leaks --json " + quote(rank1_)));
  ASSERT_EQ(j["processes"].size(), 1u);
  EXPECT_EQ(j["processes"][0]["pid"], 200);
}

// Event times from the kernel's tick (GMEMHOOK_TIME=coarse, 4 ms steps) read in whole ms: the
// digits below a step are its noise. A log that gives no step (older ones) keeps every digit.
TEST(ReportCliTimes, TimesShowNoFinerThanTheLogsTimeStep) {
  for (const uint64_t step : {uint64_t{4000000}, uint64_t{0}}) {
    auto run = make_temp_dir("reports-time-step");
    Scenario s(310, "ticks");
    s.set_time_step_ns(step);
    s.alloc(311, ApiId::cudaMalloc, 0x7f0000000000, 8 * kMiB);  // seq 1 at 1 ms
    s.set_time_ms(592);
    s.alloc(311, ApiId::cudaMalloc, 0x7f0001000000, 8 * kMiB);  // seq 2: the peak
    s.set_time_ms(600);
    s.free(311, ApiId::cudaFree, 0x7f0000000000);
    s.write(run, false);  // killed: the log ends at its last event, a time in the same steps
    const CliResult text = run_cli("summary " + quote(run));
    ASSERT_EQ(text.status, 0) << text.err;
    const char* peak = step ? "(16777216 bytes) at 592 ms (seq 2)" : "(16777216 bytes) at 592.00 ms (seq 2)";
    EXPECT_NE(text.out.find(peak), std::string::npos) << text.out;
    const char* axis = step ? "| 1 ms .. 600 ms, top" : "| 1.00 ms .. 600.00 ms, top";
    EXPECT_NE(text.out.find(axis), std::string::npos) << text.out;
    const json j = parse(run_cli("summary --json " + quote(run)));
    EXPECT_EQ(j["processes"][0]["time_step_ns"], step ? step : 1) << "1: each event its own time";
    EXPECT_EQ(j["processes"][0]["devices"][0]["peak_time_ns"], 592000000) << "JSON keeps the ns";
  }
}

TEST(ReportCliFragmentation, FiguresAtThePeakAndAtTheEnd) {
  auto run = make_temp_dir("reports-frag");
  Scenario s(300, "frag");
  const uint64_t base = 0x7f0000000000;
  for (uint64_t i = 0; i < 9; ++i) s.alloc(301, ApiId::cudaMalloc, base + i * 8 * kMiB, 8 * kMiB);
  for (uint64_t i = 1; i < 9; i += 2) s.free(301, ApiId::cudaFree, base + i * 8 * kMiB);
  s.write(run, true);
  const json j = parse(run_cli("fragmentation --json " + quote(run)));
  const json& devices = j["processes"][0]["devices"];
  ASSERT_EQ(devices.size(), 2u);
  for (const json& d : devices)
    expect_keys(d,
                {"device", "at", "live_bytes", "live_count", "span_bytes", "gap_bytes",
                 "largest_gap_bytes", "fragmentation"},
                "fragmentation device");
  EXPECT_EQ(devices[0]["at"], "peak");
  EXPECT_EQ(devices[0]["seq"], 9);
  EXPECT_EQ(devices[0]["live_count"], 9);
  EXPECT_EQ(devices[0]["span_bytes"], 72 * kMiB);
  EXPECT_EQ(devices[0]["gap_bytes"], 0);
  EXPECT_EQ(devices[0]["fragmentation"], 0);
  EXPECT_EQ(devices[1]["at"], "end");
  EXPECT_EQ(devices[1]["live_count"], 5);
  EXPECT_EQ(devices[1]["live_bytes"], 40 * kMiB);
  EXPECT_EQ(devices[1]["span_bytes"], 72 * kMiB);
  EXPECT_EQ(devices[1]["gap_bytes"], 32 * kMiB);
  EXPECT_EQ(devices[1]["largest_gap_bytes"], 8 * kMiB);
  EXPECT_DOUBLE_EQ(devices[1]["fragmentation"].get<double>(), 0.75);

  const json at = parse(run_cli("fragmentation --json --at-seq 11 " + quote(run)));
  ASSERT_EQ(at["processes"][0]["devices"].size(), 3u);
  EXPECT_EQ(at["processes"][0]["devices"][1]["at"], "seq");
  EXPECT_EQ(at["processes"][0]["devices"][1]["live_count"], 7);
  EXPECT_EQ(at["processes"][0]["devices"][1]["gap_bytes"], 16 * kMiB);
  EXPECT_FALSE(at["processes"][0]["remedies"].empty());

  // Text shows the worst moment by default, and says it is: here the end, with four holes.
  const CliResult worst = run_cli("fragmentation " + quote(run));
  EXPECT_NE(worst.out.find("device 0 at exit, 13.00 ms (seq 13); the worst moment: the most free "
                           "space in holes smaller than the largest (--all-moments shows the "
                           "others):\n"),
            std::string::npos)
      << worst.out;
  EXPECT_EQ(worst.out.find("device 0 at the peak"), std::string::npos) << worst.out;
  EXPECT_NE(run_cli("fragmentation --all-moments " + quote(run)).out.find("device 0 at the peak"),
            std::string::npos);

  const CliResult text = run_cli("fragmentation --at-seq 11 " + quote(run));
  EXPECT_NE(text.out.find("  largest gap    8.0 MiB"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("\nremedy: device 0: free space is scattered"), std::string::npos)
      << text.out;
  std::filesystem::remove_all(run);
}

// JAX's default: one allocation of most of the GPU, its buffers inside where no hook sees them.
// The reports say so and how to see the buffers.
TEST(ReportCliFrameworkPool, JaxPreallocationIsSaidForWhatItIs) {
  auto run = make_temp_dir("reports-jax");
  Scenario s(500, "python3");
  s.add_library("/venv/site-packages/jaxlib/xla_extension.so");
  s.create(501, 0x1000, 96ull << 30, 0);  // 75% of a 128 GiB device: one cuMemCreate
  s.write(run, true);
  for (const char* report : {"summary", "peak"}) {
    const CliResult r = run_cli(std::string(report) + " " + quote(run));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("this is JAX's preallocated pool (1 allocation holding 96.0 GiB at the "
                         "peak)"),
              std::string::npos)
        << report << r.out;
    EXPECT_NE(r.out.find("XLA_PYTHON_CLIENT_ALLOCATOR=platform (gmemhook run --jax-buffers sets "
                         "it), or with XLA_PYTHON_CLIENT_PREALLOCATE=false"),
              std::string::npos)
        << report << r.out;
  }
  std::filesystem::remove_all(run);

  // Without JAX loaded, a large allocation is the program's own.
  auto plain = make_temp_dir("reports-nojax");
  Scenario p(501, "app");
  p.create(502, 0x1000, 96ull << 30, 0);
  p.write(plain, true);
  EXPECT_EQ(run_cli("summary " + quote(plain)).out.find("JAX"), std::string::npos);
  std::filesystem::remove_all(plain);
}

TEST(ReportCliPython, PythonFramesAreFramesWithPythonTrue) {
  auto run = make_temp_dir("reports-python");
  Scenario s(400, "python3");
  analysis::PyCode code;
  code.py_version = 0x030c;
  code.filename = "/work/train.py";
  code.name = code.qualname = "train_step";
  code.first_line = 40;
  const uint32_t id = s.py_code(401, code);
  const uint32_t st = s.stack(401, {kBias + 0x3100}, {{id, 0, true}});
  s.alloc(401, ApiId::cudaMalloc, 0x7f0000000000, kMiB, 0, st);
  s.write(run, true);
  const json j = parse(run_cli("leaks --json " + quote(run)));
  const json& stack = j["processes"][0]["leaks"][0]["stack"];
  expect_stack(stack, "python leak");
  // The native frame cannot be symbolized here (no binary), so the Python frames follow it.
  ASSERT_EQ(stack.size(), 2u) << stack.dump(1);
  EXPECT_EQ(stack[0]["python"], false);
  EXPECT_EQ(stack[1]["python"], true);
  EXPECT_EQ(stack[1]["function"], "train_step");
  EXPECT_EQ(stack[1]["file"], "/work/train.py");
  EXPECT_TRUE(stack[1]["module"].is_null());
  // The Python line heads the site; the Python frames come before the native ones.
  const CliResult text = run_cli("leaks " + quote(run));
  // (The code object has no line table here: file and function only.)
  EXPECT_NE(text.out.find("allocated from:\n    /work/train.py in train_step\n      python:\n"
                          "        #0 train_step /work/train.py [python]\n      native:\n"
                          "        #0 python3+0x3100\n"),
            std::string::npos)
      << text.out;
  std::filesystem::remove_all(run);
}

TEST(ReportCliErrors, DamagedLogsExitWith2NamingFileAndOffset) {
  auto run = make_temp_dir("reports-damage");
  ProcessLogs logs = small_two_thread_process(true);
  logs.threads[1].second[64] = 0x42;  // the first record header of thread 4244
  const auto dir = write_process_dir(run, logs);
  for (const char* report : {"summary", "leaks", "peak", "fragmentation"}) {
    for (const char* json_flag : {"", " --json"}) {
      const CliResult r = run_cli(std::string(report) + json_flag + " " + quote(run));
      EXPECT_EQ(r.status, 2) << report;
      EXPECT_EQ(r.err, "gmemhook: " + (dir / "thread.4244.gmh").string() +
                           ": offset 64: expected a record header, found unknown record type "
                           "0x42\n")
          << report;
      if (*json_flag) {
        EXPECT_EQ(r.out, "") << report;  // never half a JSON document
      }
    }
  }
  const CliResult missing = run_cli("leaks /nonexistent/gmemhook-run");
  EXPECT_EQ(missing.status, 2);
  std::filesystem::remove_all(run);
}

TEST(ReportCliErrors, ATornTailIsAWarningAndEverythingBeforeItIsUsed) {
  auto run = make_temp_dir("reports-torn");
  ProcessLogs logs = small_two_thread_process(true);
  logs.threads[0].second.resize(logs.threads[0].second.size() - 3);  // cuts seq 5, the free
  write_process_dir(run, logs);
  const CliResult r = run_cli("leaks --json " + quote(run));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("truncated tail"), std::string::npos) << r.err;
  const json j = json::parse(r.out);
  // Without its free, the 1 MiB cudaMalloc of seq 1 is still live; 4 KiB async too.
  EXPECT_EQ(j["processes"][0]["total_bytes"], (1 << 20) + 4096);
  bool warned = false;
  for (const json& w : j["processes"][0]["warnings"])
    warned |= w.get<std::string>().find("truncated tail") != std::string::npos;
  EXPECT_TRUE(warned);
  std::filesystem::remove_all(run);
}

// Usage errors exit 2, as cmp's and diff's do (1 is "the report could not be made").
TEST(ReportCliErrors, UsageErrorsExitWith2) {
  EXPECT_EQ(run_cli("leaks").status, 2);
  EXPECT_EQ(run_cli("leaks --at 1 --at-seq 3 /tmp").status, 2);
  EXPECT_EQ(run_cli("peak --top -1 /tmp").status, 2);
  // Bad numbers say what is expected, not the range of a double.
  const CliResult top = run_cli("peak --top -1 /tmp");
  EXPECT_NE(top.err.find("expected a count of rows (0 = all), not '-1'"), std::string::npos)
      << top.err;
  EXPECT_EQ(top.err.find("e+308"), std::string::npos) << top.err;
  const CliResult device = run_cli("leaks --device gpu0 /tmp");
  EXPECT_NE(device.err.find("expected a device number (0, 1, ...), not 'gpu0'"), std::string::npos)
      << device.err;
  // A mistyped command is named, with the nearest one.
  const CliResult leak = run_cli("leak /tmp");
  EXPECT_EQ(leak.status, 2);
  EXPECT_NE(leak.err.find("gmemhook: unknown command 'leak'; did you mean 'leaks'?"),
            std::string::npos)
      << leak.err;
  EXPECT_EQ(run_cli("frobnicate /tmp").err.find("did you mean"), std::string::npos);
  const CliResult help = run_cli("--help");
  for (const char* report : {"summary", "leaks", "peak", "fragmentation"})
    EXPECT_NE(help.out.find(report), std::string::npos);
}

}  // namespace
}  // namespace gmemhook::test_logs

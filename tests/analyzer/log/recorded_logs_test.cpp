// Logs of every format version, recorded by the recorder of its day (tests/data/README.md): the
// reader and the reports must still find what tests/data/recorded_program.cpp did. The expected
// numbers come from that program's source, not from a report's output.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "analyzer/log/event_info.h"
#include "analyzer/log/reader.h"
#include "report_scenario.h"

#ifndef GMEMHOOK_TEST_DATA_DIR
#error "GMEMHOOK_TEST_DATA_DIR (tests/data in the source tree) must be defined by CMake"
#endif

namespace gmemhook::test_logs {
namespace {

using nlohmann::json;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;

// recorded_program.cpp, call by call (seq order: the worker runs between the main thread's
// second and third call, which waits for it).
constexpr uint64_t kA = 1 * kMiB;          // cudaMalloc, freed by cudaFree
constexpr uint64_t kB = 3 * kMiB;          // cudaMalloc, never freed
constexpr uint64_t kC = 2 * kMiB;          // cuMemAlloc_v2 on the worker, freed there
constexpr uint64_t kD = 512 * kKiB;        // cuMemAlloc_v2 on the worker, never freed
constexpr uint64_t kTooBig = 2048 * kMiB;  // cudaMalloc that fails: the device has 1 GiB
constexpr uint64_t kE = 256 * kKiB;        // cudaMalloc on device 1, never freed
constexpr uint64_t kMainThreadEvents = 5;  // a, b, free a, the failure, e
constexpr uint64_t kWorkerEvents = 3;      // c, d, free c
constexpr int kCudaErrorMemoryAllocation = 2;

// The first version whose recorder sampled NVML, where the simulated NVML was there to sample.
constexpr uint16_t kFirstNvmlVersion = 4;

struct RecordedLog {
  uint16_t version;
  const char* name;  // tests/data/<name>.tar.gz
  // The header gives the events' time step (format.h, FileHeader::time_step_ns); the recorder
  // ran with its default, coarse times.
  bool time_step = false;
};

void PrintTo(const RecordedLog& log, std::ostream* out) { *out << log.name; }

const RecordedLog kRecordedLogs[] = {
    {1, "format-v1"},       {2, "format-v2"}, {3, "format-v3"}, {4, "format-v4"},
    {5, "format-v5"},       {6, "format-v6"}, {7, "format-v7"}, {8, "format-v8-no-time-step"},
    {8, "format-v8", true},
};

// A version bump needs its recorded log too (scripts/record-fixtures.sh).
TEST(RecordedLogsList, EveryReadableVersionHasARecordedLog) {
  for (uint16_t v = format::kOldestReadableVersion; v <= format::kFormatVersion; ++v) {
    bool found = false;
    for (const RecordedLog& log : kRecordedLogs) found = found || log.version == v;
    EXPECT_TRUE(found) << "no recorded log of format version " << v;
  }
}

class RecordedLogs : public ::testing::TestWithParam<RecordedLog> {
 protected:
  void SetUp() override {
    run_ = make_temp_dir(std::string("recorded-") + GetParam().name);
    const auto archive =
        std::filesystem::path(GMEMHOOK_TEST_DATA_DIR) / (std::string(GetParam().name) + ".tar.gz");
    const std::string cmd = "tar -xzf " + quote(archive) + " -C " + quote(run_);
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    process_dirs_ = std::distance(std::filesystem::directory_iterator(run_),
                                  std::filesystem::directory_iterator());
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(run_);
  }

  json report(const std::string& command) {
    const CliResult r = run_cli(command + " " + quote(run_) + " --json");
    EXPECT_EQ(r.status, 0) << r.err;
    const json doc = json::parse(r.out);
    EXPECT_EQ(doc["processes"].size(), 1u);
    return doc["processes"][0];
  }

  std::filesystem::path process_dir() const {
    return std::filesystem::directory_iterator(run_)->path();
  }

  std::filesystem::path run_;
  std::ptrdiff_t process_dirs_ = 0;
};

// One device entry of a report's `devices`, by device and kind of memory.
const json& device_entry(const json& process, int device) {
  for (const json& d : process["devices"])
    if (d["device"] == device && d["memory"] == "device") return d;
  ADD_FAILURE() << "no entry for device " << device;
  static const json none;
  return none;
}

TEST_P(RecordedLogs, EveryFileIsOfItsVersionAndReadWhole) {
  ASSERT_EQ(process_dirs_, 1);
  analysis::ProcessReader reader = analysis::ProcessReader::open(process_dir());
  const uint16_t version = GetParam().version;
  EXPECT_EQ(reader.process().header.version, version);
  EXPECT_EQ(reader.process().header.time_step_ns > 1, GetParam().time_step);
  ASSERT_EQ(reader.thread_count(), 2u);
  for (size_t i = 0; i < reader.thread_count(); ++i)
    EXPECT_EQ(reader.thread(i).header().version, version) << "thread file " << i;
  EXPECT_EQ(reader.info().argv.size(), 1u);
  EXPECT_TRUE(reader.info().exe.ends_with("/recorded_program")) << reader.info().exe;

  // The calls as the reader decodes them, in seq order: entry point, bytes, device, result.
  using Call = std::tuple<std::string, uint64_t, int32_t, uint32_t>;
  std::vector<Call> calls;
  std::vector<uint64_t> addresses;
  std::map<uint64_t, uint64_t> events_by_tid;
  uint64_t last_seq = 0;
  reader.for_each_event([&](const format::Event& e, const analysis::ThreadFileReader& t) {
    EXPECT_GT(e.seq, last_seq);
    last_seq = e.seq;
    const bool is_free = e.f.has(format::kIsFree);
    calls.emplace_back(analysis::api_name(e.api), is_free ? 0 : e.f.size, is_free ? -1 : e.f.device,
                       e.result);
    addresses.push_back(e.f.address);
    events_by_tid[t.tid()]++;
  });
  const std::vector<Call> expected = {
      {"cudaMalloc", kA, 0, 0},
      {"cudaMalloc", kB, 0, 0},
      {"cuMemAlloc_v2", kC, 0, 0},
      {"cuMemAlloc_v2", kD, 0, 0},
      {"cuMemFree_v2", 0, -1, 0},
      {"cudaFree", 0, -1, 0},
      {"cudaMalloc", kTooBig, 0, kCudaErrorMemoryAllocation},
      {"cudaMalloc", kE, 1, 0},
  };
  EXPECT_EQ(calls, expected);
  if (addresses.size() == expected.size()) {
    EXPECT_EQ(addresses[4], addresses[2]);  // cuMemFree_v2(c)
    EXPECT_EQ(addresses[5], addresses[0]);  // cudaFree(a)
    EXPECT_EQ(addresses[6], 0u);            // the failed cudaMalloc
    const std::set<uint64_t> made = {addresses[0], addresses[1], addresses[2], addresses[3],
                                     addresses[7]};
    EXPECT_EQ(made.size(), 5u);
    EXPECT_FALSE(made.contains(0));
  }
  EXPECT_EQ(reader.events_read(), kMainThreadEvents + kWorkerEvents);
  EXPECT_EQ(reader.last_seq(), kMainThreadEvents + kWorkerEvents);
  EXPECT_FALSE(reader.first_gap_after().has_value());
  EXPECT_EQ(reader.damaged_chunks(), 0u);
  EXPECT_EQ(reader.undecoded_events(), 0u);
  ASSERT_EQ(events_by_tid.size(), 2u);
  EXPECT_TRUE(events_by_tid.contains(reader.info().pid));  // the main thread's tid is the pid
  for (const auto& [tid, count] : events_by_tid)
    EXPECT_EQ(count, tid == reader.info().pid ? kMainThreadEvents : kWorkerEvents) << tid;

  ASSERT_TRUE(reader.end().has_value());
  EXPECT_EQ(reader.end()->how, format::EndHow::Exit);
  EXPECT_EQ(reader.end()->status, 0);
  EXPECT_EQ(reader.end()->last_seq, kMainThreadEvents + kWorkerEvents);
  EXPECT_EQ(reader.nvml_samples().empty(), version < kFirstNvmlVersion);
}

TEST_P(RecordedLogs, SummaryCountsTheProgramsCalls) {
  const json p = report("summary");
  EXPECT_EQ(p["end"], "exited");
  EXPECT_EQ(p["exit_code"], 0);
  EXPECT_EQ(p["threads"], 2);
  EXPECT_EQ(p["events"], kMainThreadEvents + kWorkerEvents);
  if (GetParam().time_step) {
    EXPECT_GT(p["time_step_ns"], 1);
  } else {
    EXPECT_EQ(p["time_step_ns"], 1);  // each event's own time, as older logs are read
  }
  ASSERT_EQ(p["devices"].size(), 2u);

  const json& d0 = device_entry(p, 0);
  EXPECT_EQ(d0["allocations"], 4);
  EXPECT_EQ(d0["frees"], 2);
  EXPECT_EQ(d0["allocations_by_api"], json({{"cudaMalloc", 2}, {"cuMemAlloc_v2", 2}}));
  EXPECT_EQ(d0["frees_by_api"], json({{"cudaFree", 1}, {"cuMemFree_v2", 1}}));
  EXPECT_EQ(d0["allocated_bytes"], kA + kB + kC + kD);
  EXPECT_EQ(d0["freed_bytes"], kA + kC);
  EXPECT_EQ(d0["peak_bytes"], kA + kB + kC + kD);  // the worker's second allocation
  EXPECT_EQ(d0["peak_seq"], 4);
  EXPECT_EQ(d0["live_bytes_at_end"], kB + kD);
  EXPECT_EQ(d0["live_count_at_end"], 2);
  EXPECT_EQ(d0["failed_allocations"], 1);
  ASSERT_EQ(d0["failures"].size(), 1u);
  EXPECT_EQ(d0["failures"][0]["api"], "cudaMalloc");
  EXPECT_EQ(d0["failures"][0]["bytes"], kTooBig);
  EXPECT_EQ(d0["failures"][0]["result"], kCudaErrorMemoryAllocation);
  EXPECT_EQ(d0["failures"][0]["seq"], 7);

  const json& d1 = device_entry(p, 1);
  EXPECT_EQ(d1["allocations"], 1);
  EXPECT_EQ(d1["frees"], 0);
  EXPECT_EQ(d1["allocations_by_api"], json({{"cudaMalloc", 1}}));
  EXPECT_EQ(d1["peak_bytes"], kE);
  EXPECT_EQ(d1["live_bytes_at_end"], kE);
  EXPECT_EQ(d1["failed_allocations"], 0);

  for (const char* key :
       {"unknown_frees", "failed_frees", "null_frees", "reused_addresses", "unknown_api_events"})
    EXPECT_EQ(p["anomalies"][key], 0) << key;
}

TEST_P(RecordedLogs, LeaksAreWhatTheProgramNeverFreed) {
  const json p = report("leaks");
  EXPECT_EQ(p["at"], "end");
  EXPECT_EQ(p["total_bytes"], kB + kD + kE);
  EXPECT_EQ(p["total_count"], 3);
  std::set<std::tuple<int, std::string, uint64_t, int>> leaks;  // device, api, bytes, count
  for (const json& l : p["leaks"]) leaks.emplace(l["device"], l["api"], l["bytes"], l["count"]);
  const std::set<std::tuple<int, std::string, uint64_t, int>> expected = {
      {0, "cudaMalloc", kB, 1}, {0, "cuMemAlloc_v2", kD, 1}, {1, "cudaMalloc", kE, 1}};
  EXPECT_EQ(leaks, expected);
}

TEST_P(RecordedLogs, PeakHoldsEveryDeviceZeroAllocationAndTheFailureTheSurvivors) {
  const json p = report("peak");
  const json& d0 = device_entry(p, 0);
  EXPECT_EQ(d0["peak_bytes"], kA + kB + kC + kD);
  EXPECT_EQ(d0["live_count"], 4);
  uint64_t site_bytes = 0;
  for (const json& s : d0["sites"]) site_bytes += s["bytes"].get<uint64_t>();
  EXPECT_EQ(site_bytes, kA + kB + kC + kD);

  const json& failure = d0["first_failure"];
  ASSERT_TRUE(failure.is_object());
  EXPECT_EQ(failure["api"], "cudaMalloc");
  EXPECT_EQ(failure["bytes"], kTooBig);
  EXPECT_EQ(failure["live_bytes"], kB + kD);  // a and c were freed by then, e not yet made
  EXPECT_EQ(failure["live_count"], 2);

  EXPECT_EQ(device_entry(p, 1)["peak_bytes"], kE);
}

INSTANTIATE_TEST_SUITE_P(EveryFormatVersion, RecordedLogs, ::testing::ValuesIn(kRecordedLogs),
                         [](const auto& info) {
                           std::string name = info.param.name;
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace gmemhook::test_logs

// NVML samples against the fake libnvidia-ml.so.1, which reports for this process a
// 48 MiB context plus what the simulated device holds for it: every sample must say exactly that,
// at the moments the hook promises, and a machine without NVML must get one note and nothing else.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "harness.h"

namespace gmemhook::test {
namespace {

namespace fs = std::filesystem;
using format::NvmlReason;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kContext = 48 * kMiB;       // the fake NVML's context overhead
constexpr uint64_t kOtherProcess = 32 * kMiB;  // the fake NVML's other process
constexpr uint64_t kCapacity = 1ull << 30;     // fakecuda's default device size

std::map<std::string, std::string> nvml_env(const fs::path& out, int interval_ms) {
  auto env = traced_env(out);
  env["LD_LIBRARY_PATH"] += std::string(":") + GMEMHOOK_TEST_FAKENVML_DIR;
  env["GMEMHOOK_NVML_INTERVAL_MS"] = std::to_string(interval_ms);
  return env;
}

// Runs the scenario's NVML steps in `env` (whose GMEMHOOK_OUT is a fresh directory).
LoggedProcess run_steps(const std::map<std::string, std::string>& env, int pause_ms = 100) {
  RunResult r = run({scenario_path(), "nvml", std::to_string(pause_ms)}, env);
  EXPECT_TRUE(r.exited(0)) << r.err;
  auto dirs = process_dirs(env.at("GMEMHOOK_OUT"));
  EXPECT_EQ(dirs.size(), 1u);
  return read_process(dirs.at(0));
}

// Device bytes the log says are allocated after event `seq`.
uint64_t allocated_at(const LoggedProcess& p, uint64_t seq) {
  std::map<uint64_t, uint64_t> live;
  for (const auto& e : p.events) {
    if (e.ev.seq > seq || e.ev.result != 0) continue;
    if (e.kind == format::EventKind::Alloc) live[e.ev.f.address] = e.ev.f.size;
    if (e.kind == format::EventKind::Free) live.erase(e.ev.f.address);
  }
  uint64_t sum = 0;
  for (auto& [a, s] : live) sum += s;
  return sum;
}

// The steps with a short pause and `var`=`value` set besides the fake NVML.
LoggedProcess run_with(const std::string& name, const char* var, const char* value) {
  auto env = nvml_env(temp_dir(name), 5000);
  env[var] = value;
  return run_steps(env, 10);
}

uint64_t seq_of_malloc(const LoggedProcess& p, uint64_t size) {
  for (const auto& e : p.events)
    if (e.kind == format::EventKind::Alloc && e.ev.f.size == size) return e.ev.seq;
  ADD_FAILURE() << "no allocation of " << size;
  return 0;
}

size_t count_notes(const LoggedProcess& p, const std::string& part) {
  return std::count_if(p.notes.begin(), p.notes.end(),
                       [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

// A long interval: no periodic sample, so each moment's sample is the hook's own.
TEST(Nvml, SamplesAtFirstCallFirstAllocationPeakAndExitWithExactFigures) {
  if (on_real_gpu()) GTEST_SKIP() << "the GPU check compares with nvidia-smi instead";
  fs::path out = temp_dir("nvml-moments");
  LoggedProcess p = run_steps(nvml_env(out, 5000));
  ASSERT_EQ(p.nvml.size(), 4u) << "first call, first allocation, peak, exit";
  const uint64_t small = seq_of_malloc(p, 64 * kMiB), big = seq_of_malloc(p, 128 * kMiB);
  struct Want {
    NvmlReason reason;
    uint64_t seq, process_used;
  };
  const Want want[] = {{NvmlReason::FirstCall, small - 1, kContext},
                       {NvmlReason::FirstAllocation, small, kContext + 64 * kMiB},
                       {NvmlReason::Peak, big, kContext + 192 * kMiB},
                       {NvmlReason::Exit, big + 1, kContext + 64 * kMiB}};
  for (size_t i = 0; i < 4; ++i) {
    const auto& s = p.nvml[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(s.reason, want[i].reason);
    EXPECT_EQ(s.seq, want[i].seq);
    EXPECT_EQ(s.device, 0);
    EXPECT_TRUE(s.listed);
    EXPECT_EQ(s.process_used, want[i].process_used);
    EXPECT_EQ(s.total, kCapacity);
    EXPECT_EQ(s.used, kOtherProcess + want[i].process_used);
    // What no allocation explains is the context, at every moment.
    EXPECT_EQ(s.process_used - allocated_at(p, s.seq), kContext);
    if (i) {
      EXPECT_GE(s.time_delta_ns, p.nvml[i - 1].time_delta_ns);
    }
  }
  EXPECT_EQ(count_notes(p, "nvidia-smi"), 0u) << ::testing::PrintToString(p.notes);
}

// A short interval: periodic samples, each agreeing with the allocations logged before it (or,
// when it raced with the next call, after it).
TEST(Nvml, PeriodicSamplesAgreeWithTheLog) {
  if (on_real_gpu()) GTEST_SKIP();
  fs::path out = temp_dir("nvml-periodic");
  LoggedProcess p = run_steps(nvml_env(out, 20));
  size_t periodic = 0;
  for (const auto& s : p.nvml) {
    periodic += s.reason == NvmlReason::Periodic;
    ASSERT_TRUE(s.listed);
    uint64_t untracked = s.process_used - allocated_at(p, s.seq);
    if (untracked != kContext) {
      EXPECT_EQ(s.process_used - allocated_at(p, s.seq + 1), kContext);
    }
  }
  EXPECT_GE(periodic, 5u) << "400 ms at one sample per 20 ms (a loaded machine may skip some)";
  EXPECT_EQ(p.nvml.back().reason, NvmlReason::Exit);
}

// The CUDA ordinal is matched to NVML's device by PCI bus id: with the devices renumbered, CUDA's
// device 0 is the second physical one, and that is the one whose figures are recorded.
TEST(Nvml, CudaVisibleDevicesIsHonoured) {
  if (on_real_gpu()) GTEST_SKIP();
  fs::path out = temp_dir("nvml-visible");
  auto env = nvml_env(out, 5000);
  env["CUDA_VISIBLE_DEVICES"] = "1,0";
  LoggedProcess p = run_steps(env);
  ASSERT_FALSE(p.nvml.empty());
  for (const auto& s : p.nvml) {
    EXPECT_EQ(s.device, 0);
    EXPECT_TRUE(s.listed) << "matched by ordinal instead of bus id";
  }
  EXPECT_EQ(p.nvml.back().process_used, kContext + 64 * kMiB);
}

// A device first used within a quarter interval of the last peak check is still noted: the
// allocation's inline test (nvml_sampler.h) lets through every allocation on a device not yet
// sampled, so the exit sample covers it too.
TEST(Nvml, DeviceFirstUsedBetweenPeakChecksIsSampledAtExit) {
  if (on_real_gpu()) GTEST_SKIP();
  fs::path out = temp_dir("nvml-second-device");
  auto env = nvml_env(out, 60000);
  RunResult r = run({scenario_path(), "nvml-second-device"}, env);
  ASSERT_TRUE(r.exited(0)) << r.err;
  auto dirs = process_dirs(out);
  ASSERT_EQ(dirs.size(), 1u);
  LoggedProcess p = read_process(dirs.at(0));
  std::map<int, uint64_t> at_exit;  // device: the process's figure
  for (const auto& s : p.nvml)
    if (s.reason == NvmlReason::Exit) at_exit[s.device] = s.process_used;
  ASSERT_EQ(at_exit.size(), 2u) << "devices sampled at exit";
  EXPECT_EQ(at_exit[0], kContext + 2 * kMiB);
  EXPECT_EQ(at_exit[1], kContext + 2 * kMiB);
}

// A graph-only program (hookcut3's report: hook_bench's launch mode got no sample at all): the
// first hooked call is an allocation node's, which names device 0 but allocates nothing, and the
// memory comes with the launch. The first call's sample covers device 0, the launch is the first
// allocation, and the exit sees the node's memory still live.
LoggedProcess run_graph_only(const fs::path& out) {
  RunResult r = run({scenario_path(), "nvml-graph", "10"}, nvml_env(out, 60000));
  EXPECT_TRUE(r.exited(0)) << r.err;
  auto dirs = process_dirs(out);
  EXPECT_EQ(dirs.size(), 1u);
  return read_process(dirs.at(0));
}

uint64_t seq_of_kind(const LoggedProcess& p, format::EventKind kind) {
  for (const auto& e : p.events)
    if (e.kind == kind) return e.ev.seq;
  ADD_FAILURE() << "no event of kind " << format::to_string(kind);
  return 0;
}

TEST(Nvml, GraphOnlyProgramIsSampledFromItsFirstCall) {
  if (on_real_gpu()) GTEST_SKIP();
  LoggedProcess p = run_graph_only(temp_dir("nvml-graph"));
  ASSERT_EQ(p.nvml.size(), 3u) << "first call, first allocation (the launch), exit; notes: "
                               << ::testing::PrintToString(p.notes);
  const uint64_t node = seq_of_kind(p, format::EventKind::GraphAllocNode);
  const uint64_t launch = seq_of_kind(p, format::EventKind::GraphLaunch);
  struct Want {
    NvmlReason reason;
    uint64_t seq, process_used;
  };
  const Want want[] = {{NvmlReason::FirstCall, node, kContext},
                       {NvmlReason::FirstAllocation, launch, kContext + 8 * kMiB},
                       {NvmlReason::Exit, launch, kContext + 8 * kMiB}};
  for (size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    const auto& s = p.nvml[i];
    EXPECT_EQ(s.reason, want[i].reason);
    EXPECT_EQ(s.seq, want[i].seq);
    EXPECT_EQ(s.device, 0);
    EXPECT_TRUE(s.listed);
    EXPECT_EQ(s.process_used, want[i].process_used);
  }
  EXPECT_EQ(count_notes(p, "nvidia-smi"), 0u) << ::testing::PrintToString(p.notes);
}

// The same run end to end: `gmemhook summary --json` has the device's nvidia-smi figures, the
// node's memory allocated through CUDA and the context not.
TEST(Nvml, GraphOnlyProgramHasNvidiaSmiFiguresInTheSummary) {
  if (on_real_gpu()) GTEST_SKIP();
  const fs::path out = temp_dir("nvml-graph-summary");
  LoggedProcess p = run_graph_only(out);
  const RunResult summary = run({GMEMHOOK_TEST_CLI, "summary", "--json", p.dir.string()}, {});
  ASSERT_TRUE(summary.exited(0)) << summary.err;
  const std::string& json = summary.out;
  const size_t smi = json.find("\"nvidia_smi\": [");
  ASSERT_NE(smi, std::string::npos) << json;
  const std::string figures = json.substr(smi, json.find(']', smi) - smi);
  for (const std::string& field :
       {std::string("\"device\": 0,"), std::string("\"listed\": true,"),
        "\"process_bytes\": " + std::to_string(kContext + 8 * kMiB) + ",",
        "\"allocated_bytes\": " + std::to_string(8 * kMiB) + ",",
        "\"untracked_bytes\": " + std::to_string(kContext) + ","})
    EXPECT_NE(figures.find(field), std::string::npos) << field << " in " << figures;
}

// Same program, no libnvidia-ml.so.1: one note, no sample, and the same events.
TEST(Nvml, WithoutTheLibraryOneNoteAndTheSameEvents) {
  if (on_real_gpu()) GTEST_SKIP();
  fs::path with_dir = temp_dir("nvml-with");
  LoggedProcess with = run_steps(nvml_env(with_dir, 5000), 10);
  fs::path without_dir = temp_dir("nvml-without");
  auto env = traced_env(without_dir);
  env["GMEMHOOK_NVML_INTERVAL_MS"] = "5000";
  LoggedProcess without = run_steps(env, 10);
  EXPECT_TRUE(without.nvml.empty());
  ASSERT_EQ(count_notes(without, "nvidia-smi"), 1u) << ::testing::PrintToString(without.notes);
  EXPECT_EQ(count_notes(without, "libnvidia-ml.so.1 could not be loaded"), 1u);
  ASSERT_EQ(with.events.size(), without.events.size());
  for (size_t i = 0; i < with.events.size(); ++i) {
    EXPECT_EQ(with.events[i].api, without.events[i].api);
    EXPECT_EQ(with.events[i].ev.seq, without.events[i].ev.seq);
    EXPECT_EQ(with.events[i].ev.f.size, without.events[i].ev.f.size);
  }
}

TEST(Nvml, MigDeviceOneNoteNoSamples) {
  if (on_real_gpu()) GTEST_SKIP();
  LoggedProcess p = run_with("nvml-mig", "FAKENVML_MIG", "1");
  EXPECT_TRUE(p.nvml.empty());
  EXPECT_EQ(count_notes(p, "MIG mode"), 1u) << ::testing::PrintToString(p.notes);
}

// A container with its own pid namespace: NVML lists the process under another pid. The device's
// own figures are still recorded, the process's are not guessed.
TEST(Nvml, ForeignPidOneNoteDeviceFiguresOnly) {
  if (on_real_gpu()) GTEST_SKIP();
  LoggedProcess p = run_with("nvml-foreign", "FAKENVML_FOREIGN_PID", "1");
  ASSERT_FALSE(p.nvml.empty());
  for (const auto& s : p.nvml) {
    EXPECT_FALSE(s.listed);
    EXPECT_EQ(s.process_used, 0u);
  }
  EXPECT_EQ(p.nvml.back().used, kOtherProcess + kContext + 64 * kMiB);
  EXPECT_EQ(count_notes(p, "not under this pid"), 1u) << ::testing::PrintToString(p.notes);
}

TEST(Nvml, OffMeansNoSampleAndNoNote) {
  if (on_real_gpu()) GTEST_SKIP();
  LoggedProcess p = run_with("nvml-off", "GMEMHOOK_NVML", "0");
  EXPECT_TRUE(p.nvml.empty());
  EXPECT_EQ(count_notes(p, "nvidia-smi"), 0u);
}

TEST(Nvml, BadIntervalIsWarnedAboutAndTheDefaultUsed) {
  if (on_real_gpu()) GTEST_SKIP();
  fs::path out = temp_dir("nvml-bad-interval");
  auto env = nvml_env(out, 5000);
  env["GMEMHOOK_NVML_INTERVAL_MS"] = "0";
  RunResult r = run({scenario_path(), "nvml", "10"}, env);
  EXPECT_TRUE(r.exited(0));
  EXPECT_NE(r.err.find("GMEMHOOK_NVML_INTERVAL_MS=0: expected milliseconds from 10 to 60000; "
                       "using 100"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace gmemhook::test

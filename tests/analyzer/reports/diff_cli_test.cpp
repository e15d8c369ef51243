// `gmemhook diff` and the stack exports (--format folded / speedscope) end to end: pairs of
// scenario runs whose changes are known by construction, matched across load biases and lines.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "report_scenario.h"

namespace gmemhook::test_logs {
namespace {

using format::ApiId;
using nlohmann::json;

constexpr uint64_t kMiB = 1 << 20;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// stderr's last line: the --fail-above reason comes after any symbolizer warnings.
std::string last_line(const std::string& text) {
  const std::vector<std::string> lines = lines_of(text);
  return lines.empty() ? "" : lines.back();
}

json parse(const CliResult& r) {
  EXPECT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

const json* site_with_status(const json& sites, const std::string& status) {
  for (const json& s : sites)
    if (s["status"] == status) return &s;
  return nullptr;
}

// One run of a training step. Between the base and the new run the program was rebuilt and
// edited: the module loads elsewhere, the Python call moved down 5 lines, one site grew, one
// appeared and one vanished.
std::filesystem::path write_run(const std::filesystem::path& dir, bool is_new) {
  const uint64_t bias = is_new ? 0x7a0000000000 : Scenario::kModuleBias;
  Scenario s(is_new ? 700 : 600, "train");
  s.set_module_bias(bias);
  analysis::PyCode code;
  code.py_version = 0x030a;
  code.filename = "/work/train.py";
  code.name = code.qualname = "step;inner";  // a ';' the folded output must escape
  code.first_line = is_new ? 45 : 40;
  code.line_table = std::string("\x10\x00", 2);  // offsets 0..15: the first line
  const uint32_t py = s.py_code(1, code);
  const uint32_t grows = s.stack(1, {bias + 0x1100, bias + 0x1900});
  const uint32_t same = s.stack(1, {bias + 0x3100}, {{py, 0, true}});
  const uint32_t only = s.stack(1, {bias + (is_new ? 0x1400 : 0x1300), bias + 0x1900});
  uint64_t a = 0x7f0000000000;
  for (int i = 0; i < (is_new ? 3 : 2); ++i, a += 16 * kMiB)
    s.alloc(1, ApiId::cudaMalloc, a, 16 * kMiB, 0, grows);
  s.alloc(1, ApiId::cudaMalloc, a, 8 * kMiB, 0, same);
  a += 8 * kMiB;
  s.alloc(1, ApiId::cudaMalloc, a, is_new ? 2 * kMiB : 4 * kMiB, 0, only);  // the peak
  s.free(1, ApiId::cudaFree, 0x7f0000000000);  // the first 16 MiB of `grows` is freed
  return s.write(dir, true);
}

class DiffCli : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = make_temp_dir("diff-base");
    new_ = make_temp_dir("diff-new");
    write_run(base_, false);
    write_run(new_, true);
  }
  void TearDown() override {
    std::filesystem::remove_all(base_);
    std::filesystem::remove_all(new_);
  }
  std::string runs() const { return quote(base_) + " " + quote(new_); }

  std::filesystem::path base_, new_;
};

TEST_F(DiffCli, JsonMatchesSitesBySymbolAcrossLoadBiasesAndLines) {
  const json j = parse(run_cli("diff --json " + runs()));
  // Base peak: 2x16 + 8 + 4 MiB; new: 3x16 + 8 + 2 MiB.
  EXPECT_EQ(j["base"]["peak_bytes"], 44 * kMiB);
  EXPECT_EQ(j["new"]["peak_bytes"], 58 * kMiB);
  EXPECT_EQ(j["delta_bytes"], 14 * kMiB);
  EXPECT_EQ(j["base"]["pid"], 600);
  EXPECT_EQ(j["new"]["pid"], 700);
  EXPECT_EQ(j["device"], 0);
  EXPECT_EQ(j["mode"], "peak");
  const json& sites = j["sites"];
  ASSERT_EQ(sites.size(), 4u) << sites.dump(1);
  // Largest absolute change first.
  EXPECT_EQ(sites[0]["status"], "grown");
  EXPECT_EQ(sites[0]["base_bytes"], 32 * kMiB);
  EXPECT_EQ(sites[0]["new_bytes"], 48 * kMiB);
  EXPECT_EQ(sites[0]["delta_bytes"], 16 * kMiB);
  EXPECT_EQ(sites[0]["stack"][0]["offset"], 0x1100);
  EXPECT_EQ(sites[1]["status"], "gone");
  EXPECT_EQ(sites[1]["delta_bytes"], -int64_t(4 * kMiB));
  EXPECT_EQ(sites[1]["stack"][0]["offset"], 0x1300);
  EXPECT_EQ(sites[2]["status"], "new");
  EXPECT_EQ(sites[2]["base_bytes"], 0);
  EXPECT_EQ(sites[2]["new_bytes"], 2 * kMiB);
  EXPECT_EQ(sites[3]["status"], "same");
  EXPECT_EQ(sites[3]["delta_bytes"], 0);
  // The unchanged site shows the new run's frames: its address and line.
  EXPECT_EQ(sites[3]["stack"][0]["address"], 0x7a0000000000 + 0x3100);
  EXPECT_EQ(sites[3]["stack"][1]["line"], 45);
  EXPECT_EQ(sites[3]["stack"][1]["function"], "step;inner");
  ASSERT_EQ(j["processes"].size(), 1u);
  EXPECT_EQ(j["processes"][0]["sites"], sites);
}

TEST_F(DiffCli, MatchLinesTellsAMovedCallApart) {
  const json j = parse(run_cli("diff --json --match-lines " + runs()));
  ASSERT_EQ(j["sites"].size(), 5u) << j["sites"].dump(1);
  EXPECT_EQ(site_with_status(j["sites"], "same"), nullptr);
  int moved = 0;
  for (const json& s : j["sites"])
    if (s["stack"].size() == 2 && s["stack"][1]["python"] == true) {
      ++moved;
      EXPECT_EQ(s["status"], s["stack"][1]["line"] == 40 ? "gone" : "new") << s.dump(1);
    }
  EXPECT_EQ(moved, 2);
}

TEST_F(DiffCli, TextIsHeaptrackDiffShapedAndEndsWithAHint) {
  const CliResult r = run_cli("diff " + runs());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("process 600 train -> process 700 train, device 0\n"
                       "  peak   base 44.0 MiB (46137344 bytes)\n"
                       "  peak   new  58.0 MiB (60817408 bytes)\n"
                       "  delta  +14.0 MiB (+31.8%)\n\nPEAK MEMORY CHANGES\n"
                       "   +16.0 MiB  grown   32.0 MiB -> 48.0 MiB (2 -> 3 allocations), from:\n"
                       "      train+0x1100\n"
                       "        #0 train+0x1100\n        #1 train+0x1900\n"
                       "    -4.0 MiB  gone    4.0 MiB in 1 allocation before, from:\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("    +2.0 MiB  new     2.0 MiB in 1 allocation, from:\n"), std::string::npos)
      << r.out;
  // Unchanged sites are counted, not listed, unless --top asks.
  EXPECT_NE(r.out.find("  1 site unchanged, holding 8.0 MiB"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("same"), std::string::npos) << r.out;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_FALSE(lines.empty());
  // The hint names gmemhook by the path it was run by, so it can be pasted as it is.
  EXPECT_TRUE(
      lines.back().starts_with(std::string("hint: ") + GMEMHOOK_CLI + " peak " + new_.string()))
      << lines.back();

  const CliResult all = run_cli("diff --top 0 " + runs());
  EXPECT_NE(all.out.find("         0 B  same    8.0 MiB -> 8.0 MiB"), std::string::npos) << all.out;
}

TEST_F(DiffCli, LeaksComparesWhatWasLiveAtTheEnd) {
  const json j = parse(run_cli("diff --leaks --json " + runs()));
  EXPECT_EQ(j["mode"], "leaks");
  EXPECT_EQ(j["base"]["peak_bytes"], 28 * kMiB);  // 16 + 8 + 4
  EXPECT_EQ(j["new"]["peak_bytes"], 42 * kMiB);   // 32 + 8 + 2
  EXPECT_EQ(j["sites"][0]["delta_bytes"], 16 * kMiB);
  const CliResult text = run_cli("diff --leaks " + runs());
  EXPECT_NE(text.out.find("\nLEAK CHANGES\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(std::string("hint: ") + GMEMHOOK_CLI + " leaks "), std::string::npos)
      << text.out;
}

// The regex of the task: frames without ';' or line breaks, then the weight(s).
const std::regex kFolded(R"(^[^;\n]+(;[^;\n]+)* \d+$)");
const std::regex kFoldedDiff(R"(^[^;\n]+(;[^;\n]+)* \d+ \d+$)");

TEST_F(DiffCli, FoldedDiffHasTwoWeightsPerStack) {
  const CliResult r = run_cli("diff --format folded " + runs());
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;
  for (const std::string& l : lines) EXPECT_TRUE(std::regex_match(l, kFoldedDiff)) << l;
  // Outermost first; the Python frame is file:function with its ';' escaped.
  EXPECT_NE(r.out.find("train+0x1900;train+0x1100 33554432 50331648\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("train+0x1900;train+0x1300 4194304 0\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("train+0x1900;train+0x1400 0 2097152\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/work/train.py:step:inner;train+0x3100 8388608 8388608\n"),
            std::string::npos)
      << r.out;
}

TEST_F(DiffCli, FoldedPeakAndLeaks) {
  for (const char* report : {"peak", "leaks"}) {
    const CliResult r = run_cli(std::string(report) + " --format folded " + quote(new_));
    ASSERT_EQ(r.status, 0) << report << r.err;
    const std::vector<std::string> lines = lines_of(r.out);
    ASSERT_EQ(lines.size(), 3u) << report << r.out;
    for (const std::string& l : lines) EXPECT_TRUE(std::regex_match(l, kFolded)) << l;
    EXPECT_NE(r.out.find("/work/train.py:step:inner;train+0x3100 8388608\n"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find(std::string("train+0x1900;train+0x1100 ") +
                         (std::string(report) == "peak" ? "50331648" : "33554432") + "\n"),
              std::string::npos)
        << report << r.out;
  }
  const CliResult shallow = run_cli("peak --format folded --depth 1 " + quote(new_));
  EXPECT_EQ(shallow.out, "train+0x1100 50331648\ntrain+0x1400 2097152\ntrain+0x3100 8388608\n");
}

TEST_F(DiffCli, SpeedscopeHasTheSchemasRequiredKeys) {
  for (const char* report : {"peak", "leaks"}) {
    const json j = parse(run_cli(std::string(report) + " --format speedscope " + quote(new_)));
    EXPECT_EQ(j["$schema"], "https://www.speedscope.app/file-format-schema.json");
    EXPECT_TRUE(j["name"].is_string());
    EXPECT_TRUE(j["exporter"].is_string());
    const json& frames = j["shared"]["frames"];
    ASSERT_TRUE(frames.is_array());
    for (const json& f : frames) {
      EXPECT_TRUE(f["name"].is_string()) << f;
      if (f.contains("file")) {
        EXPECT_TRUE(f["file"].is_string()) << f;
      }
      if (f.contains("line")) {
        EXPECT_TRUE(f["line"].is_number()) << f;
      }
    }
    ASSERT_EQ(j["profiles"].size(), 1u);
    const json& p = j["profiles"][0];
    EXPECT_EQ(p["type"], "sampled");
    EXPECT_EQ(p["unit"], "bytes");
    EXPECT_TRUE(p["name"].is_string());
    EXPECT_EQ(p["startValue"], 0);
    ASSERT_EQ(p["samples"].size(), p["weights"].size());
    uint64_t total = 0;
    for (const json& w : p["weights"]) total += w.get<uint64_t>();
    EXPECT_EQ(p["endValue"], total);
    EXPECT_EQ(total, std::string(report) == "peak" ? 58 * kMiB : 42 * kMiB);
    for (const json& sample : p["samples"])
      for (const json& i : sample) EXPECT_LT(i.get<size_t>(), frames.size());
    // Outermost first: the Python caller, then the native frame that allocated.
    bool python = false;
    for (const json& sample : p["samples"])
      if (sample.size() == 2 && frames[sample[0].get<size_t>()]["name"] == "step;inner") {
        python = true;
        EXPECT_EQ(frames[sample[0].get<size_t>()]["file"], "/work/train.py");
        EXPECT_EQ(frames[sample[0].get<size_t>()]["line"], 45);
        EXPECT_EQ(frames[sample[1].get<size_t>()]["name"], "train+0x3100");
      }
    EXPECT_TRUE(python) << j.dump(1);
  }
}

// A format a command does not offer is a usage error: exit 2, like cmp's and diff's.
TEST_F(DiffCli, FormatsAreOfferedWhereTheyMeanSomething) {
  EXPECT_EQ(run_cli("summary --format folded " + quote(new_)).status, 2);
  EXPECT_EQ(run_cli("diff --format speedscope " + runs()).status, 2);
  EXPECT_EQ(run_cli("peak --format json --json " + quote(new_)).status, 2);
  const json j = parse(run_cli("peak --format json " + quote(new_)));
  EXPECT_EQ(j["processes"][0]["devices"][0]["peak_bytes"], 58 * kMiB);
  EXPECT_EQ(run_cli("diff --fail-above 5x " + runs()).status, 2);
  EXPECT_EQ(run_cli("diff " + quote(base_) + " /nonexistent/gmemhook-run").status, 2);
}

// Two runs of a step whose Python line allocates through two native paths (two stacks, one line
// of user code), plus a buffer on device 1; in the new run the first path doubled.
class DiffGrouping : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = make_temp_dir("diff-group-base");
    new_ = make_temp_dir("diff-group-new");
    for (bool is_new : {false, true}) {
      Scenario s(is_new ? 2 : 1, "step");
      analysis::PyCode code;
      code.py_version = 0x030a;
      code.filename = "/work/step.py";
      code.name = code.qualname = "step";
      code.first_line = 12;
      code.line_table = std::string("\x10\x00", 2);
      const uint32_t py = s.py_code(1, code);
      const uint64_t bias = Scenario::kModuleBias;
      const uint32_t a = s.stack(1, {bias + 0x3100}, {{py, 0, true}});
      const uint32_t b = s.stack(1, {bias + 0x3200}, {{py, 0, true}});
      const uint32_t other = s.stack(1, {bias + 0x5000});
      s.alloc(1, ApiId::cudaMalloc, 0x7f0000000000, (is_new ? 16 : 8) * kMiB, 0, a);
      s.alloc(1, ApiId::cudaMalloc, 0x7f0010000000, 8 * kMiB, 0, b);
      s.alloc(1, ApiId::cudaMalloc, 0x7e0000000000, (is_new ? 4 : 2) * kMiB, 1, other);
      s.write(is_new ? new_ : base_, true);
    }
  }
  void TearDown() override {
    std::filesystem::remove_all(base_);
    std::filesystem::remove_all(new_);
  }
  CliResult diff(const std::string& options) const {
    return run_cli("diff " + options + " " + quote(base_) + " " + quote(new_));
  }
  std::filesystem::path base_, new_;
};

// diff groups sites as the reports do, by line of user code unless told otherwise.
TEST_F(DiffGrouping, ByLineByDefaultThenByFunctionOrStack) {
  const CliResult line = diff("--device 0");
  ASSERT_EQ(line.status, 0) << line.err;
  // One row for the line: both stacks, 16 -> 24 MiB, headed by the line.
  EXPECT_NE(line.out.find("grown   16.0 MiB -> 24.0 MiB (2 -> 2 allocations), from:\n"
                          "      /work/step.py:12 in step\n"
                          "        stack 1 of 2: 16.0 MiB in 1 allocation:\n"),
            std::string::npos)
      << line.out;
  EXPECT_EQ(line.out, diff("--device 0 --group-by line").out);

  const CliResult function = diff("--device 0 --group-by function");
  ASSERT_EQ(function.status, 0) << function.err;
  EXPECT_NE(function.out.find("), from:\n      step in /work/step.py\n"), std::string::npos)
      << function.out;
  EXPECT_EQ(function.out.find("/work/step.py:12 in step"), std::string::npos) << function.out;

  // By stack: the grown stack alone; the unchanged one is counted, not listed.
  const CliResult stack = diff("--device 0 --group-by stack");
  ASSERT_EQ(stack.status, 0) << stack.err;
  EXPECT_NE(stack.out.find("grown   8.0 MiB -> 16.0 MiB (1 -> 1 allocation), from:\n"),
            std::string::npos)
      << stack.out;
  EXPECT_NE(stack.out.find("1 site unchanged, holding 8.0 MiB"), std::string::npos) << stack.out;

  // JSON keeps every stack apart whatever the grouping.
  const json j = parse(diff("--json --device 0 --group-by line"));
  EXPECT_EQ(j["sites"].size(), 2u) << j.dump(1);
  EXPECT_EQ(diff("--group-by file").status, 2);
}

// --device filters both sides to that device; one neither run used is a usage error (exit 2).
TEST_F(DiffGrouping, DeviceFiltersBothSides) {
  const json all = parse(diff("--json"));
  ASSERT_EQ(all["processes"].size(), 2u) << all.dump(1);  // device 0 and device 1
  const json one = parse(diff("--json --device 1"));
  ASSERT_EQ(one["processes"].size(), 1u) << one.dump(1);
  EXPECT_EQ(one["device"], 1);
  EXPECT_EQ(one["base"]["peak_bytes"], 2 * kMiB);
  EXPECT_EQ(one["new"]["peak_bytes"], 4 * kMiB);
  const CliResult text = diff("--device 1");
  EXPECT_EQ(text.out.find("device 0"), std::string::npos) << text.out;
  // Gates too: device 1 grew 100 %, device 0 only 50 %.
  EXPECT_EQ(diff("--device 0 --fail-above 60%").status, 0);
  EXPECT_EQ(diff("--device 1 --fail-above 60%").status, 1);

  const CliResult never = diff("--device 7");
  EXPECT_EQ(never.status, 2);
  EXPECT_EQ(never.out, "");
  EXPECT_EQ(never.err, "gmemhook: device 7 was never used in " + base_.string() + " or " +
                           new_.string() + "\n");
}

// Two runs whose peaks are 64 and 72 MiB: the peak grew exactly 12.5% (+8 MiB).
class DiffThreshold : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = make_temp_dir("diff-gate-base");
    new_ = make_temp_dir("diff-gate-new");
    for (bool is_new : {false, true}) {
      Scenario s(is_new ? 2 : 1, "gate");
      const uint32_t st = s.stack(1, {Scenario::kModuleBias + 0x1000});
      s.alloc(1, ApiId::cudaMalloc, 0x7f0000000000, (is_new ? 72 : 64) * kMiB, 0, st);
      s.write(is_new ? new_ : base_, true);
    }
  }
  void TearDown() override {
    std::filesystem::remove_all(base_);
    std::filesystem::remove_all(new_);
  }
  CliResult gate(const std::string& limit) const {
    return run_cli("diff --fail-above '" + limit + "' " + quote(base_) + " " + quote(new_));
  }
  std::filesystem::path base_, new_;
};

TEST_F(DiffThreshold, PercentAtJustUnderAndJustOver) {
  EXPECT_EQ(gate("12.5%").status, 0);  // exactly at the limit passes
  EXPECT_EQ(gate("12.6%").status, 0);
  const CliResult over = gate("12.4%");
  EXPECT_EQ(over.status, 1);
  EXPECT_EQ(last_line(over.err),
            "gmemhook: peak grew 12.5% (+8.0 MiB), more than the allowed 12.4%");
  EXPECT_EQ(gate("12.499999%").status, 1);
  EXPECT_EQ(gate("5%").status, 1);
  // Going down never fails.
  EXPECT_EQ(run_cli("diff --fail-above 0% " + quote(new_) + " " + quote(base_)).status, 0);
}

TEST_F(DiffThreshold, BytesNeedAUnit) {
  EXPECT_EQ(gate("8388608B").status, 0);  // exactly +8 MiB
  EXPECT_EQ(gate("8MiB").status, 0);
  EXPECT_EQ(gate("8 MiB").status, 0);
  EXPECT_EQ(gate("8192KiB").status, 0);
  EXPECT_EQ(gate("8388.608KB").status, 0);
  EXPECT_EQ(gate("8388609B").status, 0);
  const CliResult over = gate("8388607B");
  EXPECT_EQ(over.status, 1);
  EXPECT_EQ(last_line(over.err),
            "gmemhook: peak grew 12.5% (+8.0 MiB), more than the allowed 8388607B");
  EXPECT_EQ(gate("8.388607MB").status, 1);
  EXPECT_EQ(gate("0.0078GiB").status, 1);  // 8375186 bytes
  EXPECT_EQ(gate("1GB").status, 0);
  // The document is written either way.
  EXPECT_NE(over.out.find("PEAK MEMORY CHANGES"), std::string::npos) << over.out;
  // A bare number could mean percent as well as bytes: refused, with what is expected.
  const CliResult bare = gate("5");
  EXPECT_EQ(bare.status, 2);
  EXPECT_NE(bare.err.find("expected a percentage (5%) or an amount with a unit (64MiB, "
                          "1000000B), not '5'"),
            std::string::npos)
      << bare.err;
}

// Ranks pair with ranks whatever their pids; the first pair stays at the top level.
TEST(DiffCliProcesses, MultiProcessRunsPairByRank) {
  auto base = make_temp_dir("diff-ranks-base");
  auto now = make_temp_dir("diff-ranks-new");
  auto write = [](const std::filesystem::path& dir, uint32_t pid, const char* rank,
                  uint64_t bytes) {
    Scenario s(pid, "train", rank);
    const uint32_t st = s.stack(1, {Scenario::kModuleBias + 0x1000});
    s.alloc(1, ApiId::cudaMalloc, 0x7f0000000000, bytes, std::stoi(rank), st);
    s.write(dir, true);
  };
  write(base, 100, "0", 10 * kMiB);
  write(base, 200, "1", 20 * kMiB);
  write(now, 50, "1", 21 * kMiB);  // rank 1 now has the lower pid
  write(now, 60, "0", 10 * kMiB);
  const json j = parse(run_cli("diff --json " + quote(base) + " " + quote(now)));
  ASSERT_EQ(j["processes"].size(), 2u);
  EXPECT_EQ(j["base"]["rank"], 0);
  EXPECT_EQ(j["new"]["pid"], 60);
  EXPECT_EQ(j["delta_bytes"], 0);
  const json& second = j["processes"][1];
  EXPECT_EQ(second["base"]["pid"], 200);
  EXPECT_EQ(second["new"]["pid"], 50);
  EXPECT_EQ(second["device"], 1);
  EXPECT_EQ(second["delta_bytes"], kMiB);
  EXPECT_EQ(second["sites"][0]["status"], "grown");
  const CliResult gate = run_cli("diff --fail-above 1% " + quote(base) + " " + quote(now));
  EXPECT_EQ(gate.status, 1);
  EXPECT_EQ(last_line(gate.err),
            "gmemhook: process 200 train (rank 1 of 2) -> process 50 train (rank 1 of 2), "
            "device 1: peak grew 5.0% (+1.0 MiB), more than the allowed 1%");
  std::filesystem::remove_all(base);
  std::filesystem::remove_all(now);
}

}  // namespace
}  // namespace gmemhook::test_logs

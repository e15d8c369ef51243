// `peak --json`'s `rows` (docs/json.md): the rows and headings the text report gives at each
// peak and first failure — one row per line of user code with its stacks' bytes summed, "no
// frame of user code: every frame in ..." for a stack of library frames only — so that a machine
// reads the answer a person reads, not only the stacks under it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "site_rows_scenario.h"

namespace gmemhook::test_logs {
namespace {

constexpr uint64_t kMiB = SiteRowsScenario::kMiB;

using format::ApiId;
using nlohmann::json;

class PeakRows : public ::testing::Test {
 protected:
  // site_rows_scenario.h's allocations, all live at the peak; then 0x1200's is freed and a
  // request fails.
  void SetUp() override {
    run_ = make_temp_dir("peak-rows");
    SiteRowsScenario r;
    r.s.free(301, ApiId::cudaFree, SiteRowsScenario::kOtherAddress);
    r.s.alloc(301, ApiId::cudaMalloc, 0, 64 * kMiB, 0, r.other, 2);  // cudaErrorMemoryAllocation
    r.s.write(run_, true);
  }
  void TearDown() override { std::filesystem::remove_all(run_); }

  // The process's device 0 object.
  json device(const std::string& options = "") const {
    const CliResult r = run_cli("peak --json " + options + quote(run_));
    EXPECT_EQ(r.status, 0) << r.err;
    return json::parse(r.out)["processes"][0]["devices"][0];
  }
  // `rows` of `o`, an empty array when absent (the tests then fail, never crash).
  static json rows(const json& o) {
    EXPECT_TRUE(o.contains("rows")) << o.dump(1);
    return o.value("rows", json::array());
  }

  std::filesystem::path run_;
};

TEST_F(PeakRows, RowsAreTheTextsLinesWithTheirStacksSummed) {
  const json d = device();
  ASSERT_EQ(d["peak_bytes"], 54 * kMiB);
  ASSERT_EQ(d["sites"].size(), 4u) << d.dump(1);  // one per stack, as before
  const json r = rows(d);
  ASSERT_EQ(r.size(), 3u) << r.dump(1);
  EXPECT_EQ(r[0]["where"], "train+0x1100");
  EXPECT_EQ(r[0]["bytes"], 40 * kMiB);
  EXPECT_EQ(r[0]["count"], 3);
  EXPECT_EQ(r[0]["stacks"], 2);
  EXPECT_EQ(r[0]["sites"], json::array({0, 2}));  // 32 MiB (sites[0]) and 8 MiB (sites[2])
  EXPECT_EQ(r[0]["api"], "cudaMalloc");
  EXPECT_DOUBLE_EQ(r[0]["share"].get<double>(), 40.0 / 54.0);
  EXPECT_EQ(r[1]["where"], "no frame of user code: every frame in libcublas.so.13");
  EXPECT_EQ(r[1]["bytes"], 12 * kMiB);
  EXPECT_EQ(r[1]["sites"], json::array({1}));
  EXPECT_EQ(r[2]["where"], "train+0x1200");
  EXPECT_EQ(r[2]["bytes"], 2 * kMiB);
}

TEST_F(PeakRows, TheFirstFailureHasTheRowsOfWhatHeldTheMemory) {
  const json d = device();
  ASSERT_TRUE(d["first_failure"].is_object()) << d.dump(1);
  const json r = rows(d["first_failure"]);
  ASSERT_EQ(r.size(), 2u) << r.dump(1);  // the small line was freed before the failure
  EXPECT_EQ(r[0]["where"], "train+0x1100");
  EXPECT_EQ(r[0]["bytes"], 40 * kMiB);
  EXPECT_EQ(r[1]["where"], "no frame of user code: every frame in libcublas.so.13");
  EXPECT_DOUBLE_EQ(r[1]["share"].get<double>(), 12.0 / 52.0);
}

TEST_F(PeakRows, EachRowIsARowOfTheTextWithItsHeading) {
  const CliResult text = run_cli("peak " + quote(run_));
  ASSERT_EQ(text.status, 0) << text.err;
  const size_t peak_at = text.out.find("PEAK MEMORY CONSUMERS");
  ASSERT_NE(peak_at, std::string::npos) << text.out;
  const json r = rows(device());
  ASSERT_EQ(r.size(), 3u) << r.dump(1);
  expect_rows_in_text(text.out, r, "from:\n      ", peak_at);
}

TEST_F(PeakRows, TopCutsRowsAndTheirStacksInSites) {
  const json d = device("--top 1 ");
  const json r = rows(d);
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(d["sites"].size(), 1u);
  // The row counts both its stacks; only the one --top kept in `sites` is indexed.
  EXPECT_EQ(r[0]["stacks"], 2);
  EXPECT_EQ(r[0]["bytes"], 40 * kMiB);
  EXPECT_EQ(r[0]["sites"], json::array({0}));
}

TEST_F(PeakRows, GroupByStackMakesARowOfEachStack) {
  const json d = device("--group-by stack ");
  const json r = rows(d);
  ASSERT_EQ(r.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(r[i]["sites"], json::array({i}));
    EXPECT_EQ(r[i]["bytes"], d["sites"][i]["bytes"]);
  }
}

}  // namespace
}  // namespace gmemhook::test_logs

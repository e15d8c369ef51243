// `leaks --json`'s `rows` and `where` (docs/json.md): the rows and headings the text report
// gives, so that the HTML page, which draws them, says what the text says — one row per line of
// user code with its stacks' bytes summed, "no frame of user code: every frame in ..." for a
// stack of library frames only (the page had shown "libcublas.so.13 in ?").
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "site_rows_scenario.h"

namespace gmemhook::test_logs {
namespace {

constexpr uint64_t kMiB = SiteRowsScenario::kMiB;

using nlohmann::json;

class LeakRows : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = make_temp_dir("leak-rows");
    SiteRowsScenario().s.write(run_, true);
  }
  void TearDown() override { std::filesystem::remove_all(run_); }

  // The process's object, with "rows" (null without it: the tests then fail, never crash).
  json leaks(const std::string& options = "") const {
    const CliResult r = run_cli("leaks --json " + options + quote(run_));
    EXPECT_EQ(r.status, 0) << r.err;
    json p = json::parse(r.out)["processes"][0];
    EXPECT_TRUE(p.contains("rows")) << p.dump(1);
    if (!p.contains("rows")) p["rows"] = nullptr;
    return p;
  }

  std::filesystem::path run_;
};

TEST_F(LeakRows, RowsAreTheTextsLinesWithTheirStacksSummed) {
  const json p = leaks();
  ASSERT_EQ(p["leaks"].size(), 4u) << p.dump(1);  // one per stack, as before
  const json& rows = p["rows"];
  ASSERT_EQ(rows.size(), 3u) << rows.dump(1);
  EXPECT_EQ(rows[0]["where"], "train+0x1100");
  EXPECT_EQ(rows[0]["bytes"], 40 * kMiB);
  EXPECT_EQ(rows[0]["count"], 3);
  EXPECT_EQ(rows[0]["stacks"], 2);
  EXPECT_EQ(rows[0]["leaks"], json::array({0, 2}));  // 32 MiB (leaks[0]) and 8 MiB (leaks[2])
  EXPECT_EQ(rows[0]["api"], "cudaMalloc");
  EXPECT_EQ(rows[0]["device"], 0);
  EXPECT_EQ(rows[0]["memory"], "device");
  EXPECT_EQ(rows[0]["kind"], "allocation");
  EXPECT_EQ(rows[1]["where"], "no frame of user code: every frame in libcublas.so.13");
  EXPECT_EQ(rows[1]["bytes"], 12 * kMiB);
  EXPECT_EQ(rows[1]["leaks"], json::array({1}));
  EXPECT_EQ(rows[2]["where"], "train+0x1200");
  EXPECT_EQ(rows[2]["bytes"], 2 * kMiB);
  // Each stack says the heading its own site would have.
  EXPECT_EQ(p["leaks"][1]["where"], "no frame of user code: every frame in libcublas.so.13");
  EXPECT_EQ(p["leaks"][2]["where"], "train+0x1100");
}

TEST_F(LeakRows, EachRowIsARowOfTheTextWithItsHeading) {
  const CliResult text = run_cli("leaks " + quote(run_));
  ASSERT_EQ(text.status, 0) << text.err;
  const json rows = leaks()["rows"];
  ASSERT_EQ(rows.size(), 3u) << rows.dump(1);
  expect_rows_in_text(text.out, rows, "allocated from:\n    ");
}

TEST_F(LeakRows, TopCutsRowsAndTheirStacksInLeaks) {
  const json p = leaks("--top 1 ");
  ASSERT_EQ(p["rows"].size(), 1u);
  ASSERT_EQ(p["leaks"].size(), 1u);
  // The row counts both its stacks; only the one --top kept in `leaks` is indexed.
  EXPECT_EQ(p["rows"][0]["stacks"], 2);
  EXPECT_EQ(p["rows"][0]["bytes"], 40 * kMiB);
  EXPECT_EQ(p["rows"][0]["leaks"], json::array({0}));
}

// What --top leaves out, said in JSON as the text says it ("... and N more"): the page prints it
// under its table rather than leave the rows it cut unsaid.
TEST_F(LeakRows, RowsOmittedAreWhatTheTextSaysIsLeftOut) {
  const json p = leaks("--top 1 ");
  ASSERT_TRUE(p.contains("rows_omitted")) << p.dump(1);
  EXPECT_EQ(p["rows_omitted"]["rows"], 2);
  EXPECT_EQ(p["rows_omitted"]["bytes"], 14 * kMiB);  // the 12 MiB and 2 MiB rows
  EXPECT_EQ(p["rows_omitted"]["count"], 2);
  const CliResult text = run_cli("leaks --top 1 " + quote(run_));
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("... and 14.0 MiB (14680064 bytes) more in 2 allocations"),
            std::string::npos)
      << text.out;
  const json all = leaks();
  ASSERT_TRUE(all.contains("rows_omitted")) << all.dump(1);
  EXPECT_EQ(all["rows_omitted"], json({{"rows", 0}, {"bytes", 0}, {"count", 0}}));
}

TEST_F(LeakRows, GroupByStackMakesARowOfEachStack) {
  const json p = leaks("--group-by stack ");
  ASSERT_EQ(p["rows"].size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(p["rows"][i]["leaks"], json::array({i}));
    EXPECT_EQ(p["rows"][i]["bytes"], p["leaks"][i]["bytes"]);
  }
}

}  // namespace
}  // namespace gmemhook::test_logs

// The report and format tables (reports/report.h, output/format_table.h): every report, and diff,
// in every format the tables offer it renders and keeps that format's promise; names are unique. A
// report or format added to a table is exercised here without a new test.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "analyzer/output/format_table.h"
#include "analyzer/reports/diff_report.h"
#include "analyzer/reports/report.h"
#include "analyzer/reports/whole_run_format.h"
#include "report_scenario.h"

namespace gmemhook::test_logs {
namespace {

using format::ApiId;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kBias = Scenario::kModuleBias;

// What `format` promises of a document: text ends with a hint; JSON and speedscope parse; every
// folded line is a stack and one weight (two for a diff).
void expect_kept_promise(const std::string& format, const std::string& doc, bool two_weights,
                         const std::string& what) {
  ASSERT_FALSE(doc.empty()) << what;
  if (format == "text") {
    EXPECT_NE(doc.find("process 300 train"), std::string::npos) << what << "\n" << doc;
    EXPECT_NE(doc.find("\nhint: "), std::string::npos) << what << "\n" << doc;
  } else if (format == "json" || format == "speedscope") {
    EXPECT_FALSE(nlohmann::json::parse(doc, nullptr, false).is_discarded()) << what;
  } else if (format == "folded") {
    const std::regex line_shape(two_weights ? R"(^[^;\n]+(;[^;\n]+)* \d+ \d+$)"
                                            : R"(^[^;\n]+(;[^;\n]+)* \d+$)");
    std::istringstream lines(doc);
    for (std::string line; std::getline(lines, line);)
      EXPECT_TRUE(std::regex_match(line, line_shape)) << what << ": " << line;
  } else {
    ADD_FAILURE() << what << ": a format this test does not know; say what it promises here";
  }
}

class ReportTable : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = make_temp_dir("report-table");
    Scenario s(300, "train");
    const uint32_t loop = s.stack(301, {kBias + 0x1100, kBias + 0x1900});
    const uint32_t pin = s.stack(301, {kBias + 0x1300, kBias + 0x1900});
    s.alloc(301, ApiId::cudaMalloc, 0x7f0000000000, 16 * kMiB, 0, loop);
    s.alloc(301, ApiId::cudaMalloc, 0x7f0001000000, 8 * kMiB, 0, loop);
    s.free(301, ApiId::cudaFree, 0x7f0000000000);
    s.alloc(301, ApiId::cudaMalloc, 0, 64 * kMiB, 0, loop, 2);  // out of memory
    s.alloc(301, ApiId::cudaMallocHost, 0x600000, kMiB, 0, pin);
    s.write(run_, true);
  }
  void TearDown() override { std::filesystem::remove_all(run_); }

  std::filesystem::path run_;
};

TEST_F(ReportTable, EveryReportRendersInEveryFormatItOffers) {
  size_t rendered = 0;
  for (const analysis::ReportEntry& report : analysis::reports()) {
    for (const analysis::Format& format : analysis::formats()) {
      if (!(format.reads & report.parts())) continue;
      const std::string what = std::string(report.name) + " --format " + format.name;
      analysis::ReportOptions o;
      o.run = run_;
      o.run_arg = run_.string();
      o.format = format.name;
      std::FILE* out = std::tmpfile();
      std::FILE* err = std::tmpfile();
      ASSERT_TRUE(out && err);
      EXPECT_EQ(analysis::run_report(report, o, out, err), analysis::kExitOk) << what;
      const std::string doc = file_contents(out);
      std::fclose(out);
      std::fclose(err);
      ++rendered;
      expect_kept_promise(format.name, doc, false, what);
    }
  }
  // Every report has text and JSON, and leaks and peak the two stack exports.
  EXPECT_GE(rendered, 2 * analysis::reports().size() + 4);
}

TEST_F(ReportTable, DiffRendersInEveryFormatItOffers) {
  size_t rendered = 0;
  for (const analysis::Format& format : analysis::formats()) {
    if (!(format.reads & analysis::kDiffParts)) continue;
    const std::string what = std::string("diff --format ") + format.name;
    analysis::DiffOptions o;
    o.base = o.now = run_;
    o.base_arg = o.new_arg = run_.string();
    o.format = format.name;
    std::FILE* out = std::tmpfile();
    std::FILE* err = std::tmpfile();
    ASSERT_TRUE(out && err);
    EXPECT_EQ(analysis::run_diff(o, out, err), analysis::kExitOk) << what;
    const std::string doc = file_contents(out);
    std::fclose(out);
    std::fclose(err);
    ++rendered;
    expect_kept_promise(format.name, doc, true, what);
  }
  EXPECT_EQ(rendered, 3u);  // text, json, folded: a diff has no single weight for speedscope
}

TEST(Tables, NamesAreUniqueAndLookUp) {
  std::set<std::string> names;
  for (const analysis::ReportEntry& r : analysis::reports()) {
    EXPECT_TRUE(names.insert(r.name).second) << r.name;
    EXPECT_EQ(analysis::find_report(r.name), &r);
    EXPECT_TRUE(r.parts() & analysis::kLayout) << r.name << ": every report has text and JSON";
  }
  names.clear();
  for (const analysis::Format& f : analysis::formats()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    EXPECT_EQ(analysis::find_format(f.name), &f);
  }
  EXPECT_STREQ(analysis::formats().front().name, "text");  // the default comes first
  EXPECT_EQ(analysis::find_report("nosuch"), nullptr);
  EXPECT_EQ(analysis::find_format("nosuch"), nullptr);
  names.clear();
  std::set<std::string> files;
  for (const analysis::WholeRunFormat& f : analysis::whole_run_formats()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    EXPECT_TRUE(files.insert(f.default_file).second) << f.name << ": a default file of its own";
    EXPECT_EQ(analysis::find_whole_run_format(f.name), &f);
    EXPECT_NE(f.write, nullptr) << f.name;
  }
  EXPECT_STREQ(analysis::whole_run_formats().front().name, "html");  // gmemhook html's default
  EXPECT_EQ(analysis::find_whole_run_format("nosuch"), nullptr);
}

}  // namespace
}  // namespace gmemhook::test_logs

// Reports on a log that lacks events: they say so plainly, and a leak report never
// claims "nothing leaked" for such a log.
#include <gtest/gtest.h>

#include "report_scenario.h"

namespace gmemhook::test_logs {
namespace {

using format::ApiId;

TEST(IncompleteLog, ReportsSayHowManyEventsAreMissingAndNeverNothingLeaked) {
  auto run = make_temp_dir("reports-incomplete");
  Scenario s(300);
  s.alloc(301, ApiId::cudaMalloc, 0x7000, 1 << 20);
  s.free(301, ApiId::cudaFree, 0x7000);
  s.skip_events(40);  // e.g. the disk filled up: the End record's seq is 42, the last event's 2
  s.write(run, true);
  for (const char* report : {"summary", "leaks", "peak"}) {
    const CliResult r = run_cli(std::string(report) + " " + quote(run));
    ASSERT_EQ(r.status, 0) << report << r.err;
    EXPECT_NE(r.out.find("log incomplete: \u2265 40 events not recorded after event 2"),
              std::string::npos)
        << report << ":\n"
        << r.out;
    EXPECT_EQ(r.out.find("nothing leaked"), std::string::npos) << report << ":\n" << r.out;
    EXPECT_EQ(r.out.find("died"), std::string::npos) << report << ":\n" << r.out;
  }
  std::filesystem::remove_all(run);
}

TEST(IncompleteLog, ACompleteLogSaysNothingLeaked) {
  auto run = make_temp_dir("reports-complete");
  Scenario s(301);
  s.alloc(302, ApiId::cudaMalloc, 0x7000, 1 << 20);
  s.free(302, ApiId::cudaFree, 0x7000);
  s.write(run, true);
  const CliResult r = run_cli("leaks " + quote(run));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("nothing leaked"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("incomplete"), std::string::npos) << r.out;
  std::filesystem::remove_all(run);
}

}  // namespace
}  // namespace gmemhook::test_logs

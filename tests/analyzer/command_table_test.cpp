// The command table (analyzer/cli_commands.h): every subcommand is a line of it, with help, and
// `gmemhook NAME --help` runs and ends with that command's own footer. Only diff's speaks of
// --fail-above: every command's help once ended with one footer that gave diff's exit 1 to all.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "analyzer/cli_commands.h"
#include "analyzer/reports/report.h"
#include "report_scenario.h"

namespace gmemhook::test_logs {
namespace {

TEST(CommandTable, EveryCommandHasHelpAndAFooterOfItsOwn) {
  std::set<std::string> names;
  for (const analysis::Command& c : analysis::commands()) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(names.insert(c.name).second) << "a name of its own";
    ASSERT_TRUE(c.help && *c.help && c.footer && c.add);
    EXPECT_NE(std::string(c.footer).find("Exit"), std::string::npos) << "says its exit status";
    const CliResult r = run_cli(std::string(c.name) + " --help");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out.rfind(std::string(c.help) + "\n", 0), 0u) << r.out;
    EXPECT_NE(r.out.find("\n" + std::string(c.footer) + "\n"), std::string::npos) << r.out;
    const bool diff = std::string(c.name) == "diff";
    EXPECT_EQ(r.out.find("--fail-above") != std::string::npos, diff) << r.out;
  }
  for (const analysis::ReportEntry& r : analysis::reports())
    EXPECT_EQ(names.count(r.name), 1u) << r.name << " is a command";
  const CliResult help = run_cli("--help");
  EXPECT_EQ(help.status, 0);
  for (const std::string& name : names)
    EXPECT_NE(help.out.find("\n  " + name + " "), std::string::npos) << name << "\n" << help.out;
}

}  // namespace
}  // namespace gmemhook::test_logs

// The one table of subcommands (see cli_commands.h); each command's file defines its add function.
#include "analyzer/cli_commands.h"

#include <vector>

#include "analyzer/live/top_command.h"
#include "analyzer/reports/report.h"
#include "analyzer/run/run_command.h"

namespace gmemhook::analysis {

std::function<int()> add_report_command(CLI::App& command);  // cli_reports.cpp: any report
std::function<int()> add_diff_command(CLI::App& command);    // cli_reports.cpp
std::function<int()> add_dump_command(CLI::App& command);    // cli_reports.cpp
std::function<int()> add_html_command(CLI::App& command);    // cli_html.cpp

#define GMEMHOOK_UNREADABLE "a log is unreadable (missing, another format version, damaged)"
constexpr const char* kReportExits =
    "Exit status: 0 ok; 1 the report could not be made (no such --pid or --device); 2 bad usage, "
    "or " GMEMHOOK_UNREADABLE ".";

std::span<const Command> commands() {
  static const std::vector<Command> table = [] {
    std::vector<Command> t{
        {"run", "Run a command with libgmemhook.so preloaded into it and every process it starts",
         "Example: gmemhook run -o runs/base -- python train.py --batch 8\n"
         "Exits with the command's exit status (dies by the same signal when it did) and writes "
         "DIR/run.json. When the command never ran: 127 not found, 126 not executable, 2 bad "
         "usage or gmemhook's own error (no hook library, an unusable run directory).",
         add_run_command},
        {"top",
         "Follow a run while it writes: live GPU memory per process and device, by line of user "
         "code, refreshed every second",
         "Keys in the full-screen view: p/P process, d/D device, s sort, f freeze, q quit.\n"
         "Read-only: the traced job is never blocked or slowed; records still being written are "
         "read on the next refresh.\n"
         "Exit status: 0 ok; 2 bad usage, or RUN does not exist.",
         add_top_command}};
    // summary, leaks, peak, fragmentation: one line each in the report table (report_table.cpp).
    for (const ReportEntry& r : reports())
      t.push_back({r.name, r.help, kReportExits, add_report_command});
    t.insert(
        t.end(),
        {{"diff", "How the device memory at the peak (or leaked) changed between two runs, by site",
          "Exit status: 0 ok; 1 --fail-above refused the growth; 2 bad usage (a --device neither "
          "run used), or " GMEMHOOK_UNREADABLE ".",
          add_diff_command},
         {"dump", "Print every record of a run, one line each",
          "Exit status: 0 ok; 2 bad usage, or " GMEMHOOK_UNREADABLE ".", add_dump_command},
         {"html",
          "One self-contained page to open in a browser: timelines by site, the peak as a flame "
          "graph, leaks, fragmentation (or --format perfetto / memory-viz)",
          "Exit status: 0 ok; 1 the file could not be made (no such --pid) or written; 2 bad "
          "usage, or " GMEMHOOK_UNREADABLE ".",
          add_html_command}});
    return t;
  }();
  return table;
}

}  // namespace gmemhook::analysis

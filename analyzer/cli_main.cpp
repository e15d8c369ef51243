// The gmemhook command line: one CLI11 subcommand per report, each implemented in its own file.
#include <CLI/CLI.hpp>
#include <array>
#include <cstdio>
#include <string>

#include "analyzer/dump_command.h"
#include "analyzer/report.h"
#include "gmemhook/api_table.h"
#include "analyzer/run_command.h"
#include "gmemhook/format.h"

#ifndef GMEMHOOK_VERSION
#define GMEMHOOK_VERSION "unknown"
#endif

namespace {

using gmemhook::analysis::ReportKind;
using gmemhook::analysis::ReportOptions;

struct ReportCommand {
  ReportCommand(ReportKind k, const char* n, const char* d, bool moment)
      : kind(k), name(n), description(d), takes_moment(moment) {}
  ReportKind kind;
  const char* name;
  const char* description;
  bool takes_moment;  // --at / --at-seq
  CLI::App* app = nullptr;
  ReportOptions options;
  std::string run;
};

void add_report_options(CLI::App& app, ReportCommand& c) {
  ReportOptions& o = c.options;
  c.app = app.add_subcommand(c.name, c.description);
  CLI::App* s = c.app;
  s->add_option("RUN", c.run, "A run directory, or one <exe>.<pid> process directory")->required();
  s->add_flag("--json", o.json, "Machine-readable output (docs/json.md)");
  s->add_option("--pid", o.pid, "Only the process with this pid");
  s->add_option("--device", o.device, "Only this device (pinned host memory is on none)");
  s->add_option("--top", o.top, "Groups shown per list, largest first; 0 = all")
      ->check(CLI::NonNegativeNumber);
  s->add_option("--depth", o.depth, "Frames shown per stack; 0 = all")
      ->check(CLI::NonNegativeNumber);
  s->add_option("--api", o.apis,
                "Only events of these entry points, comma-separated (e.g. cudaMallocAsync,cudaFreeAsync)")
      ->delimiter(',')
      ->check([](const std::string& name) {
        for (const auto& a : gmemhook::format::kApis)
          if (name == a.name) return std::string();
        return "unknown entry point '" + name + "' (see include/gmemhook/api_table.h)";
      });
  s->add_option("--memory", o.memory, "Only this memory: device, host-pinned or managed")
      ->check(CLI::IsMember({"device", "host-pinned", "managed"}));
  if (c.takes_moment) {
    auto* at = s->add_option("--at", o.at_seconds,
                             "The live set at this many seconds after the process started")
                   ->check(CLI::NonNegativeNumber);
    auto* seq = s->add_option("--at-seq", o.at_seq,
                              "The live set right after the event with this sequence number");
    at->excludes(seq);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gmemhook: reports on the CUDA allocations recorded by libgmemhook.so", "gmemhook"};
  app.set_version_flag("--version", std::string("gmemhook ") + GMEMHOOK_VERSION + " (log format " +
                                        std::to_string(gmemhook::format::kFormatVersion) + ")");
  app.require_subcommand(1);
  app.footer(
      "Exit status: 0 ok, 1 the report could not be made (e.g. no such --pid) or bad usage, "
      "2 a log is unreadable (missing, another format version, damaged).");

  std::array<ReportCommand, 4> reports{
      ReportCommand(
          ReportKind::Summary, "summary",
          "One screen per process: allocations, frees, peak, live at end and failures per device",
          false),
      ReportCommand(ReportKind::Leaks, "leaks",
                    "What was never freed (or live when the process died), grouped by stack", true),
      ReportCommand(
          ReportKind::Peak, "peak",
          "Who held the memory at each device's peak, and when an allocation first failed", false),
      ReportCommand(ReportKind::Fragmentation, "fragmentation",
                    "How live memory lay in the address space at the peak and at the end", true),
  };
  gmemhook::analysis::add_run_command(app);  // runs a command under the hook (docs/run.md)
  for (ReportCommand& c : reports) add_report_options(app, c);

  std::string dump_run;
  CLI::App* dump = app.add_subcommand("dump", "Print every record of a run, one line each");
  dump->add_option("RUN", dump_run, "A run directory, or one <exe>.<pid> process directory")
      ->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Usage errors exit 1; 2 is reserved for logs that cannot be read.
    return app.exit(e) == 0 ? 0 : 1;
  }

  if (dump->parsed()) return gmemhook::analysis::dump_command(dump_run, stdout, stderr);
  for (ReportCommand& c : reports) {
    if (!c.app->parsed()) continue;
    c.options.run = c.run;
    c.options.run_arg = c.run;
    return gmemhook::analysis::run_report(c.kind, c.options, stdout, stderr);
  }
  return 1;
}

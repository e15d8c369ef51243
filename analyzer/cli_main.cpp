// The gmemhook command line: one CLI11 subcommand per report, each implemented in its own file.
#include <CLI/CLI.hpp>
#include <array>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "analyzer/reports/diff_report.h"
#include "analyzer/reports/dump_command.h"
#include "analyzer/reports/report.h"
#include "analyzer/run/run_command.h"
#include "gmemhook/api_table.h"
#include "gmemhook/format.h"

#ifndef GMEMHOOK_VERSION
#define GMEMHOOK_VERSION "unknown"
#endif

namespace {

using gmemhook::analysis::OutputFormat;
using gmemhook::analysis::ReportKind;
using gmemhook::analysis::ReportOptions;

const std::map<std::string, OutputFormat> kFormats{{"text", OutputFormat::Text},
                                                   {"json", OutputFormat::Json},
                                                   {"folded", OutputFormat::Folded},
                                                   {"speedscope", OutputFormat::Speedscope}};

// --format NAME, limited to `names`, and --json as its synonym for json.
void add_format_options(CLI::App* s, OutputFormat& format, std::vector<std::string> names) {
  std::string help = "Output: ";
  for (size_t i = 0; i < names.size(); ++i) help += (i ? ", " : "") + names[i];
  help += " (docs/json.md)";
  auto* f = s->add_option_function<std::string>(
                 "--format", [&format](const std::string& v) { format = kFormats.at(v); }, help)
                ->check(CLI::IsMember(names));
  s->add_flag_callback(
       "--json", [&format] { format = OutputFormat::Json; }, "Same as --format json")
      ->excludes(f);
}

// An --api check: the names of include/gmemhook/api_table.h.
std::string known_api(const std::string& name) {
  for (const auto& a : gmemhook::format::kApis)
    if (name == a.name) return std::string();
  return "unknown entry point '" + name + "' (see include/gmemhook/api_table.h)";
}

struct ReportCommand {
  ReportCommand(ReportKind k, const char* n, const char* d, bool moment)
      : kind(k), name(n), description(d), takes_moment(moment) {}
  ReportKind kind;
  const char* name;
  const char* description;
  bool takes_moment;           // --at / --at-seq
  bool stacks_export = false;  // --format folded / speedscope
  CLI::App* app = nullptr;
  ReportOptions options;
  std::string run;
};

void add_report_options(CLI::App& app, ReportCommand& c) {
  ReportOptions& o = c.options;
  c.app = app.add_subcommand(c.name, c.description);
  CLI::App* s = c.app;
  s->add_option("RUN", c.run, "A run directory, or one <exe>.<pid> process directory")->required();
  if (c.stacks_export)
    add_format_options(s, o.format, {"text", "json", "folded", "speedscope"});
  else
    add_format_options(s, o.format, {"text", "json"});
  s->add_option("--pid", o.pid, "Only the process with this pid");
  s->add_option("--device", o.device, "Only this device (pinned host memory is on none)");
  s->add_option("--top", o.top, "Groups shown per list, largest first; 0 = all")
      ->check(CLI::NonNegativeNumber);
  s->add_option("--depth", o.depth, "Frames shown per stack; 0 = all")
      ->check(CLI::NonNegativeNumber);
  s->add_option(
       "--api", o.apis,
       "Only events of these entry points, comma-separated (e.g. cudaMallocAsync,cudaFreeAsync)")
      ->delimiter(',')
      ->check(known_api);
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
  reports[1].stacks_export = reports[2].stacks_export = true;  // leaks, peak
  for (ReportCommand& c : reports) add_report_options(app, c);

  gmemhook::analysis::DiffOptions diff_options;
  std::string diff_base, diff_new, fail_above;
  CLI::App* diff = app.add_subcommand(
      "diff", "How the device memory at the peak (or leaked) changed between two runs, by site");
  diff->add_option("BASE", diff_base, "The run compared against (run or process directory)")
      ->required();
  diff->add_option("NEW", diff_new, "The run compared (run or process directory)")->required();
  diff->add_flag("--leaks", diff_options.leaks, "Compare what was live at the end, not the peak");
  diff->add_flag("--match-lines", diff_options.match_lines,
                 "Tell sites apart by line too (default: by function and file)");
  diff->add_option("--fail-above", fail_above,
                   "Exit 1 when the new peak exceeds the base's by more than N% or BYTES "
                   "(suffixes KiB MiB GiB, KB MB GB)")
      ->check([](const std::string& v) {
        return gmemhook::analysis::parse_growth_limit(v)
                   ? std::string()
                   : "expected a percentage (5%) or an amount (64MiB, 1000000)";
      });
  add_format_options(diff, diff_options.format, {"text", "json", "folded"});
  diff->add_option("--top", diff_options.top,
                   "Sites shown per device, largest change first; 0 = all")
      ->check(CLI::NonNegativeNumber);
  diff->add_option("--depth", diff_options.depth, "Frames shown per stack; 0 = all")
      ->check(CLI::NonNegativeNumber);
  diff->add_option("--device", diff_options.device, "Only this device");
  diff->add_option("--api", diff_options.apis, "Only events of these entry points, comma-separated")
      ->delimiter(',')
      ->check(known_api);

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
  if (diff->parsed()) {
    diff_options.base = diff_options.base_arg = diff_base;
    diff_options.now = diff_options.new_arg = diff_new;
    if (!fail_above.empty())
      diff_options.fail_above = gmemhook::analysis::parse_growth_limit(fail_above);
    return gmemhook::analysis::run_diff(diff_options, stdout, stderr);
  }
  for (ReportCommand& c : reports) {
    if (!c.app->parsed()) continue;
    c.options.run = c.run;
    c.options.run_arg = c.run;
    return gmemhook::analysis::run_report(c.kind, c.options, stdout, stderr);
  }
  return 1;
}

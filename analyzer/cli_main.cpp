// The gmemhook command line: a CLI11 subcommand per line of the report table (reports/report.h),
// with the --format choices of the format table (output/format_table.h); then diff, dump and run.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <vector>

#include "analyzer/cli_html.h"
#include "analyzer/cli_words.h"
#include "analyzer/live/top_command.h"
#include "analyzer/output/command_name.h"
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

constexpr int kExitUsage = 2;

using gmemhook::analysis::ReportEntry;
using gmemhook::analysis::ReportOptions;
using gmemhook::analysis::whole_number;

// --format NAME, limited to the formats (output/format_table.h) that read the `parts` a command's
// models offer, and --json as its synonym for json.
void add_format_options(CLI::App* s, std::string& format, unsigned parts) {
  const std::vector<std::string> names = gmemhook::analysis::format_names(parts);
  std::string help = "Output: ";
  for (size_t i = 0; i < names.size(); ++i) help += (i ? ", " : "") + names[i];
  help += " (docs/json.md)";
  auto* f = s->add_option("--format", format, help)->check(CLI::IsMember(names));
  s->add_flag_callback(
       "--json", [&format] { format = "json"; }, "Same as --format json")
      ->excludes(f);
}

// An --api check: the names of include/gmemhook/api_table.h.
std::string known_api(const std::string& name) {
  for (const auto& a : gmemhook::format::kApis)
    if (name == a.name) return std::string();
  return "unknown entry point '" + name + "' (see include/gmemhook/api_table.h)";
}

// A report's subcommand, made from its line of the report table (reports/report.h).
struct ReportCommand {
  explicit ReportCommand(const ReportEntry& e) : entry(e) {}
  const ReportEntry& entry;
  CLI::App* app = nullptr;
  ReportOptions options;
  std::string run;
};

// The report options that only some reports take (reports/report.h's flags), and what a report
// without the flag lacks: given to another report they are a usage error that says so, rather
// than CLI11's bare "not expected", and never silently ignored.
struct OptionUse {
  const char* name;
  bool flag;       // takes no value
  unsigned needs;  // ReportFlag
  const char* lacks;
};
constexpr OptionUse kOptionUses[] = {
    {"--top", false, gmemhook::analysis::kSiteRows, "lists no sites"},
    {"--depth", false, gmemhook::analysis::kStackLines, "writes no stacks"},
    {"--native", true, gmemhook::analysis::kStackLines, "writes no stacks"},
    {"--group-by", false, gmemhook::analysis::kStackExports, "groups no sites"},
    {"--all-moments", true, gmemhook::analysis::kAllMoments, "has no moments to choose from"},
    {"--at", false, gmemhook::analysis::kAtMoment, "shows no live set at a chosen moment"},
    {"--at-seq", false, gmemhook::analysis::kAtMoment, "shows no live set at a chosen moment"},
};

void reject_unused_options(CLI::App* s, const ReportEntry& entry) {
  for (const OptionUse& u : kOptionUses) {
    if (entry.flags & u.needs) continue;
    std::string takers;
    for (const ReportEntry& r : gmemhook::analysis::reports())
      if (r.flags & u.needs) takers += (takers.empty() ? "" : ", ") + std::string(r.name);
    const std::string why =
        std::string(entry.name) + " " + u.lacks + "; " + u.name + " is an option of " + takers;
    auto refuse = [name = std::string(u.name), why] { throw CLI::ValidationError(name, why); };
    CLI::Option* o = u.flag ? s->add_flag_callback(u.name, refuse)
                            : s->add_option_function<std::string>(
                                  u.name, [refuse](const std::string&) { refuse(); });
    o->group("");  // not in --help: the report does not take it
  }
}

void add_report_options(CLI::App& app, ReportCommand& c) {
  using namespace gmemhook::analysis;
  ReportOptions& o = c.options;
  const unsigned flags = c.entry.flags;
  c.app = app.add_subcommand(c.entry.name, c.entry.help);
  CLI::App* s = c.app;
  s->add_option("RUN", c.run, "A run directory, or one <exe>.<pid> process directory")->required();
  add_format_options(s, o.format, c.entry.parts());
  s->add_option("--pid", o.pid, "Only the process with this pid")
      ->check(whole_number("a process id (e.g. 4242)"));
  s->add_option("--device", o.device, "Only this device (pinned host memory is on none)")
      ->check(whole_number("a device number (0, 1, ...)"));
  s->add_option("-j,--jobs", o.jobs,
                "Processes analysed at once, each on a core of its own (default: every core)")
      ->check(whole_number("a count of processes (1, 2, ...)"))
      ->check([](const std::string& v) {
        return std::strtoul(v.c_str(), nullptr, 10) == 0
                   ? std::string("expected a count of processes of at least 1, not 0")
                   : std::string();
      });
  if (flags & kSiteRows)
    s->add_option("--top", o.top, "Rows shown per list, largest first; 0 = all")
        ->check(whole_number("a count of rows (0 = all)"));
  if (flags & kStackLines) {
    s->add_option("--depth", o.depth, "Lines shown per stack (frames with --native); 0 = all")
        ->check(whole_number("a count of frames (0 = all)"));
    s->add_flag("--native", o.native,
                "Every frame of a stack as recorded, none folded (default: user code first)");
  }
  if (flags & kStackExports)
    s->add_option_function<std::string>(
         "--group-by",
         [&o](const std::string& v) { o.group_by = *gmemhook::analysis::parse_group_by(v); },
         "One row per line of user code (line, the default), per user function (function) or "
         "per distinct stack (stack)")
        ->check(CLI::IsMember({"line", "function", "stack"}));
  s->add_option(
       "--api", o.apis,
       "Only events of these entry points, comma-separated (e.g. cudaMallocAsync,cudaFreeAsync)")
      ->delimiter(',')
      ->check(known_api);
  s->add_option("--memory", o.memory, "Only this memory: device, host-pinned or managed")
      ->check(CLI::IsMember({"device", "host-pinned", "managed"}));
  if (flags & kAllMoments)
    s->add_flag("--all-moments", o.all_moments,
                "Text: the peak, the first failure and the end (default: the worst of them, or the "
                "--at moment)");
  if (flags & kAtMoment) {
    auto* at =
        s->add_option("--at", o.at_seconds,
                      "The live set at this many seconds after the process started")
            ->check(gmemhook::analysis::decimal_number("seconds since the start (e.g. 1.5)"));
    auto* seq = s->add_option("--at-seq", o.at_seq,
                              "The live set right after the event with this sequence number")
                    ->check(whole_number("a sequence number (gmemhook dump shows them)"));
    at->excludes(seq);
  }
  reject_unused_options(s, c.entry);
}

}  // namespace

// The nearest subcommand to an unknown first word, said before CLI11 would answer "A subcommand
// is required". Returns true when it said so.
bool unknown_subcommand(CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return false;
  std::vector<std::string> names;
  for (const CLI::App* s : app.get_subcommands({})) names.push_back(s->get_name());
  const std::string typed = argv[1];
  if (std::find(names.begin(), names.end(), typed) != names.end()) return false;
  const std::string near = gmemhook::analysis::nearest_word(typed, names);
  std::string all;
  for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
  std::fprintf(stderr, "gmemhook: unknown command '%s'%s\ncommands: %s (--help for more)\n",
               typed.c_str(), near.empty() ? "" : ("; did you mean '" + near + "'?").c_str(),
               all.c_str());
  return true;
}

int main(int argc, char** argv) {
  if (argc > 0) gmemhook::analysis::set_invoked_as(argv[0]);  // hints name it so
  CLI::App app{"gmemhook: reports on the CUDA allocations recorded by libgmemhook.so", "gmemhook"};
  app.set_version_flag("--version", std::string("gmemhook ") + GMEMHOOK_VERSION + " (log format " +
                                        std::to_string(gmemhook::format::kFormatVersion) + ")");
  app.require_subcommand(1);
  app.footer(
      "Exit status: 0 ok; 1 the report could not be made (no such --pid or --device), or diff "
      "--fail-above refused the growth; 2 bad usage, or a log is unreadable (missing, another "
      "format version, damaged).");

  std::vector<ReportCommand> reports;
  for (const ReportEntry& e : gmemhook::analysis::reports()) reports.emplace_back(e);
  gmemhook::analysis::add_run_command(app);  // runs a command under the hook (docs/run.md)
  gmemhook::analysis::add_top_command(app);  // follows a run as it is written (docs/top.md)
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
                   "Exit 1 when the new peak exceeds the base's by more than N% or an amount "
                   "(units B, KiB MiB GiB, KB MB GB)")
      ->check([](const std::string& v) {
        if (gmemhook::analysis::parse_growth_limit(v)) return std::string();
        return "expected a percentage (5%) or an amount with a unit (64MiB, 1000000B), not '" + v +
               "'";
      });
  add_format_options(diff, diff_options.format, gmemhook::analysis::kDiffParts);
  diff->add_option("--top", diff_options.top,
                   "Sites shown per device, largest change first; 0 = all")
      ->check(whole_number("a count of sites (0 = all)"));
  diff->add_option("--depth", diff_options.depth,
                   "Lines shown per stack (frames with --native); 0 = all")
      ->check(whole_number("a count of frames (0 = all)"));
  diff->add_flag("--native", diff_options.native,
                 "Every frame of a stack as recorded, none folded (default: user code first)");
  diff->add_option_function<std::string>(
          "--group-by",
          [&diff_options](const std::string& v) {
            diff_options.group_by = *gmemhook::analysis::parse_group_by(v);
          },
          "Text: one row per line of user code (line, the default), per user function "
          "(function) or per distinct stack (stack)")
      ->check(CLI::IsMember({"line", "function", "stack"}));
  diff->add_option("--device", diff_options.device, "Only this device")
      ->check(whole_number("a device number (0, 1, ...)"));
  diff->add_option("--api", diff_options.apis, "Only events of these entry points, comma-separated")
      ->delimiter(',')
      ->check(known_api);

  std::string dump_run;
  CLI::App* dump = app.add_subcommand("dump", "Print every record of a run, one line each");
  dump->add_option("RUN", dump_run, "A run directory, or one <exe>.<pid> process directory")
      ->required();

  gmemhook::analysis::WholeRunOptions html_options;  // gmemhook html
  CLI::App* html = gmemhook::analysis::add_html_command(app, html_options);

  if (unknown_subcommand(app, argc, argv)) return kExitUsage;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Usage errors exit 2, as cmp's and diff's do: 1 is diff --fail-above's "grew too much".
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }

  if (html->parsed()) return gmemhook::analysis::run_html_report(html_options, stderr);
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
    return gmemhook::analysis::run_report(c.entry, c.options, stdout, stderr);
  }
  return 1;
}

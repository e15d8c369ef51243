// The subcommands of the reports stage (its lines of the command table, cli_commands.cpp): each
// report of the report table, diff (the same options less those of one run's processes), dump.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <memory>

#include "analyzer/cli_words.h"
#include "analyzer/reports/diff_report.h"
#include "analyzer/reports/dump_command.h"
#include "analyzer/reports/report.h"
#include "gmemhook/api_table.h"

namespace gmemhook::analysis {

namespace {

// Beside the ReportFlag bits (report.h): the options of a report over one run's processes, which
// diff, comparing two runs' device memory, does not take.
constexpr unsigned kOneRun = 1u << 16;  // --pid, -j, --memory

// An --api check: the names of include/gmemhook/api_table.h.
std::string known_api(const std::string& name) {
  for (const auto& a : format::kApis)
    if (name == a.name) return std::string();
  return "unknown entry point '" + name + "' (see include/gmemhook/api_table.h)";
}

// The report options that only some reports take (report.h's flags), and what a command without
// the flag lacks: given to another command they are a usage error that says so, rather than
// CLI11's bare "not expected", and never silently ignored.
struct OptionUse {
  const char* name;
  bool flag;       // takes no value
  unsigned needs;  // ReportFlag
  const char* lacks;
};
constexpr OptionUse kOptionUses[] = {
    {"--top", false, kSiteRows, "lists no sites"},
    {"--depth", false, kStackLines, "writes no stacks"},
    {"--native", true, kStackLines, "writes no stacks"},
    {"--group-by", false, kStackExports, "groups no sites"},
    {"--all-moments", true, kAllMoments, "has no moments to choose from"},
    {"--at", false, kAtMoment, "shows no live set at a chosen moment"},
    {"--at-seq", false, kAtMoment, "shows no live set at a chosen moment"},
};

void reject_unused_options(CLI::App& s, unsigned flags) {
  for (const OptionUse& u : kOptionUses) {
    if (flags & u.needs) continue;
    std::string takers;
    for (const ReportEntry& r : reports())
      if (r.flags & u.needs) takers += (takers.empty() ? "" : ", ") + std::string(r.name);
    const std::string why =
        s.get_name() + " " + u.lacks + "; " + u.name + " is an option of " + takers;
    auto refuse = [name = std::string(u.name), why] { throw CLI::ValidationError(name, why); };
    CLI::Option* o = u.flag ? s.add_flag_callback(u.name, refuse)
                            : s.add_option_function<std::string>(
                                  u.name, [refuse](const std::string&) { refuse(); });
    o->group("");  // not in --help: the command does not take it
  }
}

// The options of a command of `flags` (ReportFlag bits, and kOneRun) whose models offer `parts`
// to the formats (format_table.h): --format NAME limited to the formats that read them, and
// --json as its synonym for json.
void add_report_options(CLI::App& s, ReportOptions& o, unsigned flags, unsigned parts) {
  const std::vector<std::string> names = format_names(parts);
  std::string help = "Output: ";
  for (size_t i = 0; i < names.size(); ++i) help += (i ? ", " : "") + names[i];
  auto* format =
      s.add_option("--format", o.format, help + " (docs/json.md)")->check(CLI::IsMember(names));
  s.add_flag_callback(
       "--json", [&o] { o.format = "json"; }, "Same as --format json")
      ->excludes(format);
  if (flags & kOneRun)
    s.add_option("--pid", o.pid, "Only the process with this pid")
        ->check(whole_number("a process id (e.g. 4242)"));
  s.add_option("--device", o.device, "Only this device (pinned host memory is on none)")
      ->check(whole_number("a device number (0, 1, ...)"));
  if (flags & kOneRun)
    s.add_option("-j,--jobs", o.jobs,
                 "Processes analysed at once, each on a core of its own (default: every core)")
        ->check(whole_number("a count of processes (1, 2, ...)"))
        ->check([](const std::string& v) {
          return std::strtoul(v.c_str(), nullptr, 10)
                     ? ""
                     : "expected a count of processes of at least 1, not 0";
        });
  if (flags & kSiteRows)
    s.add_option("--top", o.top, "Rows shown per list, largest first; 0 = all")
        ->check(whole_number("a count of rows (0 = all)"));
  if (flags & kStackLines) {
    s.add_option("--depth", o.depth, "Lines shown per stack (frames with --native); 0 = all")
        ->check(whole_number("a count of frames (0 = all)"));
    s.add_flag("--native", o.native,
               "Every frame of a stack as recorded, none folded (default: user code first)");
  }
  if (flags & kStackExports)
    s.add_option_function<std::string>(
         "--group-by", [&o](const std::string& v) { o.group_by = *parse_group_by(v); },
         "One row per line of user code (line, the default), per user function (function) or "
         "per distinct stack (stack)")
        ->check(CLI::IsMember({"line", "function", "stack"}));
  s.add_option(
       "--api", o.apis,
       "Only events of these entry points, comma-separated (e.g. cudaMallocAsync,cudaFreeAsync)")
      ->delimiter(',')
      ->check(known_api);
  if (flags & kOneRun)
    s.add_option("--memory", o.memory, "Only this memory: device, host-pinned or managed")
        ->check(CLI::IsMember({"device", "host-pinned", "managed"}));
  if (flags & kAllMoments)
    s.add_flag("--all-moments", o.all_moments,
               "Text: the peak, the first failure and the end (default: the worst of them, or the "
               "--at moment)");
  if (flags & kAtMoment) {
    auto* at = s.add_option("--at", o.at_seconds,
                            "The live set at this many seconds after the process started")
                   ->check(decimal_number("seconds since the start (e.g. 1.5)"));
    auto* seq = s.add_option("--at-seq", o.at_seq,
                             "The live set right after the event with this sequence number")
                    ->check(whole_number("a sequence number (gmemhook dump shows them)"));
    at->excludes(seq);
  }
  reject_unused_options(s, flags);
}

constexpr const char* kRunHelp = "A run directory, or one <exe>.<pid> process directory";

}  // namespace

std::function<int()> add_report_command(CLI::App& s) {
  const ReportEntry& entry = *find_report(s.get_name());
  auto o = std::make_shared<ReportOptions>();
  s.add_option("RUN", o->run_arg, kRunHelp)->required();
  add_report_options(s, *o, entry.flags | kOneRun, entry.parts());
  return [&entry, o] {
    o->run = o->run_arg;
    return run_report(entry, *o, stdout, stderr);
  };
}

std::function<int()> add_diff_command(CLI::App& s) {
  auto o = std::make_shared<DiffOptions>();
  s.add_option("BASE", o->base_arg, "The run compared against (run or process directory)")
      ->required();
  s.add_option("NEW", o->new_arg, "The run compared (run or process directory)")->required();
  s.add_flag("--leaks", o->leaks, "Compare what was live at the end, not the peak");
  s.add_flag("--match-lines", o->match_lines,
             "Tell sites apart by line too (default: by function and file)");
  s.add_option_function<std::string>(
       "--fail-above", [o](const std::string& v) { o->fail_above = parse_growth_limit(v); },
       "Exit 1 when the new peak exceeds the base's by more than N% or an amount (units B, KiB "
       "MiB GiB, KB MB GB)")
      ->check([](const std::string& v) {
        if (parse_growth_limit(v)) return std::string();
        return "expected a percentage (5%) or an amount with a unit (64MiB, 1000000B), not '" + v +
               "'";
      });
  add_report_options(s, *o, kSiteRows | kStackLines | kStackExports, kDiffParts);
  return [o] {
    o->base = o->base_arg;
    o->now = o->new_arg;
    return run_diff(*o, stdout, stderr);
  };
}

std::function<int()> add_dump_command(CLI::App& s) {
  auto run = std::make_shared<std::string>();
  s.add_option("RUN", *run, kRunHelp)->required();
  return [run] { return dump_command(*run, stdout, stderr); };
}

}  // namespace gmemhook::analysis

// `gmemhook html RUN -o FILE [--format html|perfetto|memory-viz]`: writes a file (-o) in a format
// of the whole run (reports/whole_run_format.h) rather than text or JSON on stdout.
#include <CLI/CLI.hpp>
#include <memory>

#include "analyzer/cli_words.h"
#include "analyzer/reports/whole_run_format.h"

namespace gmemhook::analysis {

std::function<int()> add_html_command(CLI::App& s) {
  auto o = std::make_shared<WholeRunOptions>();
  s.add_option("RUN", o->run, "A run directory, or one <exe>.<pid> process directory")->required();
  s.add_option("-o,--output", o->output,
               "The file written (default: gmemhook.html, gmemhook.trace.json or "
               "gmemhook.memory_viz.pickle)");
  std::string format_help;  // built from the table, so --help lists exactly what --format takes
  std::vector<std::string> names;
  for (const WholeRunFormat& f : whole_run_formats()) {
    format_help += (names.empty() ? "" : "; ") + std::string(f.name) + ": " + f.help;
    names.emplace_back(f.name);
  }
  s.add_option("--format", o->format, format_help)->check(CLI::IsMember(names));
  s.add_option("--pid", o->pid, "Only the process with this pid (memory-viz: the process written)")
      ->check(whole_number("a process id (e.g. 4242)"));
  s.add_option("--device", o->device, "Only this device")
      ->check(whole_number("a device number (0, 1, ...)"));
  s.add_option("--api", o->apis, "Only events of these entry points, comma-separated")
      ->delimiter(',');
  return [o] {
    o->run_arg = o->run.string();
    if (o->output.empty()) o->output = find_whole_run_format(o->format)->default_file;
    return run_html_report(*o, stderr);
  };
}

}  // namespace gmemhook::analysis

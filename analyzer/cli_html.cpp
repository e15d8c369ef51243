// `gmemhook html RUN -o FILE [--format html|perfetto|memory-viz]` (see cli_html.h).
#include "analyzer/cli_html.h"

#include "analyzer/cli_words.h"

namespace gmemhook::analysis {

CLI::App* add_html_command(CLI::App& app, WholeRunOptions& o) {
  CLI::App* s = app.add_subcommand(
      "html",
      "One self-contained page to open in a browser: timelines by site, the peak as a flame "
      "graph, leaks, fragmentation (or --format perfetto / memory-viz)");
  s->add_option("RUN", o.run, "A run directory, or one <exe>.<pid> process directory")->required();
  s->add_option("-o,--output", o.output,
                "The file written (default: gmemhook.html, gmemhook.trace.json or "
                "gmemhook.memory_viz.pickle)");
  std::string format_help;  // built from the table, so --help lists exactly what --format takes
  std::vector<std::string> names;
  for (const WholeRunFormat& f : whole_run_formats()) {
    format_help += (names.empty() ? "" : "; ") + std::string(f.name) + ": " + f.help;
    names.emplace_back(f.name);
  }
  s->add_option("--format", o.format, format_help)->check(CLI::IsMember(names));
  s->add_option("--pid", o.pid, "Only the process with this pid (memory-viz: the process written)")
      ->check(whole_number("a process id (e.g. 4242)"));
  s->add_option("--device", o.device, "Only this device")
      ->check(whole_number("a device number (0, 1, ...)"));
  s->add_option("--api", o.apis, "Only events of these entry points, comma-separated")
      ->delimiter(',');
  s->final_callback([&o] {
    o.run_arg = o.run.string();
    if (o.output.empty()) o.output = find_whole_run_format(o.format)->default_file;
  });
  return s;
}

}  // namespace gmemhook::analysis

// `gmemhook html RUN -o FILE`: the run as one self-contained page to open in a browser,
// or, with --format, as a trace for Perfetto / chrome://tracing or a snapshot for PyTorch's
// memory_viz.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gmemhook::analysis {

struct HtmlOptions {
  std::filesystem::path run;  // a run directory or one process directory
  std::string run_arg;        // as typed, for the page's title and hints
  std::filesystem::path output;
  std::string format = "html";  // a name from whole_run_formats()
  std::optional<uint64_t> pid;
  std::optional<int32_t> device;
  std::vector<std::string> apis;  // --api: only these entry points
};

// The formats that take the whole run at once (one file for all its processes), as opposed to the
// per-report formats of output/format_table.h. A new one is a writer in a file of its own plus
// one line in this table (html_report.cpp); `gmemhook html --format` offers exactly these.
struct WholeRunFormat {
  const char* name;          // --format NAME
  const char* help;          // for --help
  const char* default_file;  // written when -o is not given
  int (*write)(const HtmlOptions& options, std::string& out, std::FILE* err);
};
const std::vector<WholeRunFormat>& whole_run_formats();
const WholeRunFormat* find_whole_run_format(const std::string& name);

// Writes options.output. Returns a report exit status (report.h); errors go to `err`.
int run_html_report(const HtmlOptions& options, std::FILE* err);

}  // namespace gmemhook::analysis

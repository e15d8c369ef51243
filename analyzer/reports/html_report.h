// `gmemhook html RUN -o FILE` (issue 11): the run as one self-contained page to open in a browser,
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

enum class PageFormat { Html, Perfetto, MemoryViz };

struct HtmlOptions {
  std::filesystem::path run;  // a run directory or one process directory
  std::string run_arg;        // as typed, for the page's title and hints
  std::filesystem::path output;
  PageFormat format = PageFormat::Html;
  std::optional<uint64_t> pid;
  std::optional<int32_t> device;
  std::vector<std::string> apis;  // --api: only these entry points
};

// Writes options.output. Returns a report exit status (report.h); errors go to `err`.
int run_html_report(const HtmlOptions& options, std::FILE* err);

}  // namespace gmemhook::analysis

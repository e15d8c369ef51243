// The formats of a whole run in one file (`gmemhook html --format`: the page, a Perfetto trace, a
// memory_viz pickle), unlike the per-report ones of output/format_table.h: what they are asked,
// and their table (html_report.cpp): a new one is its writer's file plus one line there.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gmemhook::analysis {

struct WholeRunOptions {
  std::filesystem::path run;  // a run directory or one process directory
  std::string run_arg;        // as typed, for the page's title and hints
  std::filesystem::path output;
  std::string format = "html";  // a name from whole_run_formats()
  std::optional<uint64_t> pid;
  std::optional<int32_t> device;
  std::vector<std::string> apis;  // --api: only these entry points
};

struct WholeRunFormat {
  const char* name;          // --format NAME
  const char* help;          // for --help
  const char* default_file;  // written when -o is not given
  int (*write)(const WholeRunOptions& options, std::string& out, std::FILE* err);
};
const std::vector<WholeRunFormat>& whole_run_formats();
const WholeRunFormat* find_whole_run_format(const std::string& name);

// `gmemhook html`: writes options.output. Returns a report exit status (process_walk.h); errors go
// to `err`.
int run_html_report(const WholeRunOptions& options, std::FILE* err);

}  // namespace gmemhook::analysis

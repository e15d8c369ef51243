// The reports of the gmemhook CLI (summary, leaks, peak, fragmentation): what they are asked
// (ReportOptions) and the one entry point that runs any of them over a run directory.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/output/output_format.h"

namespace gmemhook::analysis {

enum class ReportKind { Summary, Leaks, Peak, Fragmentation };

struct ReportOptions {
  std::filesystem::path run;  // a run directory or one process directory
  std::string run_arg;        // `run` as the user typed it, for the hint lines
  OutputFormat format = OutputFormat::Text;
  std::optional<uint64_t> pid;       // only this process
  std::optional<int32_t> device;     // only this device (pinned host memory is on none)
  std::optional<size_t> top;         // groups shown per list; 0 = all (default: text 20, JSON all)
  std::optional<size_t> depth;       // frames shown per stack; 0 = all (default: text 8, JSON all)
  std::optional<double> at_seconds;  // leaks, fragmentation: the live set at this moment
  std::optional<uint64_t> at_seq;    // ... or after the event with this sequence number
  // Only events of these entry points (e.g. torch's allocator API, to compare with torch's own
  // counters while cuBLAS's workspaces are left out); empty = all.
  std::vector<std::string> apis;
  std::optional<std::string> memory;  // only this memory: "device", "host-pinned", "managed"
};

// Exit statuses of every report (and of `gmemhook dump`).
inline constexpr int kExitOk = 0;
inline constexpr int kExitReportFailure = 1;  // the report could not be made (e.g. no such --pid)
inline constexpr int kExitUnreadable = 2;     // a log is missing, of another version, or damaged

// Runs the report over every process of options.run (in pid order). Text or JSON goes to `out`,
// warnings and errors to `err`. Returns one of the exit statuses above.
int run_report(ReportKind kind, const ReportOptions& options, std::FILE* out, std::FILE* err);

}  // namespace gmemhook::analysis

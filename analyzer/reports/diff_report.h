// `gmemhook diff BASE NEW`: how the device memory at the peak (or leaked, with --leaks) changed
// between two runs of the same program, per process and device, site by site — heaptrack_print
// --diff's question for CUDA memory, and with --fail-above a gate for CI.
#pragma once

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "analyzer/output/format_table.h"
#include "analyzer/reports/diff_threshold.h"
#include "analyzer/reports/report.h"

namespace gmemhook::analysis {

// What a diff's model offers the formats (format_table.h): its layout, stacks weighed twice.
inline constexpr unsigned kDiffParts = kLayout | kStackPairs;

// ReportOptions' format, top, depth, native, group_by, device and apis, read as the reports read
// them (the rest is one run's, unused here), and what only a comparison of two runs needs.
struct DiffOptions : ReportOptions {
  std::filesystem::path base, now;  // run directories or process directories
  std::string base_arg, new_arg;    // as typed, for the hint line
  bool leaks = false;               // compare what was live at the end, not at the peak
  bool match_lines = false;         // a site is also told apart by its lines
  std::optional<GrowthLimit> fail_above;
};

// Writes the comparison to `out`, warnings and errors to `err`. Returns kExitOk, or
// kExitReportFailure when a peak grew by more than --fail-above (one line per such growth on
// `err`), or kExitUnreadable when a log cannot be read.
int run_diff(const DiffOptions& options, std::FILE* out, std::FILE* err);

}  // namespace gmemhook::analysis

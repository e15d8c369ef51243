// `gmemhook diff BASE NEW`: how the device memory at the peak (or leaked, with --leaks) changed
// between two runs of the same program, per process and device, site by site — heaptrack_print
// --diff's question for CUDA memory, and with --fail-above a gate for CI.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/output/format_table.h"
#include "analyzer/reports/diff_threshold.h"
#include "analyzer/reports/report.h"

namespace gmemhook::analysis {

// What a diff's model offers the formats (format_table.h): its layout, stacks weighed twice.
inline constexpr unsigned kDiffParts = kLayout | kStackPairs;

struct DiffOptions {
  std::filesystem::path base, now;  // run directories or process directories
  std::string base_arg, new_arg;    // as typed, for the hint line
  bool leaks = false;               // compare what was live at the end, not at the peak
  bool match_lines = false;         // a site is also told apart by its lines
  std::optional<GrowthLimit> fail_above;
  std::string format = "text";       // a format that reads kDiffParts
  std::optional<size_t> top, depth;  // as for the reports (0 = all)
  bool native = false;               // text: every frame as recorded (--native)
  GroupBy group_by = GroupBy::Line;  // text: what one row of sites stands for (--group-by)
  std::optional<int32_t> device;
  std::vector<std::string> apis;
};

// Writes the comparison to `out`, warnings and errors to `err`. Returns kExitOk, or
// kExitReportFailure when a peak grew by more than --fail-above (one line per such growth on
// `err`), or kExitUnreadable when a log cannot be read.
int run_diff(const DiffOptions& options, std::FILE* out, std::FILE* err);

}  // namespace gmemhook::analysis

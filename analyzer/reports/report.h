// The reports of the gmemhook CLI (summary, leaks, peak, fragmentation): what they are asked
// (ReportOptions), what each one is (Report: a process in, a plain model out), and the one table
// they are registered in (report_table.cpp): a new report is its file plus one line there.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/output/report_model.h"
#include "analyzer/reports/process_walk.h"
#include "analyzer/reports/site_rows.h"

namespace gmemhook::analysis {

class ProcessContext;

struct ReportOptions {
  std::filesystem::path run;         // a run directory or one process directory
  std::string run_arg;               // `run` as the user typed it, for the hint lines
  std::string format = "text";       // a name of the format table (output/format_table.h)
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
  bool native = false;                // text: every frame as recorded, none folded (--native)
  GroupBy group_by = GroupBy::Line;   // text: what one row of sites stands for (--group-by)
  bool all_moments = false;  // fragmentation text: every moment, not only the worst (or --at)
  // summary JSON: about this many NVML samples per device, no high lost (the html page's budget:
  // a day of samples every 100 ms would not fit its 8 MiB); 0 = all.
  size_t nvml_samples = 0;
  unsigned jobs = 0;         // processes analysed at once (-j); 0 = every core
};

// One report over a run. The driver (run_report) hands it each process in turn and renders the
// model it returns in the format asked for.
class Report {
 public:
  virtual ~Report() = default;
  // Replays the process as the report needs (ProcessContext::pass) and returns what it found.
  virtual std::unique_ptr<ReportModel> analyze(ProcessContext& process) = 0;
  // The hint line that ends the text, once every process is in.
  virtual std::string next_step() const = 0;
  // Each process is analysed by an instance of its own, on a thread of its own (-j):
  // takes in what `other` (the same report) gathered for next_step().
  virtual void merge(const Report& other) = 0;
};

// What a report takes besides the options every report takes, and what its models offer.
enum ReportFlag : unsigned {
  kAtMoment = 1u << 0,      // --at / --at-seq: the live set at a moment
  kStackExports = 1u << 1,  // sites by stack: --group-by, and --format folded / speedscope
  kAllMoments = 1u << 2,    // --all-moments: every moment, not the worst
  kSiteRows = 1u << 3,      // --top: lists of sites
  kStackLines = 1u << 4,    // --depth, --native: stacks written out
};

struct ReportEntry {
  const char* name;  // the subcommand
  const char* help;
  unsigned flags;  // ReportFlag bits
  std::unique_ptr<Report> (*make)(const ReportOptions& options);
  // The ModelPart bits its models offer the formats (output/format_table.h).
  unsigned parts() const;
};

// Every report, in the order the CLI lists them.
std::span<const ReportEntry> reports();
const ReportEntry* find_report(std::string_view name);

// Runs `report` over every process of options.run (in pid order), rendered in options.format on
// `out`; warnings and errors go to `err`. Returns an exit status (process_walk.h).
int run_report(const ReportEntry& report, const ReportOptions& options, std::FILE* out,
               std::FILE* err);

}  // namespace gmemhook::analysis

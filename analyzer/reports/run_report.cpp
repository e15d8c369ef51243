// The report driver (see report.h): each process of the run through the report, its model into
// the renderer of the format asked for.
#include <fmt/format.h>

#include <algorithm>

#include "analyzer/output/format_table.h"
#include "analyzer/reports/parallel_walk.h"
#include "analyzer/reports/process_context.h"
#include "analyzer/reports/report.h"
#include "analyzer/reports/run_warnings.h"

namespace gmemhook::analysis {

namespace {

// "devices used: 0, 1", "no device memory used".
std::string used_devices_text(std::vector<int32_t> devices) {
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  if (devices.empty()) return "no device memory used";
  std::string s = devices.size() == 1 ? "device used: " : "devices used: ";
  for (size_t i = 0; i < devices.size(); ++i)
    s +=
        (i ? ", " : "") + (devices[i] == kNoDevice ? std::string("?") : std::to_string(devices[i]));
  return s;
}

void write(std::FILE* out, const std::string& s) { std::fwrite(s.data(), 1, s.size(), out); }

}  // namespace

int run_report(const ReportEntry& entry, const ReportOptions& options, std::FILE* out,
               std::FILE* err) {
  const Format* format = find_format(options.format);
  if (!format || !(format->reads & entry.parts())) {
    fmt::print(err, "gmemhook: {} has no output format '{}'\n", entry.name, options.format);
    return kExitReportFailure;
  }
  const std::unique_ptr<Report> report = entry.make(options);
  const std::unique_ptr<Renderer> renderer =
      format->make({std::string("gmemhook ") + entry.name + " " + options.run_arg,
                    options.run.string(), options.depth.value_or(0)});
  // Held back until the end: a --device no process used is an error, not an empty report.
  std::string body;
  RunWarnings warnings;
  std::vector<int32_t> devices;
  size_t reported = 0;
  // Each process on a worker thread with a report instance of its own; rendered here in pid
  // order (stacks are symbolized as the renderer asks for them, so on this thread).
  struct Analysed final : ProcessResult {
    std::unique_ptr<ProcessReader> reader;
    std::unique_ptr<ProcessContext> process;
    std::unique_ptr<Report> report;
    std::unique_ptr<ReportModel> model;
  };
  const int status = walk_processes_parallel(
      options.run, options.pid, options.jobs, out, err,
      [&](std::unique_ptr<ProcessReader> reader) -> std::unique_ptr<ProcessResult> {
        auto a = std::make_unique<Analysed>();
        a->reader = std::move(reader);
        a->process = std::make_unique<ProcessContext>(*a->reader, options.apis);
        a->report = entry.make(options);
        a->model = a->report->analyze(*a->process);
        return a;
      },
      [&](ProcessResult& result) {
        auto& a = static_cast<Analysed&>(result);
        ++reported;
        body += renderer->add(*a.model);
        report->merge(*a.report);
        const ReadFacts& facts = a.process->header().facts;
        for (const std::string& w : facts.warnings) warnings.add(w);
        warnings.add_symbolizer(a.process->stacks());
        devices.insert(devices.end(), facts.devices.begin(), facts.devices.end());
      });
  if (status != kExitOk) return status;
  if (reported == 0) {
    // Every process was skipped, and the lines above said why (killed while starting, no CUDA
    // call): a hint to look further into nothing would only confuse.
    fmt::print(err, "gmemhook: nothing to report: every process in {} was skipped\n",
               options.run.string());
    return kExitReportFailure;
  }
  if (options.device &&
      std::find(devices.begin(), devices.end(), *options.device) == devices.end()) {
    fmt::print(err, "gmemhook: device {} was never used in {} ({})\n", *options.device,
               options.run.string(), used_devices_text(devices));
    return kExitReportFailure;
  }
  write(out, body);
  write(out, renderer->finish(report->next_step()));
  std::fflush(out);
  warnings.print(err);
  return kExitOk;
}

}  // namespace gmemhook::analysis

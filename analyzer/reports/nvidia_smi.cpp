// The nvidia-smi lines (see nvidia_smi.h).
#include "analyzer/reports/nvidia_smi.h"

#include <fmt/format.h>

#include <algorithm>

#include "analyzer/output/text_format.h"

namespace gmemhook::analysis {

namespace {
constexpr size_t kSparkWidth = 48;  // as summary's other timelines

}  // namespace

void append_nvidia_smi(std::string& text, const std::vector<NvidiaSmiPeak>& peaks,
                       const NvidiaSmiText& how) {
  for (const NvidiaSmiPeak& p : peaks) {
    if (how.device && *how.device != p.device) continue;
    const NvmlSample& at = p.at.nvml;
    text += fmt::format("  nvidia-smi, device {} (NVML, sampled inside the process)\n", p.device);
    if (p.listed) {
      text += fmt::format(
          "    at its peak   {} at {} = {} allocated through CUDA (this log)\n"
          "                  + {} not allocated by the program (context, modules, library "
          "workspaces)\n",
          size_and_bytes(at.process_used), human_duration(at.time_delta_ns),
          human_size(p.at.allocated), human_size(p.untracked()));
    } else {
      text += fmt::format(
          "    at its peak   not shown: NVML does not list this process under its pid (a "
          "container with its own pid namespace?); the whole device used {} at {}\n",
          human_size(at.used), human_duration(at.time_delta_ns));
    }
    text += fmt::format("    headroom      {} of {} free on the device then (all processes)\n",
                        human_size(p.device_free()), human_size(at.total));
    if (!how.timeline || !p.listed) continue;
    std::vector<TimelinePoint> points;
    for (const ReconciledSample& s : p.series)
      points.push_back({how.start_ns + s.nvml.time_delta_ns, s.nvml.seq, s.nvml.process_used});
    text += fmt::format("    timeline      |{}| {} samples, top {}\n",
                        sparkline(points, how.axis_start_ns, how.axis_end_ns, kSparkWidth),
                        p.series.size(), human_size(at.process_used));
  }
}

std::vector<size_t> thinned_samples(const std::vector<ReconciledSample>& series,
                                    size_t max_samples) {
  std::vector<size_t> kept;
  if (max_samples == 0 || series.size() <= max_samples) {
    for (size_t i = 0; i < series.size(); ++i) kept.push_back(i);
    return kept;
  }
  // Stretches of equal counts (samples come about evenly in time); each keeps its highest
  // process figure and its highest device figure: at most max_samples entries in all.
  const size_t stretches = std::max<size_t>(1, max_samples / 2);
  for (size_t k = 0; k < stretches; ++k) {
    const size_t begin = k * series.size() / stretches, end = (k + 1) * series.size() / stretches;
    if (begin == end) continue;
    size_t process = begin, used = begin;
    for (size_t i = begin; i < end; ++i) {
      if (series[i].nvml.process_used > series[process].nvml.process_used) process = i;
      if (series[i].nvml.used > series[used].nvml.used) used = i;
    }
    kept.push_back(std::min(process, used));
    if (process != used) kept.push_back(std::max(process, used));
  }
  return kept;
}

void write_nvidia_smi(JsonWriter& json, const std::vector<NvidiaSmiPeak>& peaks,
                      std::optional<int32_t> device, bool samples, size_t max_samples) {
  json.key("nvidia_smi");
  json.begin_array();
  for (const NvidiaSmiPeak& p : peaks) {
    if (device && *device != p.device) continue;
    const NvmlSample& at = p.at.nvml;
    json.begin_object();
    json.field("device", p.device);
    json.field("listed", p.listed);
    json.object("peak", [&] {
      json.field("time_ns", at.time_delta_ns);
      json.field("seq", at.seq);
      json.field("process_bytes", at.process_used);
      json.field("allocated_bytes", p.at.allocated);
      json.field("untracked_bytes", p.listed ? p.untracked() : 0);
      json.field("device_total_bytes", at.total);
      json.field("device_used_bytes", at.used);
      json.field("device_free_bytes", p.device_free());
    });
    if (samples) {
      json.key("samples");
      json.begin_array();
      for (size_t i : thinned_samples(p.series, max_samples)) {
        const ReconciledSample& s = p.series[i];
        json.begin_object();
        json.field("reason", format::to_string(s.nvml.reason));
        json.field("time_ns", s.nvml.time_delta_ns);
        json.field("seq", s.nvml.seq);
        json.field("process_bytes", s.nvml.process_used);
        json.field("allocated_bytes", s.allocated);
        json.field("device_used_bytes", s.nvml.used);
        json.end_object();
      }
      json.end_array();
    }
    json.end_object();
  }
  json.end_array();
}

}  // namespace gmemhook::analysis

// The nvidia-smi lines of summary and peak: per device, what NVML counted for the
// process at its peak, split into what this log allocated and what no allocation explains, the
// device's free memory then, and (summary) the series of samples. Text and JSON.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analyzer/model/nvml_samples.h"
#include "analyzer/output/json_writer.h"

namespace gmemhook::analysis {

// `device`: --device, when given. `timeline`: also the samples as a sparkline over
// [axis_start_ns, axis_end_ns] (absolute CLOCK_MONOTONIC; the process file started at start_ns).
struct NvidiaSmiText {
  std::optional<int32_t> device;
  bool timeline = false;
  uint64_t start_ns = 0, axis_start_ns = 0, axis_end_ns = 0;
};
void append_nvidia_smi(std::string& text, const std::vector<NvidiaSmiPeak>& peaks,
                       const NvidiaSmiText& how);

// "nvidia_smi": an array, one object per device (docs/json.md); with `samples`, each sample too,
// or, when `max_samples` is not 0 and there are more, about that many: per stretch of the series
// the samples with the most for the process and for the device, so no high is lost (the page).
void write_nvidia_smi(JsonWriter& json, const std::vector<NvidiaSmiPeak>& peaks,
                      std::optional<int32_t> device, bool samples, size_t max_samples = 0);

// The indices of `series` that write_nvidia_smi keeps for `max_samples` (all when 0), in order.
std::vector<size_t> thinned_samples(const std::vector<ReconciledSample>& series,
                                    size_t max_samples);

}  // namespace gmemhook::analysis

// One side of `gmemhook diff`: every process of a run with, per device, the device memory live
// at its peak (or at the end, for --leaks) grouped by call site, stacks already resolved, so the
// logs can be closed before the two sides are compared.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/reports/run_warnings.h"
#include "analyzer/symbols/frame.h"

namespace gmemhook::analysis {

struct SiteFrames {
  std::vector<Frame> frames;  // innermost first
  uint64_t bytes = 0, count = 0;
};

struct DeviceSites {
  int32_t device = -1;
  uint64_t total_bytes = 0;  // the peak, or what was live at the end
  std::vector<SiteFrames> sites;
  // The same for PyTorch's blocks, when the device has them: compared instead of the
  // segments when both sides have it.
  bool has_allocated = false;
  uint64_t allocated_total_bytes = 0;
  std::vector<SiteFrames> allocated_sites;
};

struct ProcessSites {
  uint64_t pid = 0;
  std::string exe, rank;
  std::string title;                  // process_title(): "process 48213 python (rank 3 of 8)"
  std::vector<DeviceSites> devices;   // by device
  std::vector<int32_t> devices_used;  // every device with device memory, whatever --device says
};

struct SideOptions {
  bool leaks = false;             // the live set at the end instead of at the peak
  std::optional<int32_t> device;  // only this device
  std::vector<std::string> apis;  // only these entry points (empty: all)
};

// Reads every process of `run` (a run directory or one process directory), in pid order, into
// `sites`. Warnings go to `warnings`. Returns kExitOk, or kExitUnreadable after saying why on
// `err`.
int read_side(const std::filesystem::path& run, const SideOptions& options, RunWarnings& warnings,
              std::vector<ProcessSites>& sites, std::FILE* out, std::FILE* err);

}  // namespace gmemhook::analysis

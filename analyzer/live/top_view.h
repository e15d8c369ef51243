// What `gmemhook top` shows at one refresh, as plain data: per process (rank) and device the
// live bytes, the peak so far, the recent timeline, and the user sites live now with their growth
// since the previous refresh. The screen, the --once text and --json all render this.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/model/replay.h"
#include "analyzer/model/timeline.h"

namespace gmemhook::analysis {

enum class ProcessState : uint8_t {
  Starting,  // its directory exists, the process file holds no process-info record yet
  Running,
  Exited,   // an End record: exit()/_exit()/exec
  Killed,   // no End record and the process is gone (killed or crashed)
  Damaged,  // its logs could not be read further (the error says why)
};

const char* to_string(ProcessState state);

// One row of sites, grouped by the line of user code that made them.
struct SiteLine {
  std::string where;  // user_frame_text(): "/w/train.py:42 in step"
  std::string api;    // the entry point(s) ("cudaMalloc"; "blocks" for PyTorch's blocks)
  uint64_t bytes = 0, count = 0;
  int64_t growth = 0;  // bytes more than at the previous refresh (negative: fewer)
};

// One device's memory of one kind (device, pinned host, managed) in one process.
struct DeviceView {
  SeriesKey key;
  uint64_t live_bytes = 0, live_count = 0;
  uint64_t peak_bytes = 0, peak_time_ns = 0;  // since the process started (absolute monotonic)
  // PyTorch's caching allocator seen (its blocks were recorded): what its blocks hold, the
  // allocated layer; live_bytes above is then the reserved layer (segments from CUDA).
  std::optional<uint64_t> allocated_bytes, allocated_peak_bytes;
  std::vector<TimelinePoint> recent;  // live bytes over the window, oldest first
  uint64_t window_start_ns = 0, window_end_ns = 0;
  std::vector<SiteLine> sites;  // largest first, at most the requested number
};

struct ProcessView {
  std::string dir;  // the <exe>.<pid> directory
  uint64_t pid = 0;
  std::string exe, rank;
  ProcessState state = ProcessState::Starting;
  std::optional<int64_t> exit_status;  // Exited
  std::string error;                   // Damaged: the read error
  uint64_t events = 0, threads = 0;
  uint64_t start_realtime_ns = 0;
  uint64_t start_monotonic_ns = 0;  // the zero of the JSON's *_time_ns (as in the reports)
  std::vector<DeviceView> devices;
};

struct TopView {
  std::string run;
  uint64_t taken_realtime_ns = 0;
  std::vector<ProcessView> processes;  // by pid
};

}  // namespace gmemhook::analysis

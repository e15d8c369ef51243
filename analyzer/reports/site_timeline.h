// A memory timeline stacked by call site, in bounded size: per device and kind of
// memory, live bytes sampled into a fixed number of time buckets from the process's start to its
// end, split into the top rows of user code plus "other". What the HTML page draws and the
// Perfetto trace counts.
//
// Two passes over a process: the first (with PeakSites and BlockLayer) finds the rows worth a
// colour — the largest at the peak and at the end — the second samples them. A bucket keeps the
// state at its highest moment, so a spike shorter than a bucket is never averaged away, and a
// bucket no event fell in repeats the state the previous one ended with.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/model/replay.h"
#include "analyzer/reports/process_context.h"

namespace gmemhook::analysis {

// One colour of a stacked timeline: a line of user code and the stack that reached it first.
struct TimelineRow {
  std::string site;                            // user_frame_text(): "/w/train.py:42 in step"
  const std::vector<Frame>* frames = nullptr;  // the row's largest stack at the peak or end
  std::string kind;  // the entry point ("cudaMalloc", "PyTorch allocator")
};

struct TimelineFailure {
  uint64_t time_ns = 0;  // since the process started
  uint64_t seq = 0, bytes = 0;
  std::string what;   // "cudaMalloc: cudaErrorMemoryAllocation (2)"
  std::string site;   // user_frame_text() of its stack
  size_t bucket = 0;  // the bucket its time falls in: where the page marks it
};

// One stacked timeline: a device's memory. When PyTorch's blocks exist on the device, the rows
// stack the allocated layer (tensors) and `reserved` is what the allocator held from CUDA.
struct SiteTrack {
  SeriesKey key;
  bool allocated_layer = false;   // rows are blocks; `reserved` holds the segments' bytes
  std::vector<TimelineRow> rows;  // the top rows; bucket values have one more: "other"
  std::vector<uint64_t> time_ns;  // per bucket: the moment sampled, since the process started
  std::vector<uint64_t> seq;      // ... and the event then current (applied, or about to be)
  // ... and the last event whose change the bucket's state includes (0: none yet): what "after
  // event N" on the page names. `seq` cannot say it: a bucket an event starts, whose highest
  // moment is its first (the event frees), shows the state before that event under its number.
  std::vector<uint64_t> after_seq;
  // The buckets whose state is a moment inside event after_seq, not after it: a graph launch
  // whose graph allocates and frees makes its memory live and gives it back in one call.
  std::vector<size_t> inside_event;
  uint64_t end_time_ns = 0;                   // the buckets' span: to the exit, else the last event
  std::vector<std::vector<uint64_t>> values;  // per row (+ other): bytes per bucket
  std::vector<uint64_t> reserved;             // allocated_layer: reserved bytes per bucket
  uint64_t peak_bytes = 0, peak_time_ns = 0, peak_seq = 0;  // of the stacked layer, exact
  uint64_t reserved_peak_bytes = 0;                         // allocated_layer only
  uint64_t end_bytes = 0;
  // The bucket the peak's event was applied in, which holds the peak: where the page marks it.
  // Not findable from `seq`: a bucket an event starts carries that event's number before its
  // change is applied, and every bucket after a process's last event repeats the last number.
  size_t peak_bucket = 0;
  std::vector<TimelineFailure> failures;  // the first ones the replay kept
  // The stacks live at the peak and their bytes, largest first: the flame graph's input.
  std::vector<std::pair<const std::vector<Frame>*, uint64_t>> peak_stacks;
};

struct SiteTimelineOptions {
  size_t buckets = 800;
  size_t rows = 8;                // rows with a colour of their own per track
  std::optional<int32_t> device;  // --device (--api is the process context's)
};

// Both passes over the process (--api applied by `process`). Frames point into `process`'s
// stacks: it must outlive the tracks.
std::vector<SiteTrack> site_timeline(ProcessContext& process, const SiteTimelineOptions& options);

}  // namespace gmemhook::analysis

// How the text reports write numbers people read: sizes in binary units ("48.0 MiB"), times
// since the process started ("1.25 ms"), wall-clock times in UTC, a sparkline of a timeline, and
// labels of memory kinds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/model/replay.h"
#include "analyzer/model/timeline.h"

namespace gmemhook::analysis {

// "512 B", "1.5 KiB", "48.0 MiB", "1.0 TiB".
std::string human_size(uint64_t bytes);
// "48.0 MiB (50331648 bytes)": the exact number next to the readable one.
std::string size_and_bytes(uint64_t bytes);
// A duration: "850 ns", "12.3 µs", "1.25 ms", "2.500 s", "1 h 02 min 05 s".
std::string human_duration(uint64_t ns);
// The same for a time measured in steps of `step_ns` (the kernel's tick: 4 ms on most kernels):
// with steps of 1 ms or more, whole ms ("0 ms", "592 ms", "12.348 s"), as finer digits would be
// noise of the step; with finer steps as above.
std::string human_duration(uint64_t ns, uint64_t step_ns);
// A wall-clock time in UTC: "2026-01-30T14:15:03.123456Z" ("?" past what gmtime can say).
std::string utc_time(uint64_t realtime_ns);
// "device 0", "device ?" (unknown), "pinned host memory", "managed memory on device 1".
std::string series_label(const SeriesKey& key);
// A fixed-width sparkline of live bytes between `start_ns` and `end_ns` (absolute times).
std::string sparkline(const std::vector<TimelinePoint>& points, uint64_t start_ns, uint64_t end_ns,
                      size_t width);
// "1 allocation", "3 allocations".
std::string plural(uint64_t n, const char* one, const char* many);
// The last path component ("/usr/bin/python3.12" -> "python3.12").
std::string base_name(const std::string& path);

}  // namespace gmemhook::analysis

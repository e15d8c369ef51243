// Number and label formatting for the text reports (see text_format.h).
#include "analyzer/output/text_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>

namespace gmemhook::analysis {

std::string human_size(uint64_t bytes) {
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double v = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  // Switch units before rounding would print "1024.0".
  while (v >= 1023.95 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    ++unit;
  }
  return fmt::format("{:.1f} {}", v, kUnits[unit]);
}

std::string size_and_bytes(uint64_t bytes) {
  if (bytes < 1024) return plural(bytes, "byte", "bytes");
  return fmt::format("{} ({} bytes)", human_size(bytes), bytes);
}

std::string human_duration(uint64_t ns) {
  if (ns < 1000) return fmt::format("{} ns", ns);
  if (ns < 1000000) return fmt::format("{:.1f} \u00b5s", ns / 1e3);
  if (ns < 1000000000) return fmt::format("{:.2f} ms", ns / 1e6);
  if (ns < 100000000000ull) return fmt::format("{:.3f} s", ns / 1e9);
  const uint64_t s = ns / 1000000000;
  if (s < 3600) return fmt::format("{} min {:02} s", s / 60, s % 60);
  return fmt::format("{} h {:02} min {:02} s", s / 3600, s / 60 % 60, s % 60);
}

std::string human_duration(uint64_t ns, uint64_t step_ns) {
  if (step_ns < 1000000) return human_duration(ns);
  const uint64_t ms = (ns + 500000) / 1000000;
  if (ms < 1000) return fmt::format("{} ms", ms);
  return human_duration(ms * 1000000);
}

std::string utc_time(uint64_t realtime_ns) {
  std::time_t secs = static_cast<std::time_t>(realtime_ns / 1000000000);
  std::tm tm{};
  if (!gmtime_r(&secs, &tm)) return "?";
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:06}Z", buf, realtime_ns % 1000000000 / 1000);
}

std::string series_label(const SeriesKey& key) {
  const std::string device = key.device == kNoDevice ? "?" : std::to_string(key.device);
  switch (key.memory) {
    case format::MemoryType::HostPinned:
      return "pinned host memory";
    case format::MemoryType::Managed:
      return "managed memory, device " + device;
    default:
      return "device " + device;
  }
}

std::string sparkline(const std::vector<TimelinePoint>& points, uint64_t start_ns, uint64_t end_ns,
                      size_t width) {
  static const char* const kBars[] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                      "\u2585", "\u2586", "\u2587", "\u2588"};
  if (points.empty() || width == 0) return {};
  if (end_ns <= start_ns) end_ns = start_ns + 1;
  // Each column shows the highest value live during its time slice: the last value before the
  // slice and every point inside it.
  std::vector<uint64_t> column(width, 0);
  uint64_t carried = 0, max = 0;
  size_t p = 0;
  for (size_t c = 0; c < width; ++c) {
    const uint64_t slice_end =
        start_ns + static_cast<uint64_t>((end_ns - start_ns) * (double(c + 1) / double(width)));
    uint64_t high = carried;
    while (p < points.size() && (points[p].time_ns <= slice_end || c + 1 == width)) {
      high = std::max(high, points[p].bytes);
      carried = points[p].bytes;
      ++p;
    }
    column[c] = high;
    max = std::max(max, high);
  }
  std::string out;
  for (uint64_t v : column) {
    if (v == 0 || max == 0) {
      out += ' ';
      continue;
    }
    size_t level = static_cast<size_t>(double(v) / double(max) * 7.999);
    out += kBars[std::min<size_t>(level, 7)];
  }
  return out;
}

std::string plural(uint64_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace gmemhook::analysis

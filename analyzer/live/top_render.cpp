// Text and JSON of a TopView.
#include "analyzer/live/top_render.h"

#include <fmt/format.h>

#include <ctime>

#include "analyzer/output/command_name.h"
#include "analyzer/output/json_writer.h"
#include "analyzer/output/terminal_text.h"
#include "analyzer/output/text_format.h"

namespace gmemhook::analysis {

namespace {

std::string wall_clock(uint64_t realtime_ns) {
  const time_t t = static_cast<time_t>(realtime_ns / 1'000'000'000ull);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string signed_size(int64_t bytes) {
  if (bytes == 0) return "0";
  const uint64_t magnitude = bytes < 0 ? 0 - static_cast<uint64_t>(bytes) : uint64_t(bytes);
  return (bytes < 0 ? "-" : "+") + human_size(magnitude);
}

std::string process_line(const ProcessView& p) {
  std::string line = fmt::format("pid {} {}", p.pid, p.exe.empty() ? p.dir : p.exe);
  if (!p.rank.empty()) line += fmt::format(" (rank {})", p.rank);
  line += fmt::format("  {}", to_string(p.state));
  if (p.exit_status) line += fmt::format(" (status {})", *p.exit_status);
  if (p.state == ProcessState::Damaged) line += ": " + p.error;
  if (p.state != ProcessState::Starting)
    line += fmt::format("  {}, {}", plural(p.events, "event", "events"),
                        plural(p.threads, "thread", "threads"));
  return line + "\n";
}

void append_device(std::string& out, const DeviceView& d, const TextLayout& layout) {
  out +=
      fmt::format("  {:<22} live {} in {}  peak {}", series_label(d.key), human_size(d.live_bytes),
                  plural(d.live_count, "allocation", "allocations"), human_size(d.peak_bytes));
  if (d.allocated_bytes)
    out += fmt::format("  allocated {} (peak {}) of the reserved", human_size(*d.allocated_bytes),
                       human_size(d.allocated_peak_bytes.value_or(0)));
  out += "\n";
  out += fmt::format("    last {:<8} |{}|\n", human_duration(d.window_end_ns - d.window_start_ns),
                     sparkline(d.recent, d.window_start_ns, d.window_end_ns, layout.spark_width));
  if (d.sites.empty()) return;
  out += fmt::format("    {:>11} {:>11} {:>7}  {}\n", "LIVE", "GROWTH", "COUNT", "USER SITE");
  for (const SiteLine& s : d.sites)
    out += fmt::format("    {:>11} {:>11} {:>7}  {}  [{}]\n", human_size(s.bytes),
                       signed_size(s.growth), s.count, s.where, s.api);
}

}  // namespace

std::string top_text(const TopView& view, const TextLayout& layout) {
  std::string out =
      fmt::format("gmemhook top {}  {}  ({})\n", view.run, wall_clock(view.taken_realtime_ns),
                  plural(view.processes.size(), "process", "processes"));
  if (view.processes.empty()) out += "no process has written to this run yet\n";
  for (size_t i = 0; i < view.processes.size(); ++i) {
    if (layout.process && *layout.process != i) continue;
    const ProcessView& p = view.processes[i];
    out += "\n" + process_line(p);
    for (size_t k = 0; k < p.devices.size(); ++k)
      if (!layout.device || *layout.device == k) append_device(out, p.devices[k], layout);
    if (p.devices.empty() && p.state != ProcessState::Starting)
      out += "  no GPU memory recorded yet\n";
  }
  if (layout.hint)
    out += fmt::format("\nhint: {} top {} follows it live; {} leaks {} once it has ended\n",
                       command_name(), shell_word(view.run), command_name(), shell_word(view.run));
  return terminal_lines(out);
}

std::string top_json(const TopView& view) {
  std::string out;
  JsonWriter j(out);
  j.begin_object();
  j.field("run", view.run);
  j.field("taken_realtime_ns", view.taken_realtime_ns);
  j.objects("processes", view.processes, [&](const ProcessView& p) {
    j.field("dir", p.dir);
    j.field("pid", p.pid);
    j.field("exe", p.exe);
    j.field("rank", p.rank);
    j.field("state", to_string(p.state));
    j.field("exit_status", p.exit_status);
    j.field("error", p.error);
    j.field("events", p.events);
    j.field("threads", p.threads);
    j.field("start_realtime_ns", p.start_realtime_ns);
    j.objects("devices", p.devices, [&](const DeviceView& d) {
      j.key("device");
      if (d.key.device < 0)
        j.null();
      else
        j.value(d.key.device);
      j.field("memory", format::to_string(d.key.memory));
      j.field("live_bytes", d.live_bytes);
      j.field("live_count", d.live_count);
      j.field("peak_bytes", d.peak_bytes);
      const auto since_start = [&p](uint64_t t) {
        return t > p.start_monotonic_ns ? t - p.start_monotonic_ns : 0;
      };
      j.field("peak_time_ns", since_start(d.peak_time_ns));
      j.field("allocated_bytes", d.allocated_bytes);
      j.field("allocated_peak_bytes", d.allocated_peak_bytes);
      j.key("timeline");
      j.begin_array();
      for (const TimelinePoint& t : d.recent) j.inline_array({since_start(t.time_ns), t.bytes});
      j.end_array();
      j.objects("sites", d.sites, [&](const SiteLine& s) {
        j.field("where", s.where);
        j.field("api", s.api);
        j.field("bytes", s.bytes);
        j.field("count", s.count);
        j.field("growth_bytes", s.growth);
      });
    });
  });
  j.end_object();
  out += "\n";
  return out;
}

}  // namespace gmemhook::analysis

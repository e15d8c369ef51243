// ProcessWatch: one followed process, from new events to the rows `gmemhook top` shows.
#include "analyzer/live/process_watch.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "analyzer/live/clocks.h"
#include "analyzer/log/name_table.h"
#include "analyzer/log/read_error.h"
#include "analyzer/output/stack_text.h"
#include "analyzer/output/text_format.h"

namespace gmemhook::analysis {

namespace {

// The window's points: the value live when it opened, then every point inside it, then the value
// now (so an idle process's line runs on to the present).
std::vector<TimelinePoint> window_points(const std::vector<TimelinePoint>& all, uint64_t start_ns,
                                         uint64_t end_ns, uint64_t live_now) {
  std::vector<TimelinePoint> out;
  uint64_t before = 0;
  bool any_before = false;
  for (const TimelinePoint& p : all) {
    if (p.time_ns < start_ns) {
      before = p.bytes;
      any_before = true;
    } else if (p.time_ns <= end_ns) {
      out.push_back(p);
    }
  }
  if (any_before) out.insert(out.begin(), TimelinePoint{start_ns, 0, before});
  out.push_back(TimelinePoint{end_ns, 0, live_now});
  return out;
}

}  // namespace

const char* to_string(ProcessState state) {
  return name_in(state, {"starting", "running", "exited", "killed", "damaged"});
}

void sort_site_lines(std::vector<SiteLine>& lines, SortBy by) {
  std::stable_sort(lines.begin(), lines.end(), [by](const SiteLine& a, const SiteLine& b) {
    switch (by) {
      case SortBy::Growth:
        if (a.growth != b.growth) return a.growth > b.growth;
        break;
      case SortBy::Count:
        if (a.count != b.count) return a.count > b.count;
        break;
      case SortBy::Bytes:
        break;
    }
    return a.bytes > b.bytes;
  });
}

bool process_alive(uint64_t pid, uint64_t start_monotonic_ns) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  // Field 22, starttime, counted after the ")" that ends the command name (which may hold
  // spaces and parentheses itself).
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return true;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
  }
  const long ticks = sysconf(_SC_CLK_TCK);
  if (field.empty() || ticks <= 0) return true;
  // starttime counts from boot including suspended time (CLOCK_BOOTTIME); the log's start is
  // CLOCK_MONOTONIC, which does not: bring it onto the same clock. A second of slack covers the
  // tick's resolution.
  const uint64_t started_ns =
      std::stoull(field) * (1'000'000'000ull / static_cast<uint64_t>(ticks));
  const uint64_t suspended_ns = clock_now_ns(CLOCK_BOOTTIME) - clock_now_ns(CLOCK_MONOTONIC);
  return started_ns <= start_monotonic_ns + suspended_ns + 1'000'000'000ull;
}

ProcessWatch::ProcessWatch(std::filesystem::path dir) : follower_(std::move(dir)) {
  replay_.observe(blocks_);
}

bool ProcessWatch::writer_done() const { return follower_.process().end.has_value() || gone_; }

void ProcessWatch::update(uint64_t now_ns, const WatchOptions& options) {
  if (!error_.empty()) return;
  try {
    if (!follower_.refresh()) return;
    // Looked at before reading: a process seen gone has committed all it ever will.
    if (!follower_.process().end && !gone_)
      gone_ = !process_alive(follower_.process().info.pid,
                             follower_.process().header.start_monotonic_ns);
    follower_.read_new_events(replay_, now_ns, options.gap_wait_ns, writer_done());
  } catch (const ReadError& e) {
    error_ = e.what();
  }
}

ProcessState ProcessWatch::state() const {
  if (!error_.empty()) return ProcessState::Damaged;
  if (!follower_.ready()) return ProcessState::Starting;
  if (follower_.process().end) return ProcessState::Exited;
  return gone_ ? ProcessState::Killed : ProcessState::Running;
}

const std::vector<Frame>& ProcessWatch::frames(uint32_t stack) {
  const auto& snapshots = follower_.process().snapshots;
  // Objects loaded since the resolver was made would name nothing: make it again.
  if (!resolver_ || snapshots.size() != resolver_snapshots_) {
    resolver_ = std::make_unique<StackResolver>(
        StackResolver::latest_modules(snapshots),
        [this](size_t i) { return i < follower_.thread_count() ? &follower_.thread(i) : nullptr; });
    resolver_snapshots_ = snapshots.size();
  }
  return resolver_->resolve(stacks_, stack);
}

DeviceView ProcessWatch::device_view(uint16_t index, uint64_t now_ns, const WatchOptions& options) {
  const Series& s = replay_.series()[index];
  DeviceView d;
  d.key = s.key;
  d.live_bytes = s.live_bytes;
  d.live_count = s.live_count;
  d.peak_bytes = s.peak_bytes;
  d.peak_time_ns = s.peak_time_ns;
  const BlockDevice* blocks =
      s.key.memory == format::MemoryType::Device ? blocks_.device(s.key.device) : nullptr;
  if (blocks) {
    d.allocated_bytes = blocks->live_bytes;
    d.allocated_peak_bytes = blocks->peak_bytes;
  }
  // A running process's window ends now; a finished one's at its last event.
  const uint64_t end_ns = state() == ProcessState::Running
                              ? std::max(now_ns, replay_.last_time_ns())
                              : replay_.last_time_ns();
  d.window_end_ns = end_ns;
  // A process younger than the window: its line starts when it did.
  d.window_start_ns = std::max(end_ns > options.window_ns ? end_ns - options.window_ns : 0,
                               follower_.process().header.start_monotonic_ns);
  d.recent = window_points(s.timeline.points(), d.window_start_ns, end_ns, s.live_bytes);

  // Rows by user line and entry point: PyTorch's blocks when its allocator reported them (the
  // tensors the user asked for), else what CUDA handed out.
  std::map<std::string, SiteLine> rows;
  auto add = [&](uint32_t stack, const std::string& api, uint64_t bytes, uint64_t count) {
    if (bytes == 0 && count == 0) return;
    std::string where = user_frame_text(frames(stack));
    SiteLine& row = rows[where + '\t' + api];
    row.where = std::move(where);
    row.api = api;
    row.bytes += bytes;
    row.count += count;
  };
  if (blocks) {
    for (const BlockGroup& g : blocks_.groups_now(&s.key.device))
      add(g.stack, "blocks", g.bytes, g.count);
  } else {
    for (const SiteGroup& g : replay_.site_groups(index)) {
      const format::ApiInfo* api = format::find_api(g.api);
      add(g.stack, api ? api->name : "?", g.bytes, g.count);
    }
  }
  const std::string label = series_label(s.key) + '\n';
  for (auto& [key, row] : rows) {
    auto it = previous_.find(label + key);
    const uint64_t before = it == previous_.end() ? 0 : it->second;
    row.growth = static_cast<int64_t>(row.bytes) - static_cast<int64_t>(before);
    d.sites.push_back(row);
  }
  // The baseline of the next view: rows gone since count from zero when they come back.
  for (auto it = previous_.begin(); it != previous_.end();)
    it = it->first.starts_with(label) ? previous_.erase(it) : std::next(it);
  for (const auto& [key, row] : rows) previous_[label + key] = row.bytes;
  sort_site_lines(d.sites, options.sort);
  if (options.sites && d.sites.size() > options.sites) d.sites.resize(options.sites);
  return d;
}

ProcessView ProcessWatch::view(uint64_t now_ns, const WatchOptions& options) {
  ProcessView p;
  p.dir = follower_.dir().filename().string();
  p.state = state();
  p.error = error_;
  if (!follower_.ready()) return p;
  const ProcessFile& f = follower_.process();
  p.pid = f.info.pid;
  p.exe = base_name(f.info.exe);
  p.rank = f.info.rank;
  if (f.end) p.exit_status = f.end->status;
  p.events = follower_.events_read();
  p.threads = follower_.thread_count();
  p.start_realtime_ns = f.header.start_realtime_ns;
  p.start_monotonic_ns = f.header.start_monotonic_ns;
  for (size_t i = 0; i < replay_.series().size(); ++i) {
    const Series& s = replay_.series()[i];
    if (s.allocations == 0 && s.live_bytes == 0 && s.failed == 0) continue;
    p.devices.push_back(device_view(static_cast<uint16_t>(i), now_ns, options));
  }
  std::sort(p.devices.begin(), p.devices.end(), [](const DeviceView& a, const DeviceView& b) {
    if (a.key.memory != b.key.memory) return a.key.memory < b.key.memory;
    return a.key.device < b.key.device;
  });
  return p;
}

}  // namespace gmemhook::analysis

// RunWatch: the process directories of a run, found as they appear.
#include "analyzer/live/run_watch.h"

#include <algorithm>

#include "analyzer/live/clocks.h"
#include "analyzer/log/read_error.h"
#include "analyzer/log/run_dir.h"
#include "gmemhook/format.h"

namespace gmemhook::analysis {

RunWatch::RunWatch(std::filesystem::path run) : run_(std::move(run)) {
  std::error_code ec;
  if (!std::filesystem::is_directory(run_, ec) &&
      !(run_.filename() == format::kProcessFileName && std::filesystem::is_regular_file(run_, ec)))
    throw ReadError(run_.string(), std::nullopt,
                    "expected a run directory (or one process directory), it does not exist");
}

void RunWatch::update(uint64_t now, const WatchOptions& options) {
  std::vector<std::filesystem::path> dirs;
  try {
    dirs = find_process_dirs(run_);
  } catch (const ReadError&) {
    // No process has started writing yet: an empty run is shown as such, and looked at again.
  }
  for (const auto& dir : dirs) {
    auto& watch = processes_[dir.string()];
    if (!watch) watch = std::make_unique<ProcessWatch>(dir);
  }
  for (auto& [dir, watch] : processes_) watch->update(now, options);
}

bool RunWatch::waiting() const {
  return std::any_of(processes_.begin(), processes_.end(),
                     [](const auto& p) { return p.second->waiting(); });
}

TopView RunWatch::view(uint64_t now, const WatchOptions& options) {
  TopView v;
  v.run = run_.string();
  v.taken_realtime_ns = realtime_now_ns();
  for (auto& [dir, watch] : processes_) v.processes.push_back(watch->view(now, options));
  std::stable_sort(v.processes.begin(), v.processes.end(),
                   [](const ProcessView& a, const ProcessView& b) { return a.pid < b.pid; });
  return v;
}

}  // namespace gmemhook::analysis

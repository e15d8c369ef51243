// The stderr summary of `gmemhook run` (see run_summary.h).
#include "analyzer/run/run_summary.h"

#include <fmt/format.h>

#include <algorithm>

#include "analyzer/log/reader.h"
#include "analyzer/output/command_name.h"
#include "analyzer/output/terminal_text.h"

namespace gmemhook::analysis {

namespace fs = std::filesystem;

namespace {

// Processes without CUDA calls (the shell of a pipeline, torchrun's launcher) are only named,
// this many at most.
constexpr size_t kQuietProcessesNamed = 5;

std::string outcome(const RunRecord& r) {
  const std::string what =
      r.command.empty() ? "the command" : fs::path(r.command[0]).filename().string();
  if (r.signal) {
    std::optional<std::string> verdict = signal_verdict(*r.signal);
    std::string name = signal_name(*r.signal);
    if (verdict == "crashed") return fmt::format("{} crashed ({})", what, name);
    return fmt::format("{} was {} by {}", what, verdict.value_or("ended"), name);
  }
  return fmt::format("{} exited with code {}", what, r.exit_code.value_or(-1));
}

std::string duration(const RunRecord& r) {
  if (!r.end_realtime_ns || *r.end_realtime_ns < r.start_realtime_ns) return "";
  double s = static_cast<double>(*r.end_realtime_ns - r.start_realtime_ns) / 1e9;
  return s < 10 ? fmt::format(" after {:.2f}s", s) : fmt::format(" after {:.0f}s", s);
}

}  // namespace

std::vector<RecordedProcess> recorded_processes(const fs::path& run_dir) {
  std::vector<fs::path> dirs;
  try {
    dirs = find_process_dirs(run_dir);
  } catch (const ReadError&) {
    return {};  // no process directory at all
  }
  std::vector<RecordedProcess> out;
  for (const fs::path& dir : dirs) {
    RecordedProcess p;
    p.name = dir.filename().string();
    try {
      ProcessReader reader = ProcessReader::open(dir);
      reader.for_each_event([](const format::Event&, const ThreadFileReader&) {});
      p.events = reader.events_read();
      p.rank = reader.info().rank;
      p.ended = reader.end().has_value();
    } catch (const ReadError& e) {
      p.error = e.what();
    }
    out.push_back(std::move(p));
  }
  return out;
}

void print_run_summary(std::FILE* err, const fs::path& run_dir, const RunRecord& record,
                       const std::vector<RecordedProcess>& processes) {
  std::vector<const RecordedProcess*> active, quiet;
  for (const RecordedProcess& p : processes)
    (p.events > 0 || !p.error.empty() ? active : quiet).push_back(&p);

  std::string head = fmt::format("gmemhook: {}{}; ", outcome(record), duration(record));
  if (active.empty())
    head += fmt::format("no CUDA calls recorded in {}", run_dir.string());
  else
    head += fmt::format("{} process{} with CUDA calls recorded in {}", active.size(),
                        active.size() == 1 ? "" : "es", run_dir.string());
  // The command's and its processes' names are the traced program's bytes (terminal_text.h).
  fmt::print(err, "{}\n", terminal_text(head));

  size_t width = 0;
  for (const RecordedProcess* p : active) width = std::max(width, p->name.size());
  for (const RecordedProcess* p : active) {
    std::string line = fmt::format("  {:<{}}", p->name, width);
    if (!p->error.empty()) {
      line += "  unreadable: " + p->error;
    } else {
      line += fmt::format("  {:>9} event{}", p->events, p->events == 1 ? "" : "s");
      if (!p->rank.empty()) line += " (rank " + p->rank + ")";
      if (!p->ended) line += " (ended abruptly)";
    }
    fmt::print(err, "{}\n", terminal_text(line));
  }
  if (!quiet.empty()) {
    std::string names;
    for (size_t i = 0; i < quiet.size() && i < kQuietProcessesNamed; ++i)
      names += (i ? ", " : "") + quiet[i]->name;
    if (quiet.size() > kQuietProcessesNamed)
      names += fmt::format(", and {} more", quiet.size() - kQuietProcessesNamed);
    fmt::print(err, "  {} process{} without CUDA calls: {}\n", quiet.size(),
               quiet.size() == 1 ? "" : "es", terminal_text(names));
  }
  // No directory means no CUDA call, traced or not. A command that died of a signal may have
  // died before its first one (as under two clashing copies of the hook): guessing static
  // linking there would send the user after the wrong cause.
  if (processes.empty() && !record.signal)
    fmt::print(err,
               "  no process called CUDA, or none was traced: a statically linked command, or "
               "one that clears LD_PRELOAD, cannot be preloaded\n");
  fmt::print(err, "run: {} summary {}\n", command_name(),
             terminal_text(shell_word(run_dir.string())));
}

}  // namespace gmemhook::analysis

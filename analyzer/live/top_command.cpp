// `gmemhook top`: one snapshot (--once, --json), a batch of snapshots when stdout is no terminal,
// or the full-screen view.
#include "analyzer/live/top_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "analyzer/live/clocks.h"
#include "analyzer/live/run_watch.h"
#include "analyzer/live/top_render.h"
#include "analyzer/live/top_screen.h"
#include "analyzer/log/read_error.h"

namespace gmemhook::analysis {

namespace {

constexpr int kExitUsage = 2;

struct TopOptions {
  std::string run;
  bool once = false, json = false;
  double interval_s = 1.0, window_s = 120.0;
  size_t sites = 10;
  std::string sort = "bytes";
};

// Reads everything committed so far; events behind a missing sequence number are waited for
// up to options.gap_wait_ns (they may be on their way from another thread), then taken as lost.
void catch_up(RunWatch& watch, const WatchOptions& options) {
  const uint64_t start = monotonic_now_ns();
  watch.update(start, options);
  while (watch.waiting() && monotonic_now_ns() - start < options.gap_wait_ns) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    watch.update(monotonic_now_ns(), options);
  }
}

bool all_ended(const TopView& view) {
  return !view.processes.empty() &&
         std::all_of(view.processes.begin(), view.processes.end(), [](const ProcessView& p) {
           return p.state != ProcessState::Running && p.state != ProcessState::Starting;
         });
}

int top_command(const TopOptions& o) {
  WatchOptions options;
  options.sites = o.sites;
  options.window_ns = static_cast<uint64_t>(o.window_s * 1e9);
  options.sort = o.sort == "growth"  ? SortBy::Growth
                 : o.sort == "count" ? SortBy::Count
                                     : SortBy::Bytes;
  std::unique_ptr<RunWatch> watch;
  try {
    watch = std::make_unique<RunWatch>(o.run);
  } catch (const ReadError& e) {
    fmt::print(stderr, "gmemhook top: {}\n", e.what());
    return kExitUsage;
  }
  if (o.once || o.json) {
    catch_up(*watch, options);
    const TopView view = watch->view(monotonic_now_ns(), options);
    const std::string out = o.json ? top_json(view) : top_text(view, TextLayout{});
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }
  if (isatty(STDOUT_FILENO) && isatty(STDIN_FILENO))
    return run_screen(*watch, options, o.interval_s);
  // Not a terminal (piped, logged): a snapshot per interval, like top -b, until every process
  // has ended.
  TextLayout layout;
  layout.hint = false;
  for (;;) {
    catch_up(*watch, options);
    const TopView view = watch->view(monotonic_now_ns(), options);
    const std::string out = top_text(view, layout) + "\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
    if (all_ended(view)) return 0;
    std::this_thread::sleep_for(std::chrono::duration<double>(o.interval_s));
  }
}

}  // namespace

std::function<int()> add_top_command(CLI::App& top) {
  auto o = std::make_shared<TopOptions>();
  top.add_option("RUN", o->run, "A run directory (or one <exe>.<pid> process directory)")
      ->required();
  top.add_flag("--once", o->once, "Print one snapshot as text and exit");
  top.add_flag("--json", o->json, "Print one snapshot as JSON and exit (docs/json.md)");
  top.add_option("--interval", o->interval_s, "Seconds between refreshes (default 1)")
      ->check(CLI::Range(0.01, 3600.0));
  top.add_option("--top", o->sites, "Site rows per device, largest first; 0 = all (default 10)")
      ->check(CLI::NonNegativeNumber);
  top.add_option("--sort", o->sort, "Order of the site rows: bytes, growth or count")
      ->check(CLI::IsMember({"bytes", "growth", "count"}));
  top.add_option("--window", o->window_s, "Seconds of history in the timeline (default 120)")
      ->check(CLI::Range(1.0, 86400.0));
  return [o] { return top_command(*o); };
}

}  // namespace gmemhook::analysis

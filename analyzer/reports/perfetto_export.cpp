// `gmemhook html --format perfetto`: the run as a Chrome JSON trace for ui.perfetto.dev and
// chrome://tracing: per process and device, counter tracks of the live (or allocated and
// reserved) bytes and of the bytes by top site, and an instant event per failed allocation; drawn
// from the same stacked timeline as the HTML page, sampled finer: a trace viewer zooms. Its line
// in the table of whole-run formats is in html_report.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <climits>

#include "analyzer/output/chrome_trace.h"
#include "analyzer/output/text_format.h"
#include "analyzer/reports/process_walk.h"
#include "analyzer/reports/report_common.h"
#include "analyzer/reports/site_timeline.h"
#include "analyzer/reports/whole_run_format.h"

namespace gmemhook::analysis {

namespace {

constexpr size_t kBucketBudget = 40000;  // counter samples per run, per series
constexpr size_t kMaxBuckets = 4000, kMinBuckets = 200;

// "device 0", "device 0 allocated": one counter track per device and layer.
std::string track_name(const SiteTrack& t, const char* layer) {
  return series_label(t.key) + " " + layer;
}

void export_track(ChromeTrace& trace, uint64_t pid, uint64_t offset_ns, const SiteTrack& t) {
  const std::string total = track_name(t, t.allocated_layer ? "allocated" : "live");
  const std::string reserved = track_name(t, "reserved");
  const std::string by_site = track_name(t, t.allocated_layer ? "allocated by site" : "by site");
  for (size_t i = 0; i < t.time_ns.size(); ++i) {
    // A counter holds its value until the next event: only changes (and the last) are written.
    const bool last = i + 1 == t.time_ns.size();
    bool changed = i == 0 || last || (t.allocated_layer && t.reserved[i] != t.reserved[i - 1]);
    for (size_t r = 0; r < t.values.size() && !changed; ++r)
      changed = t.values[r][i] != t.values[r][i - 1];
    if (!changed) continue;
    const uint64_t ts = offset_ns + t.time_ns[i];
    uint64_t sum = 0;
    std::vector<std::pair<std::string, uint64_t>> sites;
    for (size_t r = 0; r < t.values.size(); ++r) {
      sum += t.values[r][i];
      // Perfetto shows each argument as a track of its own, named after it: a short name.
      sites.emplace_back(
          r < t.rows.size() ? fmt::format("{}. {}", r + 1, t.rows[r].site) : std::string("other"),
          t.values[r][i]);
    }
    trace.counter(pid, total, ts, {{"bytes", sum}});
    if (t.allocated_layer) trace.counter(pid, reserved, ts, {{"bytes", t.reserved[i]}});
    trace.counter(pid, by_site, ts, sites);
  }
  for (const TimelineFailure& f : t.failures)
    trace.instant(pid, 0, "allocation failed: " + f.what, offset_ns + f.time_ns,
                  {{"memory", series_label(t.key)},
                   {"bytes", std::to_string(f.bytes)},
                   {"seq", std::to_string(f.seq)},
                   {"site", f.site}});
}

}  // namespace

int perfetto_export(const WholeRunOptions& options, std::string& out, std::FILE* err) {
  ChromeTrace trace;
  // Times since the first process started: the processes of a run share CLOCK_MONOTONIC.
  uint64_t run_start = UINT64_MAX;
  size_t processes = 0;
  int status = walk_processes(options.run, options.pid, stdout, err, [&](ProcessReader& reader) {
    run_start = std::min(run_start, reader.start_ns());
    ++processes;
  });
  if (status != kExitOk) return status;
  const size_t buckets =
      std::clamp(kBucketBudget / std::max<size_t>(1, processes), kMinBuckets, kMaxBuckets);
  size_t order = 0;
  status = walk_processes(
      options.run, options.pid, stdout, err,
      [&](ProcessReader& reader) {
        const uint64_t pid = reader.info().pid;
        trace.process_name(pid, process_title(reader));
        const std::string& rank = reader.info().rank;
        const bool numeric = !rank.empty() && rank.size() < 10 &&
                             rank.find_first_not_of("0123456789") == std::string::npos;
        trace.process_sort_index(pid, numeric ? std::stoll(rank) : static_cast<int64_t>(order));
        ++order;
        for (size_t i = 0; i < reader.thread_count(); ++i) {
          const uint64_t tid = reader.thread(i).tid();
          trace.thread_name(pid, tid, tid == pid ? "main thread" : fmt::format("thread {}", tid));
        }
        ProcessContext process(reader, options.apis);
        SiteTimelineOptions o;
        o.buckets = buckets;
        o.device = options.device;
        const uint64_t offset = reader.start_ns() - run_start;
        for (const SiteTrack& t : site_timeline(process, o)) export_track(trace, pid, offset, t);
      },
      /*say_skipped=*/false);
  if (status != kExitOk) return status;
  out = trace.finish();
  return kExitOk;
}

}  // namespace gmemhook::analysis

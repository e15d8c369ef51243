// `gmemhook summary`: one screen per process — per device and kind of memory the allocations
// and frees by API, the peak and when, what was live at the end, failed allocations, and how
// the process ended. One pass over the events.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "analyzer/log/cuda_errors.h"
#include "analyzer/log/event_info.h"
#include "analyzer/model/block_layer.h"
#include "analyzer/model/graph_pool.h"
#include "analyzer/model/graph_tracker.h"
#include "analyzer/model/nvml_samples.h"
#include "analyzer/model/pool_tracker.h"
#include "analyzer/output/text_format.h"
#include "analyzer/reports/allocated_layer.h"
#include "analyzer/reports/framework_pool.h"
#include "analyzer/reports/graph_pool_lines.h"
#include "analyzer/reports/nvidia_smi.h"
#include "analyzer/reports/process_context.h"
#include "analyzer/reports/report.h"

namespace gmemhook::analysis {

namespace {

constexpr size_t kTextDepth = 3;      // frames per failed allocation: a summary stays one screen
constexpr size_t kFailuresShown = 1;  // the first; `gmemhook peak` shows what held the memory
constexpr size_t kSparkWidth = 48;

// "cudaMalloc 12, cudaMallocAsync 3".
std::string by_api(const ApiCounts& counts) {
  std::string s;
  for (size_t api = 0; api < counts.size(); ++api)
    if (counts[api]) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", api_name(api), counts[api]);
  return s;
}

void write_by_api(JsonWriter& json, const char* key, const ApiCounts& counts) {
  json.object(key, [&] {
    for (size_t api = 0; api < counts.size(); ++api)
      if (counts[api]) json.field(api_name(api), counts[api]);
  });
}

bool has_vmm(const Series& s) {
  return s.max_physical_bytes || s.max_mapped_bytes || s.max_reserved_bytes;
}

// What `summary` found in one process: the series in report order, the observers' findings and
// the replay's anomalies; rendered as text or JSON.
struct SummaryModel final : public ProcessModel {
  SummaryModel(const ReportOptions& options, FrameLookup frames)
      : ProcessModel(options, ProcessHeader{}, frames) {}

  void text(std::string& text) const override { write_text(text); }

  std::vector<Series> series_;                          // in report order (ordered_series)
  std::vector<std::optional<std::string>> pool_notes_;  // framework_pool_note(), per series_
  std::vector<std::optional<GraphPoolView>> graph_pools_;  // the device's graph pool, per series_
  uint64_t events_ = 0;
  Anomalies anomalies_;
  // The observers of the pass, kept for what they found.
  PoolTracker pools_;
  GraphTracker graphs_;
  GraphPoolFigures graph_pool_figures_;
  BlockLayer blocks_;  // PyTorch's blocks
  std::vector<NvidiaSmiPeak> smi_;  // what nvidia-smi showed

 private:
  void write_text(std::string& text) const {
    const ProcessEnd& end = h_.end;
    text += fmt::format("{}: {}\n", h_.title, end.text);
    text += fmt::format("  {}, {}; {}\n", plural(events_, "event", "events"),
                        plural(h_.threads, "thread", "threads"), h_.info.exe);
    const char* at_end = exited_with_full_log(end) ? "leaked at exit"
                         : end.still_running       ? "live so far"
                         : end.incomplete          ? "live when the log stops"
                                                   : "live at the moment it died";
    const StackStyle style = stack_style(options_, kTextDepth);
    // The timelines share one time axis, from the first change of any series to the end (the
    // time before the first CUDA call is usually start-up, and only flattens the picture).
    const uint64_t axis_end = h_.start_ns + end.duration_ns;
    uint64_t axis_start = axis_end;
    for (const Series& s : series_)
      if (wanted_series(options_, s.key))
        for (const TimelinePoint& p : s.timeline.points())
          axis_start = std::min(axis_start, p.time_ns);
    for (const NvidiaSmiPeak& p : smi_)  // nvidia-smi's timeline shares the axis
      for (const ReconciledSample& s : p.series)
        axis_start = std::min(axis_start, h_.start_ns + s.nvml.time_delta_ns);
    bool any = false;
    for (size_t i = 0; i < series_.size(); ++i) {
      const Series& s = series_[i];
      if (!wanted_series(options_, s.key)) continue;
      any = true;
      text += fmt::format("  {}\n", series_label(s.key));
      text += fmt::format("    allocations   {}{}, {} in all\n", s.allocations,
                          s.allocations ? " (" + by_api(s.allocations_by_api) + ")" : "",
                          human_size(s.allocated_bytes));
      text += fmt::format("    frees         {}{}, {}\n", s.frees,
                          s.frees ? " (" + by_api(s.frees_by_api) + ")" : "",
                          human_size(s.freed_bytes));
      if (s.peak_seq)
        text += fmt::format("    peak          {} at {} (seq {})\n", size_and_bytes(s.peak_bytes),
                            event_time_text(h_, s.peak_time_ns), s.peak_seq);
      else
        text += "    peak          0 bytes (nothing was ever live)\n";
      if (s.live_count)
        text += fmt::format(
            "    live at end   {} in {}: {}\n", size_and_bytes(s.live_bytes),
            plural(s.live_count, "allocation", "allocations"),
            blocks_of(blocks_, s.key) ? "reserved by PyTorch's allocator (tensors below)" : at_end);
      else
        text += "    live at end   0 bytes\n";
      append_allocated_summary(text, blocks_, s, at_end);
      if (has_vmm(s))
        text += fmt::format(
            "    virtual mem   at end {} physical, {} mapped, {} reserved; at most {}, {}, {}\n",
            human_size(s.physical_bytes), human_size(s.mapped_bytes), human_size(s.reserved_bytes),
            human_size(s.max_physical_bytes), human_size(s.max_mapped_bytes),
            human_size(s.max_reserved_bytes));
      if (const auto& pool = graph_pools_[i]) append_graph_pool_summary(text, *pool);
      if (s.failed == 0) {
        text += "    failed        none\n";
      } else {
        text +=
            fmt::format("    failed        {}\n", plural(s.failed, "allocation", "allocations"));
        for (size_t i = 0; i < s.failures.size() && i < kFailuresShown; ++i) {
          const Failure& f = s.failures[i];
          text += fmt::format("      {} of {} at {} (seq {}) returned {}, from:\n", api_name(f.api),
                              size_and_bytes(f.bytes), event_time_text(h_, f.time_ns),
                              f.seq, cuda_error_text(f.api, f.result));
          append_frames(text, frames_(f.stack), style, "        ");
        }
        if (s.failed > kFailuresShown)
          text += fmt::format("      ... and {} more (--json lists the first {})\n",
                              s.failed - kFailuresShown, Series::kKeptFailures);
      }
      if (const auto& note = pool_notes_[i]) text += "    note          " + *note + "\n";
      const auto points = s.timeline.points();
      if (!points.empty())
        text += fmt::format("    timeline      |{}| {} .. {}, top {}\n",
                            sparkline(points, axis_start, axis_end, kSparkWidth),
                            event_time_text(h_, axis_start),
                            human_duration(end.duration_ns, end.duration_step_ns),
                            human_size(s.peak_bytes));
    }
    if (!any)
      text += options_.device ? fmt::format("  nothing recorded on device {}\n", *options_.device)
                              : "  no CUDA allocation recorded\n";
    append_nvidia_smi(text, smi_, {options_.device, true, h_.start_ns, axis_start, axis_end});
    for (const Pool& p : pools_.pools()) {
      if (options_.device && p.device != *options_.device) continue;
      text += fmt::format("  {}: {} live now, high-water mark {} ({})\n",
                          p.handle ? fmt::format("pool {:#x}", p.handle)
                                   : fmt::format("default pool of device {}", p.device),
                          human_size(p.live_bytes), human_size(p.high_water_bytes),
                          plural(p.allocations, "allocation", "allocations"));
    }
    append_graphs(graphs_.activity(), text);
    append_anomalies(anomalies_, series_, text);
  }

  // What CUDA graphs did, so graph memory is neither missed nor counted once per replay.
  static void append_graphs(const GraphActivity& g, std::string& text) {
    if (!g.any()) return;
    // Only what happened: a program that builds graphs node by node captures no stream, and one
    // that captures but never launches has nothing to say about launches.
    std::vector<std::string> parts;
    if (g.captures || g.capture_allocations)
      parts.push_back(fmt::format(
          "{} captured: {} of {} made while capturing (graph memory nodes, live from the launch "
          "that runs them, or an upload before it)",
          plural(g.captures, "stream", "streams"),
          plural(g.capture_allocations, "allocation", "allocations"),
          size_and_bytes(g.capture_bytes)));
    if (g.launches || g.uploads)
      parts.push_back(fmt::format(
          "{} replayed{}, {} after the first launch", plural(g.launches, "launch", "launches"),
          // An upload allocates the exec's nodes ahead of its launch (as on the H200).
          g.uploads ? fmt::format(" (and {}: nodes live from the upload)",
                                  plural(g.uploads, "upload", "uploads"))
                    : std::string(),
          plural(g.allocations_between_launches, "allocation", "allocations")));
    if (parts.empty()) return;
    text += fmt::format("  cuda graphs   {}\n", fmt::join(parts, "; "));
  }

  static void append_anomalies(const Anomalies& a, const std::vector<Series>& series,
                               std::string& text) {
    auto note = [&](uint64_t n, const char* one, const char* many) {
      if (n) text += fmt::format("  note: {}\n", plural(n, one, many));
    };
    note(a.unknown_frees, "free of an address that was not live (counted, not fatal)",
         "frees of addresses that were not live (counted, not fatal)");
    note(a.unknown_unmaps, "cuMemUnmap of a range that was not mapped",
         "cuMemUnmap calls of ranges that were not mapped");
    note(a.unknown_releases, "cuMemRelease of an unknown handle",
         "cuMemRelease calls of unknown handles");
    note(a.unknown_address_frees, "cuMemAddressFree of a range that was not reserved",
         "cuMemAddressFree calls of ranges that were not reserved");
    note(a.unknown_handle_maps, "cuMemMap of a handle never created",
         "cuMemMap calls of handles never created");
    note(a.failed_frees, "free-like call that returned an error (nothing freed)",
         "free-like calls that returned an error (nothing freed)");
    note(a.reused_addresses, "allocation at an address still live (its free was not recorded)",
         "allocations at addresses still live (their frees were not recorded)");
    note(a.unlaunched_graph_frees,
         "free of CUDA graph memory whose launch was not recorded (not counted as a free)",
         "frees of CUDA graph memory whose launches were not recorded (not counted as frees)");
    uint64_t lower_bounds = 0;
    for (const Series& s : series)
      for (size_t id = 0; id < s.allocations_by_api.size(); ++id)
        if (format::size_is_lower_bound(static_cast<uint8_t>(id)))
          lower_bounds += s.allocations_by_api[id];
    note(lower_bounds,
         "CUDA array: its size is computed from its descriptor, a lower bound (the driver pads)",
         "CUDA arrays: their sizes are computed from their descriptors, lower bounds (the "
         "driver pads)");
    for (const Unmatched& u : a.examples)
      text += fmt::format("    e.g. {} of {:#x} at seq {}\n", api_name(u.api), u.address, u.seq);
    if (a.unknown_api_events) {
      std::string ids;
      for (size_t id = 0; id < a.unknown_api_ids.size(); ++id)
        if (a.unknown_api_ids[id])
          ids += fmt::format("{}api#{} ({})", ids.empty() ? "" : ", ", id, a.unknown_api_ids[id]);
      text += fmt::format("  note: {} of entry points this gmemhook does not know, skipped: {}\n",
                          plural(a.unknown_api_events, "event", "events"), ids);
    }
  }

  void members(JsonWriter& json) const override {
    const GraphActivity& g = graphs_.activity();
    json.field("events", events_);
    json.field("threads", static_cast<uint64_t>(h_.threads));
    json.object("cuda_graphs", [&] {
      json.field("captures", g.captures);
      json.field("capture_allocations", g.capture_allocations);
      json.field("capture_bytes", g.capture_bytes);
      json.field("launches", g.launches);
      json.field("uploads", g.uploads);
      json.field("allocations_after_first_launch", g.allocations_between_launches);
    });
    json.key("devices");
    json.begin_array();
    for (size_t i = 0; i < series_.size(); ++i) {
      const Series& s = series_[i];
      if (!wanted_series(options_, s.key)) continue;
      json.begin_object();
      write_series_fields(json, s.key);
      json.field("allocations", s.allocations);
      json.field("frees", s.frees);
      write_by_api(json, "allocations_by_api", s.allocations_by_api);
      write_by_api(json, "frees_by_api", s.frees_by_api);
      json.field("allocated_bytes", s.allocated_bytes);
      json.field("freed_bytes", s.freed_bytes);
      json.field("failed_allocations", s.failed);
      json.objects("failures", s.failures, [&](const Failure& f) {
        write_failure_fields(json, h_, f, frames_(f.stack), depth_limit(options_, 0));
      });
      json.field("peak_bytes", s.peak_bytes);
      json.field("peak_time_ns", since_start(h_, s.peak_time_ns));
      json.field("peak_seq", s.peak_seq);
      json.field("live_bytes_at_end", s.live_bytes);
      json.field("live_count_at_end", s.live_count);
      write_allocated_summary(json, blocks_, s);
      json.object("virtual_memory", [&] {
        json.field("physical_bytes", s.physical_bytes);
        json.field("mapped_bytes", s.mapped_bytes);
        json.field("reserved_bytes", s.reserved_bytes);
        json.field("max_physical_bytes", s.max_physical_bytes);
        json.field("max_mapped_bytes", s.max_mapped_bytes);
        json.field("max_reserved_bytes", s.max_reserved_bytes);
      });
      write_graph_pool(json, graph_pools_[i]);
      json.key("timeline");
      json.begin_array();
      for (const TimelinePoint& p : s.timeline.points())
        json.inline_array({since_start(h_, p.time_ns), p.bytes});
      json.end_array();
      json.end_object();
    }
    json.end_array();
    json.key("pools");
    json.begin_array();
    for (const Pool& p : pools_.pools()) {
      if (options_.device && p.device != *options_.device) continue;
      json.begin_object();
      write_pool_handle(json, p.handle);
      json.field("device", p.device);
      json.field("allocations", p.allocations);
      write_pool_occupancy(json, p);
      json.end_object();
    }
    json.end_array();
    const Anomalies& a = anomalies_;
    json.object("anomalies", [&] {
      json.field("unknown_frees", a.unknown_frees);
      json.field("unknown_unmaps", a.unknown_unmaps);
      json.field("unknown_releases", a.unknown_releases);
      json.field("unknown_address_frees", a.unknown_address_frees);
      json.field("unknown_handle_maps", a.unknown_handle_maps);
      json.field("failed_frees", a.failed_frees);
      json.field("null_frees", a.null_frees);
      json.field("reused_addresses", a.reused_addresses);
      json.field("unlaunched_graph_frees", a.unlaunched_graph_frees);
      json.field("unknown_api_events", a.unknown_api_events);
    });
    write_nvidia_smi(json, smi_, options_.device, true, options_.nvml_samples);
  }
};

class SummaryReport : public Report {
 public:
  explicit SummaryReport(const ReportOptions& options) : options_(options) {}

  std::unique_ptr<ReportModel> analyze(ProcessContext& process) override {
    auto m = std::make_unique<SummaryModel>(options_, process.frames());
    const BlockLayer& blocks = m->blocks_;
    NvmlSamples nvml(process.reader().nvml_samples());
    const Replay replay =
        process.pass({&m->pools_, &m->graphs_, &m->graph_pool_figures_, &m->blocks_, &nvml});
    m->smi_ = nvml.peaks();
    m->h_ = process.header();
    m->events_ = replay.events();
    m->anomalies_ = replay.anomalies();
    for (const Series* s : ordered_series(replay)) {
      m->series_.push_back(*s);
      m->pool_notes_.push_back(framework_pool_note(process.reader(), *s));
      m->graph_pools_.push_back(graph_pool_view(m->graph_pool_figures_, s->key, s->peak_seq));
    }
    const auto want = [&](const SeriesKey& k) { return wanted_series(options_, k); };
    for (const Series& s : replay.series()) {
      if (!want(s.key)) continue;
      if (s.key.memory == format::MemoryType::Device) {
        if (!blocks_of(blocks, s.key)) device_live_ += s.live_bytes;
        device_failed_ += s.failed;
      }
      if (!blocks_of(blocks, s.key)) any_live_ |= s.live_bytes > 0;
    }
    // With PyTorch's blocks, what leaks is the tensors (and memory outside the allocator); the
    // segments it caches are not leaks, and the hint says so, as `leaks` does.
    if (blocks.any()) {
      auto only_blocks_devices = [&](const SeriesKey& k) {
        return want(k) && blocks_of(blocks, k);
      };
      for (const SiteGroup& g : with_blocks(
               replay, blocks, group_live(replay, only_blocks_devices, false), only_blocks_devices))
        device_live_ += g.bytes, any_live_ = true;
      for (const CachedSegments& c : cached_now(blocks, want)) cached_ += c.bytes;
    }
    return m;
  }

  std::string next_step() const override {
    const std::string run = shell_word(options_.run_arg);
    if (device_failed_)
      return hint_line("gmemhook peak " + run, "what held the memory when an allocation failed");
    if (any_live_)
      return hint_line("gmemhook leaks " + run,
                       (device_live_ ? human_size(device_live_) + " of device memory never freed"
                                     : std::string("memory that was never freed")) +
                           cached_note());
    return hint_line("gmemhook peak " + run, "who held the memory at the peak" + cached_note());
  }

  void merge(const Report& other) override {
    const auto& o = static_cast<const SummaryReport&>(other);
    device_live_ += o.device_live_;
    device_failed_ += o.device_failed_;
    cached_ += o.cached_;
    any_live_ = any_live_ || o.any_live_;
  }

 private:
  // "; 38.0 MiB more cached by PyTorch's allocator, not leaked", or nothing.
  std::string cached_note() const {
    return cached_ ? "; " + human_size(cached_) + " more cached by PyTorch's allocator, not leaked"
                   : std::string();
  }

  const ReportOptions& options_;
  uint64_t device_live_ = 0, device_failed_ = 0, cached_ = 0;
  bool any_live_ = false;
};

}  // namespace

std::unique_ptr<Report> make_summary_report(const ReportOptions& options) {
  return std::make_unique<SummaryReport>(options);
}

}  // namespace gmemhook::analysis

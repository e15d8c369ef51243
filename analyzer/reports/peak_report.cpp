// `gmemhook peak`: who held the memory at each device's peak, grouped by call site with its share
// of the peak (heaptrack's "PEAK MEMORY CONSUMERS"), and, when an allocation failed, who held it
// at the first failure. One pass: the replay captures both as it goes (Replay::capture_sites).
#include <fmt/format.h>

#include "analyzer/log/cuda_errors.h"
#include "analyzer/log/event_info.h"
#include "analyzer/model/block_layer.h"
#include "analyzer/model/nvml_samples.h"
#include "analyzer/model/peak_sites.h"
#include "analyzer/output/stack_export.h"
#include "analyzer/output/text_format.h"
#include "analyzer/reports/framework_pool.h"
#include "analyzer/reports/allocated_layer.h"
#include "analyzer/reports/nvidia_smi.h"
#include "analyzer/reports/report_common.h"

namespace gmemhook::analysis {

namespace {

constexpr size_t kTextTop = 10;
constexpr size_t kTextDepth = 8;

// The live set of one series at one moment, grouped.
struct Held {
  uint64_t seq = 0;
  uint64_t bytes = 0, count = 0;
  std::vector<SiteGroup> sites;
};

struct SeriesPeak {
  SeriesKey key;
  uint64_t peak_bytes = 0, peak_seq = 0, peak_time_ns = 0;
  std::optional<Failure> first_failure;
  Held at_peak, at_failure;
  std::optional<std::string> pool_note;  // framework_pool_note()
  // PyTorch's blocks on this device (issue 9): the allocated peak and who held it; null if none.
  const BlockDevice* blocks = nullptr;
  Held allocated;
};

Held held(uint64_t seq, const std::vector<SiteGroup>& sites) {
  Held h;
  h.seq = seq;
  h.sites = sites;
  for (const SiteGroup& g : sites) {
    h.bytes += g.bytes;
    h.count += g.count;
  }
  return h;
}

class PeakReport : public Report {
 public:
  explicit PeakReport(const ReportOptions& options)
      : options_(options),
        export_(make_stack_export(options.format, options.depth.value_or(0),
                                  "gmemhook peak " + options.run_arg)) {}

  ReadFacts process(ProcessReader& reader, StackResolver& stacks, std::string& text,
                    JsonWriter* json) override {
    // One pass: the replay keeps what each site held at each series' peak and first failure.
    StackInterner interned;
    Replay replay(interned, options_.apis);
    PeakSites captured;
    replay.observe(captured);
    BlockLayer blocks;  // PyTorch's blocks (issue 9)
    replay.observe(blocks);
    NvmlSamples nvml(reader.nvml_samples());  // what nvidia-smi showed (issue 13)
    replay.observe(nvml);
    reader.read_events(replay);
    replay.finish();
    const ReadFacts facts = read_facts(reader, replay);
    const ProcessEnd end = process_end(reader, facts, replay);

    std::vector<SeriesPeak> peaks;
    for (const Series* series : ordered_series(replay)) {
      const Series& s = *series;
      if (!wanted_series(options_, s.key) || (s.peak_seq == 0 && s.failed == 0)) continue;
      SeriesPeak p;
      p.key = s.key;
      p.peak_bytes = s.peak_bytes;
      p.peak_seq = s.peak_seq;
      p.peak_time_ns = s.peak_time_ns;
      p.at_peak = held(s.peak_seq, captured.at_peak(s.key));
      p.pool_note = framework_pool_note(reader, s);
      if (!s.failures.empty()) {
        p.first_failure = s.failures.front();
        p.at_failure = held(s.failures.front().seq, captured.at_first_failure(s.key));
        any_failure_ = true;
      }
      if ((p.blocks = blocks_of(blocks, s.key)))
        p.allocated = held(p.blocks->peak_seq, block_site_groups(p.blocks->sites_at_peak));
      peaks.push_back(std::move(p));
    }

    smi_ = nvml.peaks();
    if (export_)
      export_peaks(reader, replay, stacks, peaks);
    else if (json)
      write_json(reader, replay, stacks, facts, end, peaks, *json);
    else
      write_text(reader, replay, stacks, end, peaks, text);
    return facts;
  }

  void finish(std::string& text) override {
    if (export_) {
      text += export_->finish();
      return;
    }
    text += "\n";
    const std::string run = shell_word(options_.run_arg);
    if (any_failure_)
      text += hint_line("gmemhook fragmentation " + run,
                        "whether the failed request lacked memory or one hole large enough");
    else
      text += hint_line("gmemhook leaks " + run, "what was never freed");
  }

 private:
  // --format folded / speedscope: the sites at each peak (the first failure is text and JSON's).
  void export_peaks(const ProcessReader& reader, const Replay& replay, StackResolver& stacks,
                    const std::vector<SeriesPeak>& peaks) {
    const size_t top = options_.top.value_or(0);
    for (const SeriesPeak& p : peaks) {
      if (!p.peak_seq) continue;
      export_->begin_profile(
          fmt::format("{}: {} peak", process_title(reader), series_label(p.key)));
      for (size_t i = 0; i < p.at_peak.sites.size() && (top == 0 || i < top); ++i)
        export_->add(frames_of(stacks, replay, p.at_peak.sites[i].stack), p.at_peak.sites[i].bytes);
    }
  }

  void append_sites(std::string& text, const Replay& replay, StackResolver& stacks, const Held& h,
                    uint64_t whole) const {
    const size_t top = top_limit(options_, kTextTop);
    std::vector<SiteStack> sites;
    for (const SiteGroup& g : h.sites)
      sites.push_back({&frames_of(stacks, replay, g.stack), g.bytes, g.count, api_name(g.api)});
    size_t shown = 0;
    uint64_t rest_bytes = 0, rest_count = 0;
    for (const SiteRow& row : group_sites(sites, options_.group_by)) {
      if (top && shown >= top) {
        rest_bytes += row.bytes;
        rest_count += row.count;
        continue;
      }
      ++shown;
      const SiteGroup& g = h.sites[row.members.front()];
      text += fmt::format("  {} {:5.1f}%  in {} ({}) from:\n", size_and_bytes(row.bytes),
                          whole ? 100.0 * double(row.bytes) / double(whole) : 0.0,
                          is_block_api(g.api) ? plural(row.count, "block", "blocks")
                                              : plural(row.count, "allocation", "allocations"),
                          site_api_name(g.api));
      append_site_stacks(text, row_stacks(row, sites), stack_style(options_, kTextDepth), "      ");
    }
    if (rest_count)
      text +=
          fmt::format("  ... and {} more in {} (--top 0 shows all)\n", size_and_bytes(rest_bytes),
                      plural(rest_count, "allocation", "allocations"));
  }

  void write_text(const ProcessReader& reader, const Replay& replay, StackResolver& stacks,
                  const ProcessEnd& end, const std::vector<SeriesPeak>& peaks,
                  std::string& text) const {
    text += fmt::format("{}: {}\n", process_title(reader), end.text);
    if (peaks.empty()) text += "  nothing was ever live\n";
    for (const SeriesPeak& p : peaks) {
      if (p.blocks && p.blocks->peak_seq) {
        // Tensors first: what the program asked for, inside what the allocator reserved below.
        const BlockDevice& b = *p.blocks;
        text += fmt::format("\n{} allocated (PyTorch tensors): peak {} at {} (seq {}) in {}\n",
                            series_label(p.key), size_and_bytes(b.peak_bytes),
                            human_duration(since_start(reader, b.peak_time_ns)), b.peak_seq,
                            plural(p.allocated.count, "block", "blocks"));
        text += "PEAK TENSOR CONSUMERS\n";
        append_sites(text, replay, stacks, p.allocated, b.peak_bytes);
      }
      if (p.peak_seq) {
        text += fmt::format("\n{}{}: peak {} at {} (seq {}) in {}\n", series_label(p.key),
                            p.blocks ? " reserved (segments from CUDA)" : "",
                            size_and_bytes(p.peak_bytes),
                            human_duration(since_start(reader, p.peak_time_ns)), p.peak_seq,
                            plural(p.at_peak.count, "allocation", "allocations"));
        if (p.pool_note) text += "note: " + *p.pool_note + "\n";
        if (p.blocks)
          text += fmt::format(
              "  of which allocated in blocks {}, allocator overhead (reserved - allocated) {}\n",
              human_size(p.blocks->allocated_at_reserved_peak),
              size_and_bytes(p.peak_bytes -
                             std::min(p.peak_bytes, p.blocks->allocated_at_reserved_peak)));
        text += "PEAK MEMORY CONSUMERS\n";
        append_sites(text, replay, stacks, p.at_peak, p.peak_bytes);
      }
      if (p.first_failure) {
        const Failure& f = *p.first_failure;
        text +=
            fmt::format("\n{} ran out at {} (seq {}): {} of {} returned {}\n", series_label(p.key),
                        human_duration(since_start(reader, f.time_ns)), f.seq, api_name(f.api),
                        size_and_bytes(f.bytes), cuda_error_text(f.api, f.result));
        text += fmt::format("WHAT HELD THE MEMORY WHEN IT RAN OUT: {} in {}\n",
                            size_and_bytes(p.at_failure.bytes),
                            plural(p.at_failure.count, "allocation", "allocations"));
        append_sites(text, replay, stacks, p.at_failure, p.at_failure.bytes);
      }
    }
    if (!smi_.empty()) text += "\n";
    append_nvidia_smi(text, reader, smi_, {options_.device});
  }

  void write_sites(JsonWriter& json, const Replay& replay, StackResolver& stacks, const Held& h,
                   uint64_t whole) const {
    const size_t top = top_limit(options_, kTextTop);
    const size_t depth = depth_limit(options_, kTextDepth);
    json.key("sites");
    json.begin_array();
    for (size_t i = 0; i < h.sites.size() && (top == 0 || i < top); ++i) {
      const SiteGroup& g = h.sites[i];
      json.begin_object();
      json.field("bytes", g.bytes);
      json.field("count", g.count);
      json.field("share", whole ? double(g.bytes) / double(whole) : 0.0);
      json.field("api", api_name(g.api));
      write_frames(json, frames_of(stacks, replay, g.stack), depth);
      json.end_object();
    }
    json.end_array();
  }

  // "allocated": the allocated layer's peak and sites, and the reserved peak's overhead.
  void write_allocated(JsonWriter& json, const ProcessReader& reader, const Replay& replay,
                       StackResolver& stacks, const SeriesPeak& p) const {
    json.key("allocated");
    if (!p.blocks) return json.null();
    const BlockDevice& b = *p.blocks;
    json.begin_object();
    json.field("peak_bytes", b.peak_bytes);
    json.field("peak_seq", b.peak_seq);
    json.field("peak_time_ns", since_start(reader, b.peak_time_ns));
    json.field("live_count", p.allocated.count);
    write_sites(json, replay, stacks, p.allocated, b.peak_bytes);
    json.field("allocated_at_reserved_peak", b.allocated_at_reserved_peak);
    json.field("overhead_at_reserved_peak",
               p.peak_bytes - std::min(p.peak_bytes, b.allocated_at_reserved_peak));
    json.end_object();
  }

  void write_json(const ProcessReader& reader, const Replay& replay, StackResolver& stacks,
                  const ReadFacts& facts, const ProcessEnd& end,
                  const std::vector<SeriesPeak>& peaks, JsonWriter& json) const {
    json.begin_object();
    write_process_fields(json, reader, end);
    json.key("devices");
    json.begin_array();
    for (const SeriesPeak& p : peaks) {
      json.begin_object();
      write_series_fields(json, p.key);
      json.field("peak_bytes", p.peak_bytes);
      json.field("peak_time_ns", since_start(reader, p.peak_time_ns));
      json.field("peak_seq", p.peak_seq);
      json.field("live_count", p.at_peak.count);
      write_sites(json, replay, stacks, p.at_peak, p.peak_bytes);
      write_allocated(json, reader, replay, stacks, p);
      json.key("first_failure");
      if (!p.first_failure) {
        json.null();
      } else {
        const Failure& f = *p.first_failure;
        json.begin_object();
        json.field("api", api_name(f.api));
        json.field("bytes", f.bytes);
        json.field("result", f.result);
        json.field("seq", f.seq);
        json.field("time_ns", since_start(reader, f.time_ns));
        write_frames(json, frames_of(stacks, replay, f.stack), depth_limit(options_, kTextDepth));
        json.field("live_bytes", p.at_failure.bytes);
        json.field("live_count", p.at_failure.count);
        write_sites(json, replay, stacks, p.at_failure, p.at_failure.bytes);
        json.end_object();
      }
      json.end_object();
    }
    json.end_array();
    write_nvidia_smi(json, smi_, options_.device, false);
    write_warnings(json, facts, stacks);
    json.end_object();
  }

  const ReportOptions& options_;
  std::vector<NvidiaSmiPeak> smi_;  // of the process being written (in process())
  std::unique_ptr<StackExport> export_;  // --format folded / speedscope, else null
  bool any_failure_ = false;
};

}  // namespace

std::unique_ptr<Report> make_peak_report(const ReportOptions& options) {
  return std::make_unique<PeakReport>(options);
}

}  // namespace gmemhook::analysis

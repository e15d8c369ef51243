// `gmemhook peak`: who held the memory at each device's peak, grouped by call site with its share
// of the peak (heaptrack's "PEAK MEMORY CONSUMERS"), and, when an allocation failed, who held it
// at the first failure. One pass: the replay captures both as it goes (Replay::capture_sites).
#include <fmt/format.h>

#include "analyzer/log/cuda_errors.h"
#include "analyzer/log/event_info.h"
#include "analyzer/model/block_layer.h"
#include "analyzer/model/graph_pool.h"
#include "analyzer/model/nvml_samples.h"
#include "analyzer/model/peak_sites.h"
#include "analyzer/output/text_format.h"
#include "analyzer/reports/allocated_layer.h"
#include "analyzer/reports/framework_pool.h"
#include "analyzer/reports/graph_pool_lines.h"
#include "analyzer/reports/nvidia_smi.h"
#include "analyzer/reports/process_context.h"
#include "analyzer/reports/report.h"
#include "analyzer/reports/site_rows_json.h"

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
  std::optional<GraphPoolView> graph_pool;  // the device's CUDA graph pool
  // PyTorch's blocks on this device: the allocated peak and who held it; none if none.
  std::optional<BlockDevice> blocks;
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

// What `peak` found in one process; rendered as text, JSON or weighted stacks.
class PeakModel final : public ProcessModel {
 public:
  PeakModel(const ReportOptions& options, ProcessHeader header, FrameLookup frames,
            std::vector<SeriesPeak> peaks)
      : ProcessModel(options, std::move(header), frames), peaks_(std::move(peaks)) {}

  void text(std::string& text) const override { write_text(text); }

  // --format folded / speedscope: the sites at each peak (the first failure is text and JSON's).
  // With PyTorch's blocks the tensors at the allocated peak come first: that is the profile a
  // user wants to open, the segments' one says only where the cache grew. Folded
  // output, which adds all profiles up, gets the tensors alone.
  void stacks(StackExport& out) const override {
    for (const SeriesPeak& p : peaks_) {
      if (!p.peak_seq) continue;
      const bool tensors = p.blocks && p.blocks->peak_seq;
      if (tensors)
        add_profile(out, fmt::format("{}: {} allocated (PyTorch tensors) peak", h_.title,
                                     series_label(p.key)),
                    p.allocated);
      if (tensors && !out.keeps_profiles_apart()) continue;
      add_profile(out,
                  fmt::format("{}: {}{} peak", h_.title, series_label(p.key),
                              p.blocks ? " reserved (segments from CUDA)" : ""),
                  p.at_peak);
    }
  }

 private:
  void add_profile(StackExport& out, const std::string& name, const Held& h) const {
    const size_t top = options_.top.value_or(0);
    out.begin_profile(name);
    for (size_t i = 0; i < h.sites.size() && (top == 0 || i < top); ++i)
      out.add(frames_(h.sites[i].stack), h.sites[i].bytes);
  }

  // The sites as site_rows.h groups them: the text's rows, and JSON's `rows` (the same rows).
  std::vector<SiteStack> site_stacks(const Held& h) const {
    std::vector<SiteStack> sites;
    for (const SiteGroup& g : h.sites)
      sites.push_back({&frames_(g.stack), g.bytes, g.count, api_name(g.api), is_block_api(g.api)});
    return sites;
  }

  void append_sites(std::string& text, const Held& h, uint64_t whole) const {
    const size_t top = top_limit(options_, kTextTop);
    const std::vector<SiteStack> sites = site_stacks(h);
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
      // Graph memory at the peak: whether a launch or an upload ahead of it made it live.
      if (g.launch_stack)
        append_made_live(text, g.launch_api, frames_(g.launch_stack),
                         stack_style(options_, kTextDepth), "    ");
    }
    // The tensors' sites are PyTorch's blocks, every other list's the CUDA calls' allocations.
    const bool blocks = !h.sites.empty() && is_block_api(h.sites.front().api);
    if (rest_count)
      text += fmt::format("  ... and {} more in {} (--top 0 shows all)\n",
                          size_and_bytes(rest_bytes),
                          blocks ? plural(rest_count, "block", "blocks")
                                 : plural(rest_count, "allocation", "allocations"));
  }

  void write_text(std::string& text) const {
    text += fmt::format("{}: {}\n", h_.title, h_.end.text);
    if (peaks_.empty()) text += "  nothing was ever live\n";
    for (const SeriesPeak& p : peaks_) {
      if (p.blocks && p.blocks->peak_seq) {
        // Tensors first: what the program asked for, inside what the allocator reserved below.
        const BlockDevice& b = *p.blocks;
        text += fmt::format("\n{} allocated (PyTorch tensors): peak {} at {} (seq {}) in {}\n",
                            series_label(p.key), size_and_bytes(b.peak_bytes),
                            event_time_text(h_, b.peak_time_ns), b.peak_seq,
                            plural(p.allocated.count, "block", "blocks"));
        text += "PEAK TENSOR CONSUMERS\n";
        append_sites(text, p.allocated, b.peak_bytes);
      }
      if (p.peak_seq) {
        text += fmt::format("\n{}{}: peak {} at {} (seq {}) in {}\n", series_label(p.key),
                            p.blocks ? " reserved (segments from CUDA)" : "",
                            size_and_bytes(p.peak_bytes),
                            event_time_text(h_, p.peak_time_ns), p.peak_seq,
                            plural(p.at_peak.count, "allocation", "allocations"));
        if (p.pool_note) text += "note: " + *p.pool_note + "\n";
        if (p.blocks)
          text += fmt::format(
              "  of which allocated in blocks {}, allocator overhead (reserved - allocated) {}\n",
              human_size(p.blocks->allocated_at_reserved_peak),
              size_and_bytes(p.peak_bytes -
                             std::min(p.peak_bytes, p.blocks->allocated_at_reserved_peak)));
        if (p.graph_pool) append_graph_pool_at_peak(text, *p.graph_pool);
        text += "PEAK MEMORY CONSUMERS\n";
        append_sites(text, p.at_peak, p.peak_bytes);
      }
      if (p.first_failure) {
        const Failure& f = *p.first_failure;
        text +=
            fmt::format("\n{} ran out at {} (seq {}): {} of {} returned {}\n", series_label(p.key),
                        event_time_text(h_, f.time_ns), f.seq, api_name(f.api),
                        size_and_bytes(f.bytes), cuda_error_text(f.api, f.result));
        text += fmt::format("WHAT HELD THE MEMORY WHEN IT RAN OUT: {} in {}\n",
                            size_and_bytes(p.at_failure.bytes),
                            plural(p.at_failure.count, "allocation", "allocations"));
        append_sites(text, p.at_failure, p.at_failure.bytes);
      }
    }
    if (!smi.empty()) text += "\n";
    append_nvidia_smi(text, smi, {options_.device});
  }

  void write_sites(JsonWriter& json, const Held& h, uint64_t whole) const {
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
      write_frames(json, frames_(g.stack), depth);
      if (g.launch_stack) write_made_live(json, g.launch_api, frames_(g.launch_stack), depth);
      json.end_object();
    }
    json.end_array();
    write_rows(json, h, whole, top);
  }

  // `rows`: the text's rows (one per line of user code by default, --group-by), with their
  // headings, as `leaks` has them (site_rows_json.h); `share` of the same whole as the sites'.
  void write_rows(JsonWriter& json, const Held& h, uint64_t whole, size_t top) const {
    const bool by_function = stack_style(options_, kTextDepth).by_function;
    write_site_rows(json, group_sites(site_stacks(h), options_.group_by), top, "sites",
                    [&](const SiteRow& row) {
                      const SiteGroup& g = h.sites[row.members.front()];
                      json.field("where", user_frame_text(frames_(g.stack), by_function));
                      json.field("api", api_name(g.api));
                      json.field("share", whole ? double(row.bytes) / double(whole) : 0.0);
                    });
  }

  // "allocated": the allocated layer's peak and sites, and the reserved peak's overhead.
  void write_allocated(JsonWriter& json, const SeriesPeak& p) const {
    json.key("allocated");
    if (!p.blocks) return json.null();
    const BlockDevice& b = *p.blocks;
    json.begin_object();
    json.field("peak_bytes", b.peak_bytes);
    json.field("peak_seq", b.peak_seq);
    json.field("peak_time_ns", since_start(h_, b.peak_time_ns));
    json.field("live_count", p.allocated.count);
    write_sites(json, p.allocated, b.peak_bytes);
    json.field("allocated_at_reserved_peak", b.allocated_at_reserved_peak);
    json.field("overhead_at_reserved_peak",
               p.peak_bytes - std::min(p.peak_bytes, b.allocated_at_reserved_peak));
    json.end_object();
  }

  void members(JsonWriter& json) const override {
    json.objects("devices", peaks_, [&](const SeriesPeak& p) {
      write_series_fields(json, p.key);
      json.field("peak_bytes", p.peak_bytes);
      json.field("peak_time_ns", since_start(h_, p.peak_time_ns));
      json.field("peak_seq", p.peak_seq);
      json.field("live_count", p.at_peak.count);
      write_sites(json, p.at_peak, p.peak_bytes);
      write_allocated(json, p);
      write_graph_pool(json, p.graph_pool);
      json.key("first_failure");
      if (!p.first_failure) {
        json.null();
      } else {
        const Failure& f = *p.first_failure;
        json.begin_object();
        write_failure_fields(json, h_, f, frames_(f.stack), depth_limit(options_, kTextDepth));
        json.field("live_bytes", p.at_failure.bytes);
        json.field("live_count", p.at_failure.count);
        write_sites(json, p.at_failure, p.at_failure.bytes);
        json.end_object();
      }
    });
    write_nvidia_smi(json, smi, options_.device, false);
  }

  std::vector<SeriesPeak> peaks_;

 public:
  std::vector<NvidiaSmiPeak> smi;  // what nvidia-smi showed
};

class PeakReport : public Report {
 public:
  explicit PeakReport(const ReportOptions& options) : options_(options) {}

  std::unique_ptr<ReportModel> analyze(ProcessContext& process) override {
    // One pass: the replay keeps what each site held at each series' peak and first failure.
    PeakSites captured;
    BlockLayer blocks;  // PyTorch's blocks
    GraphPoolFigures graph_pool;
    NvmlSamples nvml(process.reader().nvml_samples());
    const Replay replay = process.pass({&captured, &blocks, &graph_pool, &nvml});
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
      p.pool_note = framework_pool_note(process.reader(), s);
      p.graph_pool = graph_pool_view(graph_pool, s.key, s.peak_seq);
      if (!s.failures.empty()) {
        p.first_failure = s.failures.front();
        p.at_failure = held(s.failures.front().seq, captured.at_first_failure(s.key));
        any_failure_ = true;
      }
      if (const BlockDevice* b = blocks_of(blocks, s.key)) {
        p.blocks = *b;
        p.allocated = held(b->peak_seq, block_site_groups(b->sites_at_peak));
      }
      peaks.push_back(std::move(p));
    }
    auto model = std::make_unique<PeakModel>(options_, process.header(), process.frames(),
                                             std::move(peaks));
    model->smi = nvml.peaks();
    return model;
  }

  std::string next_step() const override {
    const std::string run = shell_word(options_.run_arg);
    if (any_failure_)
      return hint_line("gmemhook fragmentation " + run,
                       "whether the failed request lacked memory or one hole large enough");
    return hint_line("gmemhook leaks " + run, "what was never freed");
  }

  void merge(const Report& other) override {
    any_failure_ = any_failure_ || static_cast<const PeakReport&>(other).any_failure_;
  }

 private:
  const ReportOptions& options_;
  bool any_failure_ = false;
};

}  // namespace

std::unique_ptr<Report> make_peak_report(const ReportOptions& options) {
  return std::make_unique<PeakReport>(options);
}

}  // namespace gmemhook::analysis

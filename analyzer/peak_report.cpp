// `gmemhook peak`: who held the memory at each device's peak, grouped by call site with its share
// of the peak (heaptrack's "PEAK MEMORY CONSUMERS"), and, when an allocation failed, who held it
// at the first failure. Two passes: the first finds the peaks and failures, the second stops at
// each of them to group the live set, so memory stays bounded by the live set.
#include <fmt/format.h>

#include "analyzer/event_info.h"
#include "analyzer/report_common.h"
#include "analyzer/text_format.h"

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
};

class PeakReport : public Report {
 public:
  explicit PeakReport(const ReportOptions& options) : options_(options) {}

  ReadFacts process(ProcessReader& reader, StackResolver& stacks, std::string& text,
                    JsonWriter* json) override {
    Replay replay;
    reader.read_events(replay);
    replay.finish();
    const ReadFacts facts = read_facts(reader);
    const ProcessEnd end = process_end(reader, facts, replay);

    std::vector<SeriesPeak> peaks;
    std::vector<uint64_t> seqs;
    for (const Series& s : replay.series()) {
      if (!wanted_series(options_, s.key) || (s.peak_seq == 0 && s.failed == 0)) continue;
      SeriesPeak p{s.key, s.peak_bytes, s.peak_seq, s.peak_time_ns, std::nullopt, {}, {}};
      if (s.peak_seq) seqs.push_back(s.peak_seq);
      if (!s.failures.empty()) {
        p.first_failure = s.failures.front();
        seqs.push_back(s.failures.front().seq);
        any_failure_ = true;
      }
      peaks.push_back(p);
    }
    // Device memory first, then managed, then pinned host memory.
    std::stable_sort(peaks.begin(), peaks.end(), [](const SeriesPeak& a, const SeriesPeak& b) {
      auto rank = [](format::MemoryType m) {
        return m == format::MemoryType::Device ? 0 : m == format::MemoryType::Managed ? 1 : 2;
      };
      return rank(a.key.memory) < rank(b.key.memory);
    });

    if (!seqs.empty()) {
      // Second pass: stop at each peak and first failure and group what was live. The same
      // Replay keeps its stack ids across passes.
      replay.reset();
      replay.set_checkpoints(
          seqs,
          [&](uint64_t seq) {
            for (SeriesPeak& p : peaks) {
              const bool at_peak = p.peak_seq == seq;
              const bool at_failure = p.first_failure && p.first_failure->seq == seq;
              if (!at_peak && !at_failure) continue;
              Held h;
              h.seq = seq;
              h.sites = group_live(
                  replay, [&](const SeriesKey& k) { return k == p.key; }, false);
              for (const SiteGroup& g : h.sites) {
                h.bytes += g.bytes;
                h.count += g.count;
              }
              if (at_peak) p.at_peak = h;
              if (at_failure) p.at_failure = std::move(h);
            }
          },
          true);
      try {
        reader.read_events(replay);
        replay.finish();
      } catch (const Replay::Stop&) {
        // Everything asked for was taken: the rest of the log cannot change it.
      }
    }

    if (json)
      write_json(reader, replay, stacks, facts, end, peaks, *json);
    else
      write_text(reader, replay, stacks, end, peaks, text);
    return facts;
  }

  void finish(std::string& text) override {
    text += "\n";
    const std::string run = shell_word(options_.run_arg);
    if (any_failure_)
      text += hint_line("gmemhook fragmentation " + run,
                        "whether the failed request lacked memory or one hole large enough");
    else
      text += hint_line("gmemhook leaks " + run, "what was never freed");
  }

 private:
  void append_sites(std::string& text, const Replay& replay, StackResolver& stacks, const Held& h,
                    uint64_t whole) const {
    const size_t top = top_limit(options_, kTextTop);
    const size_t depth = depth_limit(options_, kTextDepth);
    size_t shown = 0;
    uint64_t rest_bytes = 0, rest_count = 0;
    for (const SiteGroup& g : h.sites) {
      if (top && shown >= top) {
        rest_bytes += g.bytes;
        rest_count += g.count;
        continue;
      }
      ++shown;
      text += fmt::format("  {} {:5.1f}%  in {} ({}) from:\n", size_and_bytes(g.bytes),
                          whole ? 100.0 * double(g.bytes) / double(whole) : 0.0,
                          plural(g.count, "allocation", "allocations"), api_name(g.api));
      append_frames(text, frames_of(stacks, replay, g.stack), depth, "      ");
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
      if (p.peak_seq) {
        text += fmt::format("\n{}: peak {} at {} (seq {}) in {}\n", series_label(p.key),
                            size_and_bytes(p.peak_bytes),
                            human_duration(since_start(reader, p.peak_time_ns)), p.peak_seq,
                            plural(p.at_peak.count, "allocation", "allocations"));
        text += "PEAK MEMORY CONSUMERS\n";
        append_sites(text, replay, stacks, p.at_peak, p.peak_bytes);
      }
      if (p.first_failure) {
        const Failure& f = *p.first_failure;
        text += fmt::format("\n{} ran out at {} (seq {}): {} of {} returned error {}\n",
                            series_label(p.key), human_duration(since_start(reader, f.time_ns)),
                            f.seq, api_name(f.api), size_and_bytes(f.bytes), f.result);
        text += fmt::format("WHAT HELD THE MEMORY WHEN IT RAN OUT: {} in {}\n",
                            size_and_bytes(p.at_failure.bytes),
                            plural(p.at_failure.count, "allocation", "allocations"));
        append_sites(text, replay, stacks, p.at_failure, p.at_failure.bytes);
      }
    }
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
    write_warnings(json, facts, stacks);
    json.end_object();
  }

  const ReportOptions& options_;
  bool any_failure_ = false;
};

}  // namespace

std::unique_ptr<Report> make_peak_report(const ReportOptions& options) {
  return std::make_unique<PeakReport>(options);
}

}  // namespace gmemhook::analysis

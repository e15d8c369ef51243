// `gmemhook leaks`: what was live at the end (never freed, or live when the process died), or at
// the moment --at / --at-seq names, grouped by identical stack, largest first — in the shape of
// LeakSanitizer's report. One pass over the events.
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "analyzer/log/event_info.h"
#include "analyzer/log/name_table.h"
#include "analyzer/model/block_layer.h"
#include "analyzer/model/checkpoints.h"
#include "analyzer/output/stack_text.h"
#include "analyzer/output/text_format.h"
#include "analyzer/reports/allocated_layer.h"
#include "analyzer/reports/process_context.h"
#include "analyzer/reports/report.h"
#include "analyzer/reports/site_rows_json.h"

namespace gmemhook::analysis {

namespace {

constexpr size_t kTextTop = kLeakRowsText;
constexpr size_t kTextDepth = 8;

bool is_memory(const SiteGroup& g) {
  return g.kind == LiveKind::Allocation || g.kind == LiveKind::Physical;
}

const char* kind_name(LiveKind k) {
  return name_in(k, {"allocation", "physical", "mapping", "reservation"});
}

// "(cudaMalloc, device 0)", "(cudaMallocHost, pinned host memory)".
std::string where(const SiteGroup& g) {
  return fmt::format("({}, {})", site_api_name(g.api), series_label(g.series));
}

// JSON's `kind`: PyTorch's blocks are "block" whatever the replay calls them.
const char* json_kind(const SiteGroup& g) {
  return is_block_api(g.api) ? "block" : kind_name(g.kind);
}

// What the live set stands for at the chosen moment.
struct LiveAtMoment {
  Moment at = Moment::End;  // or Time, Seq
  uint64_t seq = 0, time_ns = 0;
  std::vector<SiteGroup> groups;
  std::vector<CachedSegments> cached;  // PyTorch's cache: not leaks
};

struct Total {
  uint64_t bytes = 0, count = 0;
};

// The memory groups (in the live set's order, largest first: JSON's `leaks`) and the rows the
// text lists them in (--group-by, site_rows.h). JSON's `rows` are the same rows, so a reader of
// the page, which draws them, and of the text sees the same answers.
struct LeakRows {
  std::vector<const SiteGroup*> memory;
  std::vector<SiteStack> sites;  // one per memory group, same order
  std::vector<SiteRow> rows;
};

// What `leaks` found in one process; rendered as text, JSON or weighted stacks.
class LeaksModel final : public ProcessModel {
 public:
  LeaksModel(const ReportOptions& options, ProcessHeader header, FrameLookup frames,
             std::vector<SeriesKey> series, LiveAtMoment live)
      : ProcessModel(options, std::move(header), frames),
        series_(std::move(series)),
        m_(std::move(live)) {}

  void text(std::string& text) const override { write_text(text); }

  // --format folded / speedscope: memory only (address space holds none), a profile per series.
  void stacks(StackExport& out) const override {
    const size_t top = options_.top.value_or(0);
    for (const SeriesKey& key : series_) {
      size_t shown = 0;
      for (const SiteGroup& g : m_.groups) {
        if (!is_memory(g) || !(g.series == key) || (top && shown >= top)) continue;
        if (shown++ == 0)
          out.begin_profile(
              fmt::format("{}: {} live at {}", h_.title, series_label(key),
                          m_.at == Moment::End ? "end" : "seq " + std::to_string(m_.seq)));
        out.add(frames_(g.stack), g.bytes);
      }
    }
  }

 private:
  void write_text(std::string& text) const {
    const LiveAtMoment& m = m_;
    const ProcessEnd& end = h_.end;
    const bool at_end = m.at == Moment::End;
    std::string heading, verb;
    if (!at_end) {
      heading = fmt::format("live at {} (after seq {})", event_time_text(h_, m.time_ns), m.seq);
      verb = fmt::format("Live at {}:", event_time_text(h_, m.time_ns));
    } else if (exited_with_full_log(end)) {
      heading = "never freed (leaked at exit)";
      verb = "Leaked";
    } else if (end.still_running) {
      heading = "live so far";
      verb = "Live so far:";
    } else if (end.incomplete) {  // the log stopped, the process did not die there
      heading = "live when the log stops";
      verb = "Live when the log stops:";
    } else {
      heading = "live at the moment it died";
      verb = "Live when it died:";
    }
    text += fmt::format("{}: {}; {}\n", h_.title, end.text, heading);

    const size_t top = top_limit(options_, kTextTop);
    const StackStyle style = stack_style(options_, kTextDepth);
    std::array<Total, 4> by_memory{};
    for (const SiteGroup& g : m.groups) {
      if (!is_memory(g)) continue;
      by_memory[static_cast<size_t>(g.series.memory)].bytes += g.bytes;
      by_memory[static_cast<size_t>(g.series.memory)].count += g.count;
    }
    const LeakRows rows = leak_rows();
    for (size_t r = 0; r < rows.rows.size() && !(top && r >= top); ++r) {
      const SiteRow& row = rows.rows[r];
      const SiteGroup& g = *rows.memory[row.members.front()];
      const bool physical = g.kind == LiveKind::Physical;
      const std::string things_held =
          physical              ? plural(row.count, "physical allocation", "physical allocations")
          : is_block_api(g.api) ? plural(row.count, "block", "blocks")
                                : plural(row.count, "allocation", "allocations");
      text += fmt::format("\n{} {} in {} {}{}:\n", verb, size_and_bytes(row.bytes), things_held,
                          where(g), physical ? " created from" : " allocated from");
      append_site_stacks(text, row_stacks(row, rows.sites), style, "    ");
      // CUDA graph memory: the node above says where it was asked for, the launch (or the upload
      // ahead of it: cudaGraphUpload, an instantiation with the upload flag) when it came.
      if (g.launch_stack)
        append_made_live(text, g.launch_api, frames_(g.launch_stack), style, "  ");
    }
    if (const Total omitted = left_out(rows, top); omitted.count)
      text += fmt::format("\n... and {} more in {} (--top 0 shows all)\n",
                          size_and_bytes(omitted.bytes),
                          plural(omitted.count, "allocation", "allocations"));
    // Address space still mapped or reserved holds no memory of its own, but a program that
    // never unmaps or frees its ranges usually forgot the handles too.
    std::vector<const SiteGroup*> ranges;
    for (const SiteGroup& g : m.groups)
      if (!is_memory(g)) ranges.push_back(&g);
    // Mappings first: they sit on the memory listed above, reservations under the mappings.
    std::stable_sort(ranges.begin(), ranges.end(), [](const SiteGroup* a, const SiteGroup* b) {
      return a->kind == LiveKind::Mapping && b->kind != LiveKind::Mapping;
    });
    size_t shown_ranges = 0;
    for (const SiteGroup* range : ranges) {
      const SiteGroup& g = *range;
      if (top && shown_ranges >= top) continue;
      ++shown_ranges;
      if (g.kind == LiveKind::Mapping)
        text += fmt::format(
            "\nStill mapped: {} in {} {}, address space over the memory above, mapped from:\n",
            size_and_bytes(g.bytes), plural(g.count, "mapping", "mappings"), where(g));
      else
        text += fmt::format("\nStill reserved: {} of address space in {} ({}, {}) reserved from:\n",
                            size_and_bytes(g.bytes), plural(g.count, "range", "ranges"),
                            api_name(g.api), series_label(g.series));
      append_frames(text, frames_(g.stack), style, "    ");
    }

    uint64_t cached_bytes = 0;
    if (!m.cached.empty()) text += "\n";
    for (const CachedSegments& c : m.cached) {
      text += cached_line(c);
      cached_bytes += c.bytes;
    }

    std::vector<std::string> parts;
    static const char* const kMemoryWords[] = {"device memory", "pinned host memory",
                                               "managed memory"};
    for (size_t i = 0; i < 3; ++i)
      if (by_memory[i].count)
        parts.push_back(fmt::format("{} of {} in {}", size_and_bytes(by_memory[i].bytes),
                                    kMemoryWords[i],
                                    plural(by_memory[i].count, "allocation", "allocations")));
    text += "\nSUMMARY: gmemhook: ";
    if (parts.empty()) {
      text += at_end ? (exited_with_full_log(end) ? "nothing leaked: every allocation was freed"
                                                  : "nothing was live when the log ends")
                     : "nothing was live at that moment";
    } else {
      text += (at_end && exited_with_full_log(end) ? "leaked " : "live: ");
      for (size_t i = 0; i < parts.size(); ++i) text += (i ? "; " : "") + parts[i];
    }
    if (cached_bytes)
      text += fmt::format(" ({} more cached by PyTorch's allocator, not leaked)",
                          human_size(cached_bytes));
    text += ".\n";
  }

  void members(JsonWriter& json) const override {
    const LiveAtMoment& m = m_;
    const size_t top = top_limit(options_, kTextTop);
    const size_t depth = depth_limit(options_, kTextDepth);
    json.field("at", moment_name(m.at));
    json.field("at_seq", m.seq);
    json.field("at_time_ns", since_start(h_, m.time_ns));
    Total total;
    std::array<Total, 4> by_memory{};
    for (const SiteGroup& g : m.groups)
      if (is_memory(g)) {
        total.bytes += g.bytes;
        total.count += g.count;
        by_memory[static_cast<size_t>(g.series.memory)].bytes += g.bytes;
        by_memory[static_cast<size_t>(g.series.memory)].count += g.count;
      }
    json.field("total_bytes", total.bytes);
    json.field("total_count", total.count);
    json.object("by_memory", [&] {
      for (size_t i = 0; i < 3; ++i)
        json.object(format::to_string(static_cast<format::MemoryType>(i)), [&] {
          json.field("bytes", by_memory[i].bytes);
          json.field("count", by_memory[i].count);
        });
    });
    for (int pass = 0; pass < 2; ++pass) {
      const bool memory = pass == 0;
      json.key(memory ? "leaks" : "address_space");
      json.begin_array();
      size_t shown = 0;
      for (const SiteGroup& g : m.groups) {
        if (is_memory(g) != memory || (top && shown >= top)) continue;
        ++shown;
        json.begin_object();
        write_series_fields(json, g.series);
        json.field("api", api_name(g.api));
        json.field("kind", json_kind(g));
        json.field("bytes", g.bytes);
        json.field("count", g.count);
        // The heading the text gives this stack's site ("no frame of user code: every frame in
        // libcublas.so.13, ..."): said once here rather than rebuilt by each reader.
        if (memory) json.field("where", user_frame_text(frames_(g.stack)));
        write_frames(json, frames_(g.stack), depth);
        if (g.launch_stack) write_made_live(json, g.launch_api, frames_(g.launch_stack), depth);
        json.end_object();
      }
      json.end_array();
    }
    write_rows(json, top);
    write_cached(json, m.cached);
  }

  LeakRows leak_rows() const {
    LeakRows r;
    for (const SiteGroup& g : m_.groups)
      if (is_memory(g)) {
        r.memory.push_back(&g);
        r.sites.push_back({&frames_(g.stack), g.bytes, g.count, where(g), is_block_api(g.api)});
      }
    r.rows = group_sites(r.sites, options_.group_by);
    return r;
  }

  // What --top leaves out of the rows: the text's "... and N more" line, JSON's `rows_omitted`.
  static Total left_out(const LeakRows& rows, size_t top) {
    Total t;
    for (size_t r = top; top && r < rows.rows.size(); ++r) {
      t.bytes += rows.rows[r].bytes;
      t.count += rows.rows[r].count;
    }
    return t;
  }

  // `rows`: the text's rows, each with its heading, totals and the indices of its stacks in
  // `leaks` (those --top kept there; `stacks` counts them all).
  void write_rows(JsonWriter& json, size_t top) const {
    const LeakRows rows = leak_rows();
    const bool by_function = stack_style(options_, kTextDepth).by_function;
    write_site_rows(json, rows.rows, top, "leaks", [&](const SiteRow& row) {
      const SiteGroup& g = *rows.memory[row.members.front()];
      json.field("where", user_frame_text(frames_(g.stack), by_function));
      write_series_fields(json, g.series);
      json.field("api", api_name(g.api));
      json.field("kind", json_kind(g));
    });
    // Said, not left to be worked out from the totals: the page prints it under its table.
    const Total omitted = left_out(rows, top);
    json.object("rows_omitted", [&] {
      json.field("rows", top && rows.rows.size() > top ? rows.rows.size() - top : 0);
      json.field("bytes", omitted.bytes);
      json.field("count", omitted.count);
    });
  }

  std::vector<SeriesKey> series_;  // in report order, as --device and --memory leave them
  LiveAtMoment m_;
};

class LeaksReport : public Report {
 public:
  explicit LeaksReport(const ReportOptions& options) : options_(options) {}

  std::unique_ptr<ReportModel> analyze(ProcessContext& process) override {
    LiveAtMoment m;
    bool captured = false;
    BlockLayer blocks;  // PyTorch's blocks
    auto capture = [&](const Replay& r, std::optional<uint64_t> time_ns) {
      const auto want = [&](const SeriesKey& k) { return wanted_series(options_, k); };
      // With PyTorch's blocks, the leaks are the tensors; the allocator's segments are not.
      m.groups = with_blocks(r, blocks, group_live(r, want, true), want);
      m.cached = cached_now(blocks, want);
      m.seq = r.last_seq();
      m.time_ns = time_ns.value_or(r.last_time_ns());
      captured = true;
    };
    std::optional<Checkpoints> moment;
    if (options_.at_seq) {
      m.at = Moment::Seq;
      moment.emplace(std::vector<uint64_t>{*options_.at_seq},
                     [&](const Replay& r, uint64_t) { capture(r, std::nullopt); });
    } else if (options_.at_seconds) {
      m.at = Moment::Time;
      const uint64_t at = at_time_ns(process.reader(), *options_.at_seconds);
      moment.emplace(at, [&, at](const Replay& r) { capture(r, at); });
    }
    const Replay replay = moment ? process.pass({&blocks, &*moment}) : process.pass({&blocks});
    if (!captured) capture(replay, std::nullopt);

    for (const SiteGroup& g : m.groups)
      if (is_memory(g)) {
        auto& t = totals_[static_cast<size_t>(g.series.memory)];
        t.bytes += g.bytes;
        t.count += g.count;
      }
    std::vector<SeriesKey> series;
    for (const Series* s : ordered_series(replay))
      if (wanted_series(options_, s->key)) series.push_back(s->key);
    return std::make_unique<LeaksModel>(options_, process.header(), process.frames(),
                                        std::move(series), std::move(m));
  }

  std::string next_step() const override {
    const std::string run = shell_word(options_.run_arg);
    if (totals_[0].bytes || totals_[1].bytes || totals_[2].bytes)
      return hint_line("gmemhook peak " + run, "who held the memory at the peak");
    return hint_line("gmemhook summary " + run, "allocations, peaks and failures per device");
  }

  void merge(const Report& other) override {
    const auto& from = static_cast<const LeaksReport&>(other).totals_;
    for (size_t i = 0; i < totals_.size(); ++i) {
      totals_[i].bytes += from[i].bytes;
      totals_[i].count += from[i].count;
    }
  }

 private:
  const ReportOptions& options_;
  std::array<Total, 4> totals_{};
};

}  // namespace

std::unique_ptr<Report> make_leaks_report(const ReportOptions& options) {
  return std::make_unique<LeaksReport>(options);
}

}  // namespace gmemhook::analysis

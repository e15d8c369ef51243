// The graph pool's lines and JSON (see graph_pool_lines.h).
#include "analyzer/reports/graph_pool_lines.h"

#include <fmt/format.h>

#include "analyzer/output/text_format.h"

namespace gmemhook::analysis {

namespace {

// What the pool keeps beyond what its allocations use: spare memory, counted nowhere else.
uint64_t spare(const GraphPoolFigure& f) { return f.reserved - std::min(f.reserved, f.used); }

void write_figure(JsonWriter& json, const GraphPoolFigure& f) {
  json.begin_object();
  json.field("reserved_bytes", f.reserved);
  json.field("used_bytes", f.used);
  json.field("spare_bytes", spare(f));
  json.field("seq", f.seq);
  json.end_object();
}

}  // namespace

std::optional<GraphPoolView> graph_pool_view(const GraphPoolFigures& pool, const SeriesKey& key,
                                             uint64_t peak_seq) {
  if (key.memory != format::MemoryType::Device) return std::nullopt;
  const GraphPoolDevice* d = pool.device(key.device);
  if (!d) return std::nullopt;
  GraphPoolView v;
  if (peak_seq) v.at_peak = pool.at(key.device, peak_seq);
  v.last = d->last;
  v.used_high = d->used_high;
  v.reserved_high = d->reserved_high;
  return v;
}

void append_graph_pool_summary(std::string& text, const GraphPoolView& v) {
  text += fmt::format(
      "    graph pool    CUDA graph memory pool: reserved {} (high-water {}), used by graph "
      "allocations {}, after the last graph launch, upload or trim (seq {})\n",
      human_size(v.last.reserved), human_size(v.reserved_high), human_size(v.last.used),
      v.last.seq);
  if (v.at_peak)
    text += fmt::format(
        "                  at the peak: reserved {}, used {}, spare {}: the pool's, not in the "
        "peak, which counts graph allocations by requested size\n",
        human_size(v.at_peak->reserved), human_size(v.at_peak->used),
        human_size(spare(*v.at_peak)));
}

void append_graph_pool_at_peak(std::string& text, const GraphPoolView& v) {
  if (!v.at_peak) return;
  text += fmt::format(
      "  CUDA graph memory pool at the peak: reserved {} (high-water {}), used by graph "
      "allocations {}, spare {}; not in the peak, which counts graph allocations by requested "
      "size\n",
      human_size(v.at_peak->reserved), human_size(v.reserved_high), human_size(v.at_peak->used),
      size_and_bytes(spare(*v.at_peak)));
}

void write_graph_pool(JsonWriter& json, const std::optional<GraphPoolView>& v) {
  json.key("graph_pool");
  if (!v) return json.null();
  json.begin_object();
  json.key("last");
  write_figure(json, v->last);
  json.key("at_peak");
  if (v->at_peak)
    write_figure(json, *v->at_peak);
  else
    json.null();
  json.field("reserved_high_bytes", v->reserved_high);
  json.field("used_high_bytes", v->used_high);
  json.end_object();
}

}  // namespace gmemhook::analysis

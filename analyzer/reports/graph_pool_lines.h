// The CUDA graph memory pool as the reports show it: the driver's reserved and used
// figures beside a device's series, at its peak and after the last graph call, never added to
// what the series counts (graph_pool.h says why).
#pragma once

#include <optional>
#include <string>

#include "analyzer/model/graph_pool.h"
#include "analyzer/output/json_writer.h"

namespace gmemhook::analysis {

// What a report keeps of one device's pool: the figures at one moment (the series' peak) and at
// the last record, with the run's high-water marks.
struct GraphPoolView {
  std::optional<GraphPoolFigure> at_peak;  // none when nothing was recorded by the peak
  GraphPoolFigure last;
  uint64_t used_high = 0, reserved_high = 0;
};
// The view of the pool of `key`'s device, when it is device memory whose pool was recorded.
std::optional<GraphPoolView> graph_pool_view(const GraphPoolFigures& pool, const SeriesKey& key,
                                             uint64_t peak_seq);

// Summary: the pool after its last record and at the series' peak, two lines.
void append_graph_pool_summary(std::string& text, const GraphPoolView& v);
// Peak: the pool at the series' peak, one line.
void append_graph_pool_at_peak(std::string& text, const GraphPoolView& v);
// "graph_pool": {...} or null (docs/json.md).
void write_graph_pool(JsonWriter& json, const std::optional<GraphPoolView>& v);

}  // namespace gmemhook::analysis

// The graph pool's recorded figures per device (see graph_pool.h).
#include "analyzer/model/graph_pool.h"

#include <algorithm>

#include "analyzer/log/event_info.h"

namespace gmemhook::analysis {

using format::EventKind;

const GraphPoolDevice* GraphPoolFigures::device(int32_t device) const {
  for (const GraphPoolDevice& d : devices_)
    if (d.device == device) return &d;
  return nullptr;
}

std::optional<GraphPoolFigure> GraphPoolFigures::at(int32_t of, uint64_t seq) const {
  const GraphPoolDevice* d = device(of);
  if (!d) return std::nullopt;
  auto after = std::upper_bound(d->changes.begin(), d->changes.end(), seq,
                                [](uint64_t s, const GraphPoolFigure& f) { return s < f.seq; });
  if (after == d->changes.begin()) return std::nullopt;
  return *std::prev(after);
}

bool GraphPoolFigures::calls_of(EventKind kind) const {
  // Allocator blocks carry totals too (PyTorch's): only graph calls carry the pool's.
  return is_one_of(kind, {EventKind::GraphLaunch, EventKind::GraphUpload, EventKind::GraphMemTrim,
                          EventKind::GraphInstantiate});
}

void GraphPoolFigures::call(const Replay&, const format::Event& ev, const format::ApiInfo& api) {
  if (!calls_of(api.kind)) return;
  if (ev.result != 0 || !ev.f.has(format::kHasTotals) || !ev.f.has(format::kHasDevice)) return;
  const auto device = static_cast<int32_t>(ev.f.device);
  auto it = std::find_if(devices_.begin(), devices_.end(),
                         [&](const GraphPoolDevice& d) { return d.device == device; });
  if (it == devices_.end()) {
    devices_.emplace_back();
    devices_.back().device = device;
    it = std::prev(devices_.end());
  }
  GraphPoolDevice& d = *it;
  const GraphPoolFigure f{ev.seq, ev.f.allocated, ev.f.reserved};
  ++d.records;
  // A steady loop of launches records the same figures each time: keep only the changes.
  if (d.changes.empty() || d.changes.back().used != f.used ||
      d.changes.back().reserved != f.reserved)
    d.changes.push_back(f);
  d.last = f;
  d.used_high = std::max(d.used_high, f.used);
  if (f.reserved > d.reserved_high) {
    d.reserved_high = f.reserved;
    d.reserved_high_seq = f.seq;
  }
}

}  // namespace gmemhook::analysis

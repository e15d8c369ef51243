// Graph capture and launch bookkeeping (see graph_tracker.h).
#include "analyzer/model/graph_tracker.h"

#include <algorithm>

#include "analyzer/log/event_info.h"

namespace gmemhook::analysis {

using format::EventKind;

// The kinds call() counts; it returns at once on any other. Allocations only count on a stream
// being captured or after a launch: the replay is asked for them then (a call per allocation
// of a program without graphs was 1.5 % of `summary`).
bool GraphTracker::calls_of(EventKind kind) const {
  return is_one_of(kind, {EventKind::CaptureBegin, EventKind::CaptureEnd, EventKind::GraphLaunch,
                          EventKind::GraphUpload, EventKind::GraphInstantiate});
}

void GraphTracker::call(const Replay& r, const format::Event& ev, const format::ApiInfo& api) {
  if (ev.result != 0) return;
  const auto it = [&] {
    return std::find(capturing_streams_.begin(), capturing_streams_.end(), ev.f.stream);
  };
  switch (api.kind) {
    case EventKind::CaptureBegin:
      ++activity_.captures;
      if (it() == capturing_streams_.end()) capturing_streams_.push_back(ev.f.stream);
      r.also_call(*this, EventKind::Alloc);
      return;
    case EventKind::CaptureEnd:
      if (auto at = it(); at != capturing_streams_.end()) capturing_streams_.erase(at);
      return;
    case EventKind::GraphLaunch:
      ++activity_.launches;
      r.also_call(*this, EventKind::Alloc);
      return;
    case EventKind::GraphUpload:
      ++activity_.uploads;
      return;
    case EventKind::GraphInstantiate:
      if (ev.f.flags & 2) ++activity_.uploads;  // cudaGraphInstantiateFlagUpload: uploads at once
      return;
    case EventKind::Alloc:
      if (activity_.launches) ++activity_.allocations_between_launches;
      if (!ev.f.has(format::kHasStream) || it() == capturing_streams_.end()) return;
      ++activity_.capture_allocations;
      activity_.capture_bytes += ev.f.size;
      return;
    default:
      return;
  }
}

}  // namespace gmemhook::analysis

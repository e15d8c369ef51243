// Which calls the core applies the way a list of segments (what a caching allocator got from
// CUDA: its live device allocations and mappings) would follow them, by kind; for allocations,
// frees and maps the replay checks each call (core_stands_for_segments, replay.h). BlockLayer
// follows no segments of its own while this holds for every call, and is not called for those
// kinds at all until then: keeping a second segment list costs every PyTorch replay.
#pragma once

#include "analyzer/log/event_info.h"
#include "gmemhook/codec.h"

namespace gmemhook::analysis {

// The kinds of call that stand for segments whatever the event: none changes a segment.
inline bool always_stands_for_segments(format::EventKind kind) {
  using format::EventKind;
  return is_one_of(
      kind, {EventKind::Create, EventKind::Release, EventKind::Reserve, EventKind::AddressFree,
             EventKind::Retain, EventKind::Export, EventKind::GraphMemTrim});
}

// The kinds that may or may not stand for segments, event by event; the others always do
// (always_stands_for_segments) or never do (blocks, unmaps, captures, graphs, imports).
inline bool is_segment_call(format::EventKind kind) {
  return kind == format::EventKind::Alloc || kind == format::EventKind::Free ||
         kind == format::EventKind::Map;
}

}  // namespace gmemhook::analysis

// Which calls the core applies the way a list of segments (what a caching allocator got from
// CUDA: its live device allocations and mappings) would follow them. BlockLayer follows no
// segments of its own while this holds for every call, and the replay makes
// this check itself for allocations, frees and maps so that BlockLayer is not called for them
// at all until then.
#pragma once

#include "analyzer/log/event_info.h"
#include "analyzer/model/replay.h"
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

// Whether the core's state after this call will still say which segments exist: true for the
// calls it applies the way a segment list would (checked before the core applies the call).
// One function per kind, so that the replay's own switch on the kind picks one.
inline bool core_is_mapping(const Replay& core, uint64_t address) {
  return !core.mappings().empty() && core.mappings().count(address) != 0;
}
[[gnu::always_inline]] inline bool alloc_stands_for_segments(const Replay& core,
                                                             const format::Event& ev,
                                                             const format::ApiInfo& api) {
  if (ev.result != 0 || ev.f.address == 0) return true;  // changes nothing here nor there
  // The core clamps devices below -1 (a segment keeps the call's own), and an address live or
  // mapped already is replaced differently on each side.
  if (ev.f.device < -1 || core_is_mapping(core, ev.f.address)) return false;
  const format::MemoryType memory = ev.f.has(format::kHasMemory) ? ev.f.memory : api.memory;
  if (memory == format::MemoryType::Device || memory == format::MemoryType::None) return true;
  const LiveAllocation* old = core.live().find(ev.f.address);
  return !old || core.series()[old->series].key.memory != format::MemoryType::Device;
}
[[gnu::always_inline]] inline bool free_stands_for_segments(const Replay& core,
                                                            const format::Event& ev) {
  // A free of a mapped address ends the segment here, not the mapping.
  return ev.result != 0 || !core_is_mapping(core, ev.f.address);
}
inline bool map_stands_for_segments(const Replay& core, const format::Event& ev) {
  return ev.result != 0 ||
         (ev.f.address != 0 && ev.f.device >= -1 && !core.live().find(ev.f.address));
}
inline bool core_stands_for_segments(const Replay& core, const format::Event& ev,
                                     const format::ApiInfo& api, format::EventKind kind) {
  switch (kind) {
    case format::EventKind::Alloc:
      return alloc_stands_for_segments(core, ev, api);
    case format::EventKind::Free:
      return free_stands_for_segments(core, ev);
    case format::EventKind::Map:
      return map_stands_for_segments(core, ev);
    default:
      return ev.result != 0 || always_stands_for_segments(kind);
  }
}

}  // namespace gmemhook::analysis

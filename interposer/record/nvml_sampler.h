// What nvidia-smi would show, sampled inside the traced process: NVML's memory figure
// for this process and for the whole device, on every device the process uses, written as
// NvmlSample records into process.gmh. They explain what no allocation does (the CUDA context,
// module images, library workspaces) and are never counted as allocations.
//
// Which devices: every device an event names (kNvmlDeviceKinds below), the first call's own or,
// when it names none, the calling thread's.
//
// When: after the first CUDA call, after the first allocation (a graph launch or upload that
// leaves the graph pool holding memory counts as one), every GMEMHOOK_NVML_INTERVAL_MS
// (a background thread that does nothing else), at new highs of the process's figure (checked at
// most four times per interval, after allocations), and at exit. No NVML (no library, MIG, a
// container without it) leaves one note and changes nothing else.
#pragma once

#include <atomic>
#include <cstdint>

#include "gmemhook/api_table.h"
#include "gmemhook/codec.h"
#include "interposer/base/config.h"
#include "interposer/base/event_globals.h"

namespace gmemhook {

// What the inline tests below read lies on the event's line (event_globals.h): whether the first
// call's sample was taken (or handed to the thread), the devices covered, the first allocation's
// sample and the last peak request; nvml_event_slow does the rest.

// The kinds whose events may name a device the sampler should cover: not allocations alone, or a
// program whose first calls are graph calls (an allocation node first) would get samples covering
// no device at all. Per kind:
// - Alloc, Create, Map: device memory made or mapped (host and managed memory name no device).
// - GraphAllocNode: the node's pool's device; its memory comes with a launch, not here.
// - GraphLaunch, GraphUpload, GraphInstantiate (with the upload flag): the graph pool's device,
//   named when its figures were read; allocation nodes get their memory there.
// - GraphMemTrim: the device whose graph pool gives memory back.
// - Reserve, Import, Retain: the calling context's device; the process works there.
// Left out: releases and frees (their memory's device was named when it was made), capture,
// graph bookkeeping and exports (no device), and BlockAlloc (a framework's block lives in a
// segment whose allocation named the device already; left out, a tensor's event stays as cheap).
inline constexpr uint32_t kNvmlDeviceKinds = [] {
  using K = format::EventKind;
  uint32_t bits = 0;
  for (K k : {K::Alloc, K::Create, K::Map, K::GraphAllocNode, K::GraphLaunch, K::GraphUpload,
              K::GraphInstantiate, K::GraphMemTrim, K::Reserve, K::Import, K::Retain})
    bits |= 1u << static_cast<unsigned>(k);
  return bits;
}();
inline bool nvml_may_name_device(format::EventKind k) {
  return static_cast<unsigned>(k) < 32 && (kNvmlDeviceKinds >> static_cast<unsigned>(k) & 1);
}

// Whether an event that names a device (nvml_sampler.cpp's nvml_device_of) allocated there,
// for the first allocation's sample and the checks for new highs. A launch or upload counts when
// the graph pool holds memory after it (its figures' reserved bytes): that is what nvidia-smi
// sees grow, and a graph with no memory nodes on an empty pool allocates nothing.
inline bool nvml_allocates(format::EventKind k, const format::EventFields& f) {
  using K = format::EventKind;
  if (k == K::Alloc || k == K::Create || k == K::Map) return true;
  return (k == K::GraphLaunch || k == K::GraphUpload || k == K::GraphInstantiate) &&
         f.has(format::kHasTotals) && f.reserved > 0;
}

void nvml_event_slow(format::ApiId api, format::EventKind kind, uint32_t result,
                     const format::EventFields& fields, uint64_t now_ns);

// Whether nvml_event_slow would do nothing for an event of a kind that may name a device: the
// first call's sample is taken, its device (if it names one the sampler covers) is known
// already, and, for an allocation, the first allocation's sample is taken and less than a
// quarter interval has gone since the last peak request. Each test is one of the slow path's, so
// the answer is exact; a "no" only means the slow path decides. The usual allocation stops here,
// without the out-of-line call and three more cache lines the slow path costs (GMEMHOOK_NVML is
// on by default).
inline bool nvml_allocation_asks_nothing(format::EventKind kind, uint32_t result,
                                         const format::EventFields& fields, uint64_t now_ns) {
  const EventGlobals& g = g_event_globals;
  if (!g.nvml_first_call_done.load(std::memory_order_acquire)) return false;
  // A new device is noted by the slow path whatever the time (a failed call notes none). The
  // device is read only where the mask says it is set (a wrapper leaves it unset otherwise).
  if (result == 0 && fields.has(format::kHasDevice)) {
    const auto device = static_cast<uint32_t>(fields.device);
    if (device < 64 && !(g.nvml_devices.load(std::memory_order_relaxed) >> device & 1))
      return false;
  }
  if (!nvml_allocates(kind, fields)) return true;
  if (!g.nvml_first_allocation_done.load(std::memory_order_acquire)) return false;
  const uint64_t gap = static_cast<uint64_t>(g_config.nvml_interval_ms) * 250000ull;
  return now_ns - g.nvml_last_peak_request_ns.load(std::memory_order_relaxed) < gap;
}

// Called by the recorder after an event was written, with no lock of ours held. Cheap unless it
// is the first call or first allocation of the process (those sample on the calling thread, and
// only when no sample is under way: a hook never waits for NVML), an event naming a device not
// yet covered, or an allocation that may set a new high. Inline: with NVML off, or after the
// first call for a kind that names no device, it is nothing.
inline void nvml_after_event(format::ApiId api, format::EventKind kind, uint32_t result,
                             const format::EventFields& fields, uint64_t now_ns) {
  if (!g_config.nvml) return;
  if (!nvml_may_name_device(kind)) {
    if (g_event_globals.nvml_first_call_done.load(std::memory_order_acquire)) return;
  } else if (nvml_allocation_asks_nothing(kind, result, fields, now_ns)) {
    return;
  }
  nvml_event_slow(api, kind, result, fields, now_ns);
}
// The exit sample. Afterwards the background thread never enters NVML again: libraries' own
// destructors run next. Waits at most for the sample under way.
void nvml_at_exit();
// In a fork child: the thread did not survive fork; a child that uses CUDA starts afresh.
void nvml_fork_child();

}  // namespace gmemhook

// What nvidia-smi would show, sampled inside the traced process (issue 13): NVML's memory figure
// for this process and for the whole device, on every device the process uses, written as
// NvmlSample records into process.gmh. They explain what no allocation does (the CUDA context,
// module images, library workspaces) and are never counted as allocations.
//
// When: after the first CUDA call, after the first allocation, every GMEMHOOK_NVML_INTERVAL_MS
// (a background thread that does nothing else), at new highs of the process's figure (checked at
// most four times per interval, after allocations), and at exit. No NVML (no library, MIG, a
// container without it) leaves one note and changes nothing else.
#pragma once

#include <cstdint>

#include "gmemhook/api_table.h"
#include "gmemhook/codec.h"

namespace gmemhook {

// Called by the recorder after an event was written, with no lock of ours held. Cheap unless it
// is the first call or first allocation of the process (those sample on the calling thread, and
// only when no sample is under way: a hook never waits for NVML).
void nvml_after_event(format::ApiId api, format::EventKind kind, uint32_t result,
                      const format::EventFields& fields, uint64_t now_ns);
// The exit sample. Afterwards the background thread never enters NVML again: libraries' own
// destructors run next. Waits at most for the sample under way.
void nvml_at_exit();
// In a fork child: the thread did not survive fork; a child that uses CUDA starts afresh.
void nvml_fork_child();

}  // namespace gmemhook

// `gmemhook html --format memory-viz`: one process of a run as a pickle in the format of PyTorch's
// memory snapshots (torch.cuda.memory._snapshot()), so PyTorch's own viewer opens it:
// `python -m torch.cuda._memory_viz trace_plot FILE -o out.html`, or pytorch.org/memory_viz. Any
// program gmemhook recorded works, not only PyTorch's caching allocator: CuPy, JAX, CUDA C++.
//
// The mapping: where PyTorch's blocks were recorded, a block is an allocation ('alloc',
// 'free_requested', 'free_completed') and what the allocator got from CUDA a segment
// ('segment_alloc', 'segment_free'); elsewhere every device allocation is both a segment and the
// one allocation filling it. A failed device allocation is an 'oom'. 'segments' is the state at the
// end of the log, each segment tiled by its live blocks and 'inactive' gaps, as PyTorch's are.
#pragma once

#include <cstdio>
#include <string>

#include "analyzer/reports/html_report.h"

namespace gmemhook::analysis {

// The pickle into `out`. Returns a report exit status; errors and notes go to `err`.
int memory_viz_export(const HtmlOptions& options, std::string& out, std::FILE* err);

}  // namespace gmemhook::analysis

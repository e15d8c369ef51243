// Frameworks that take the GPU's memory in one pool up front and hand their buffers out inside
// it, where gmemhook cannot see (a JAX run's "peak 104.9 GiB" was one cuMemCreate of
// 75 % of the H200, against 155 MB JAX itself had in use). Reports say so, and how to see the
// buffers.
#pragma once

#include <optional>
#include <string>

#include "analyzer/log/reader.h"
#include "analyzer/model/replay.h"

namespace gmemhook::analysis {

// A sentence saying that `series`' memory is such a pool and how to see its buffers, or nullopt
// when it does not look like one (the framework not loaded, or many allocations).
std::optional<std::string> framework_pool_note(const ProcessReader& reader, const Series& series);

}  // namespace gmemhook::analysis

// Telling a framework's preallocated pool from the program's own allocations (see
// framework_pool.h).
#include "analyzer/reports/framework_pool.h"

#include <fmt/format.h>

#include "analyzer/output/text_format.h"

namespace gmemhook::analysis {

namespace {

// A pool is a few large allocations: JAX's BFC allocator makes one, then grows only on demand.
// Seen on the H200 (JAX 0.11): the pool's one cuMemCreate of 104.9 GiB came with 7 cuMemAlloc_v2
// of XLA's own (64 MiB and less), so "few" has to allow a handful besides the pool.
constexpr uint64_t kMaxPoolAllocations = 16;
constexpr uint64_t kMinPoolBytes = 1ull << 30;

bool loads_jax(const ProcessReader& reader) {
  const auto& snaps = reader.module_snapshots();
  if (snaps.empty()) return false;
  for (const Module& m : snaps.back().modules) {
    const std::string name = base_name(m.path);
    if (m.path.find("/jaxlib/") != std::string::npos || name.starts_with("xla_extension") ||
        name.starts_with("libjax"))
      return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> framework_pool_note(const ProcessReader& reader, const Series& s) {
  if (s.key.memory != format::MemoryType::Device || s.allocations == 0 ||
      s.allocations > kMaxPoolAllocations || s.peak_bytes < kMinPoolBytes || !loads_jax(reader))
    return std::nullopt;
  return fmt::format(
      "this is JAX's preallocated pool ({} holding {} at the peak), not what JAX had in use: JAX "
      "hands its buffers out inside it, where gmemhook cannot see. To see each buffer, run with "
      "XLA_PYTHON_CLIENT_ALLOCATOR=platform (gmemhook run --jax-buffers sets it), or with "
      "XLA_PYTHON_CLIENT_PREALLOCATE=false for a pool that grows only as needed.",
      plural(s.allocations, "allocation", "allocations"), human_size(s.peak_bytes));
}

}  // namespace gmemhook::analysis

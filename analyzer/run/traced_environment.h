// The environment `gmemhook run` gives the traced command: the caller's, plus LD_PRELOAD and the
// GMEMHOOK_* settings (README "Environment") that every process it starts inherits.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gmemhook::analysis {

struct TraceSettings {
  std::filesystem::path library;  // libgmemhook.so
  std::filesystem::path run_dir;  // absolute: the command may change directory
  std::optional<int> depth;       // GMEMHOOK_DEPTH; unset: inherited or the library's default
  bool no_python = false;         // GMEMHOOK_PYTHON=0
  bool free_stacks = false;       // GMEMHOOK_FREE_STACKS=1
  bool jax_buffers = false;       // XLA_PYTHON_CLIENT_ALLOCATOR=platform: no preallocated pool
};

// The entry of `preload` (an LD_PRELOAD value) that is a copy of the hook `lib`: the same file,
// or one of the same name (another build or install of gmemhook). Of two copies in one process
// only the first records, so `gmemhook run` adds none of its own when there is one.
std::optional<std::filesystem::path> hook_in_preload(const std::string& preload,
                                                     const std::filesystem::path& lib);

// `base` ("NAME=value" strings, e.g. environ) with the settings applied. The library goes first
// in LD_PRELOAD, before anything already there, unless LD_PRELOAD already names a copy of it
// (hook_in_preload). GMEMHOOK_QUIET=1: the processes stay silent and `gmemhook run` prints one
// summary for all of them.
std::vector<std::string> traced_environment(const std::vector<std::string>& base,
                                            const TraceSettings& s);

// The process's own environment as "NAME=value" strings.
std::vector<std::string> current_environment();

}  // namespace gmemhook::analysis

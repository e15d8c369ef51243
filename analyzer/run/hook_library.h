// Finding libgmemhook.so from the gmemhook binary's own location, so `gmemhook run` works from a
// build tree (build/bin → build/lib) and from an installed prefix (bin → lib, lib/gmemhook, lib64).
#pragma once

#include <filesystem>
#include <optional>
#include <vector>

namespace gmemhook::analysis {

// The running binary, symlinks resolved (/proc/self/exe); empty when it cannot be read.
std::filesystem::path self_executable();

// Where the library may be, in the order they are tried, for a gmemhook binary at `exe`.
std::vector<std::filesystem::path> hook_library_candidates(const std::filesystem::path& exe);

// The first candidate that is a regular file.
std::optional<std::filesystem::path> find_hook_library(const std::filesystem::path& exe);

}  // namespace gmemhook::analysis

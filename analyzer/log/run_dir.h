// Finding the logs of a run on disk: <run>/<exe>.<pid>/process.gmh and thread.<tid>.gmh.
#pragma once

#include <filesystem>
#include <vector>

namespace gmemhook::analysis {

// The process directories of `run`, sorted by pid. `run` may itself be a process directory (it
// holds process.gmh) or a process.gmh file. Throws ReadError when `run` is missing or holds no process directory.
std::vector<std::filesystem::path> find_process_dirs(const std::filesystem::path& run);

// The thread files of a process directory, sorted by tid.
std::vector<std::filesystem::path> find_thread_files(const std::filesystem::path& process_dir);

}  // namespace gmemhook::analysis

// Finding the logs of a run on disk: <run>/<exe>.<pid>/process.gmh and thread.<tid>.gmh.
#pragma once

#include <filesystem>
#include <vector>

namespace gmemhook::analysis {

// The process directories of `run`, sorted by pid. `run` may itself be a process directory (it
// holds process.gmh) or a process.gmh file. Throws ReadError when `run` is missing or holds no
// process directory.
std::vector<std::filesystem::path> find_process_dirs(const std::filesystem::path& run);

// A directory of a run that looks like a process's (<exe>.<pid>) but holds no process.gmh, so no
// report can read it: empty, the process was killed between making it and creating the file;
// with thread files, its process.gmh was lost (deleted, not copied).
struct DirWithoutProcessFile {
  std::filesystem::path path;
  size_t thread_files = 0;
};
// Those of `run`, sorted by pid; none when `run` is one process directory or a file.
std::vector<DirWithoutProcessFile> find_dirs_without_process_file(const std::filesystem::path& run);

// The thread files of a process directory, sorted by tid.
std::vector<std::filesystem::path> find_thread_files(const std::filesystem::path& process_dir);

}  // namespace gmemhook::analysis

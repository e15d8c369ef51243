// The one loop over the processes of a run that the reports, `diff` and `dump` share: which
// processes, in which order, and what an unreadable log ends in.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/log/reader.h"

namespace gmemhook::analysis {

// Exit statuses of every command but `run`.
inline constexpr int kExitOk = 0;
inline constexpr int kExitReportFailure = 1;  // the report could not be made (e.g. no such --pid)
inline constexpr int kExitUnreadable = 2;     // a log is missing, of another version, or damaged

// Opens each process directory of `run` (a run directory or one process directory) in pid order,
// only pid `only_pid`'s when given, and calls `visit` with its reader. In a run directory, without
// `only_pid`, the directories of processes that made no CUDA call (left by hooks of log format 1
// and 2, see made_no_cuda_call) are skipped, and their number said in one line on `err` when
// `say_skipped` (reports list only processes that used CUDA). Returns kExitOk;
// kExitReportFailure, after saying so on `err`, when `only_pid` matched no process;
// kExitUnreadable, after saying why on `err`, when a log cannot be read (what `out` got so far
// stays: earlier processes were written).
int walk_processes(const std::filesystem::path& run, std::optional<uint64_t> only_pid,
                   std::FILE* out, std::FILE* err, const std::function<void(ProcessReader&)>& visit,
                   bool say_skipped = true);

// A directory an old hook (log format 1 or 2) made at start-up for every traced process, CUDA or
// not — a pyenv shim's bash, env, readlink: no thread file (no event), no NVML sample, and no End
// record saying CUDA was used. From format 3 on a directory is made at the first CUDA call.
bool made_no_cuda_call(const ProcessReader& reader);

// Whether `run` names a whole run (not one process directory or file): only then are old
// no-CUDA directories skipped, since a directory named on its own is shown whatever it holds.
bool names_whole_run(const std::filesystem::path& run);
// The end of a walk of `run` whose logs were all read, on `err`: the number of old no-CUDA
// directories skipped (`skipped_no_cuda`, nothing when none); once, the processes that were
// killed while starting and were skipped, by directory name — `not_started` (their logs hold
// nothing, NothingRecordedError) and the empty process directories of a whole run — then the
// directories whose process.gmh is missing although they hold thread files
// (find_dirs_without_process_file): nothing a traced process left is passed over without a word.
// Returns kExitOk, or kExitReportFailure after saying so when `only_pid` was asked for and none
// of the processes was `visited`.
int finish_walk(std::FILE* err, const std::filesystem::path& run, std::optional<uint64_t> only_pid,
                size_t visited, size_t skipped_no_cuda, std::vector<std::string> not_started);

}  // namespace gmemhook::analysis

// The one loop over the processes of a run that the reports, `diff` and `dump` share: which
// processes, in which order, and what an unreadable log ends in.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>

#include "analyzer/log/reader.h"

namespace gmemhook::analysis {

// Exit statuses of every command but `run`.
inline constexpr int kExitOk = 0;
inline constexpr int kExitReportFailure = 1;  // the report could not be made (e.g. no such --pid)
inline constexpr int kExitUnreadable = 2;     // a log is missing, of another version, or damaged

// Opens each process directory of `run` (a run directory or one process directory) in pid order,
// only pid `only_pid`'s when given, and calls `visit` with its reader. Returns kExitOk;
// kExitReportFailure, after saying so on `err`, when `only_pid` matched no process;
// kExitUnreadable, after saying why on `err`, when a log cannot be read (what `out` got so far
// stays: earlier processes were written).
int walk_processes(const std::filesystem::path& run, std::optional<uint64_t> only_pid,
                   std::FILE* out, std::FILE* err,
                   const std::function<void(ProcessReader&)>& visit);

}  // namespace gmemhook::analysis

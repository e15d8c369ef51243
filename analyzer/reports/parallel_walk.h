// The processes of a run analysed on several threads at once (so that a 64-rank run takes
// about the time of its largest process ÷ cores), their results handed back in pid order.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>

#include "analyzer/log/reader.h"

namespace gmemhook::analysis {

// What a worker made of one process; kept alive (with the reader it needs) until delivered.
class ProcessResult {
 public:
  virtual ~ProcessResult() = default;
};

// Every core the machine has (at least 1): the default of -j.
unsigned default_jobs();

// walk_processes (process_walk.h) with the work split in two: `analyze` runs on up to `jobs`
// threads (0 = default_jobs()), one process per call, each with its own reader; `deliver` runs
// on the calling thread, in pid order, as soon as a process and all before it are analysed.
// Returns as walk_processes does; an unreadable log stops the walk at that process, after the
// processes before it were delivered.
int walk_processes_parallel(
    const std::filesystem::path& run, std::optional<uint64_t> only_pid, unsigned jobs,
    std::FILE* out, std::FILE* err,
    const std::function<std::unique_ptr<ProcessResult>(std::unique_ptr<ProcessReader>)>& analyze,
    const std::function<void(ProcessResult&)>& deliver);

}  // namespace gmemhook::analysis

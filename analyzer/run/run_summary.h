// The few lines `gmemhook run` prints on stderr when the command is over: how it ended, which
// processes recorded how many events, and the next command to run.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "analyzer/run/run_record.h"

namespace gmemhook::analysis {

// One process directory of the run, as the summary shows it.
struct RecordedProcess {
  std::string name;  // the directory name, <exe>.<pid>
  std::string rank;  // RANK of a distributed job; empty when unset
  uint64_t events = 0;
  bool ended = true;  // false: no End record (killed, crashed, or still running)
  std::string error;  // non-empty when the log could not be read
};

// Reads every process directory of `run_dir` (one pass over each one's events). Empty when the
// run holds none.
std::vector<RecordedProcess> recorded_processes(const std::filesystem::path& run_dir);

void print_run_summary(std::FILE* err, const std::filesystem::path& run_dir,
                       const RunRecord& record, const std::vector<RecordedProcess>& processes);

}  // namespace gmemhook::analysis

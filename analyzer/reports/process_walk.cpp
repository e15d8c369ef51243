// The process loop (see process_walk.h).
#include "analyzer/reports/process_walk.h"

#include <fmt/format.h>

#include "analyzer/log/run_dir.h"

namespace gmemhook::analysis {

int walk_processes(const std::filesystem::path& run, std::optional<uint64_t> only_pid,
                   std::FILE* out, std::FILE* err,
                   const std::function<void(ProcessReader&)>& visit) {
  size_t visited = 0;
  try {
    for (const std::filesystem::path& dir : find_process_dirs(run)) {
      ProcessReader reader = ProcessReader::open(dir);
      if (only_pid && reader.info().pid != *only_pid) continue;
      ++visited;
      visit(reader);
    }
  } catch (const ReadError& e) {
    std::fflush(out);
    fmt::print(err, "gmemhook: {}\n", e.what());
    return kExitUnreadable;
  }
  if (only_pid && visited == 0) {
    fmt::print(err, "gmemhook: no process with pid {} in {}\n", *only_pid, run.string());
    return kExitReportFailure;
  }
  return kExitOk;
}

}  // namespace gmemhook::analysis

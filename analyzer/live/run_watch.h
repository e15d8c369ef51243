// A run directory followed by `gmemhook top`: every process directory in it, including those
// that appear while it is watched (new ranks, children started later).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "analyzer/live/process_watch.h"
#include "analyzer/live/top_view.h"

namespace gmemhook::analysis {

class RunWatch {
 public:
  // Throws ReadError when `run` does not exist or is not a directory.
  explicit RunWatch(std::filesystem::path run);

  // Looks for new process directories and reads what every process committed since.
  void update(uint64_t now_ns, const WatchOptions& options);
  // Whether some process's events wait behind a sequence number that may still come.
  bool waiting() const;
  TopView view(uint64_t now_ns, const WatchOptions& options);

 private:
  std::filesystem::path run_;
  std::map<std::string, std::unique_ptr<ProcessWatch>> processes_;  // by directory path
};

}  // namespace gmemhook::analysis

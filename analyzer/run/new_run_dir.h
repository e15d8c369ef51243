// Creating the directory a `gmemhook run` records into: the one named by -o, or a fresh
// ./gmemhook.<exe>.<YYYYMMDD-HHMMSS> beside the user's files.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace gmemhook::analysis {

struct NewRunDir {
  std::filesystem::path path;  // absolute
  bool created = false;        // false: -o named an empty directory that was already there
};

// With `requested`: creates it (and its parents) unless it exists; an existing one must be an
// empty directory (so two runs never mix) that RunDirHandle accepts. Without:
// ./gmemhook.<exe>.<local time>, with -2, -3… appended when that name is taken. `exe` is the
// command's argv[0]. Throws std::runtime_error with a message for the user.
NewRunDir create_run_dir(const std::optional<std::string>& requested, const std::string& exe);

// A run directory open to create files in (run.json), by the rule the hook opens it with
// (gmemhook/dir_trust.h): not a symlink, ours or root's, not writable by others unless sticky.
// Throws std::runtime_error saying which and what to do.
class RunDirHandle {
 public:
  explicit RunDirHandle(const std::filesystem::path& dir);
  ~RunDirHandle();
  RunDirHandle(const RunDirHandle&) = delete;
  RunDirHandle& operator=(const RunDirHandle&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

// The default name for a command started at `when` (seconds since the epoch), local time.
std::string default_run_dir_name(const std::string& exe, long when);

}  // namespace gmemhook::analysis

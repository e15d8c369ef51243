// DIR/run.json: what `gmemhook run` ran and how it ended, for the reports to say whether the top
// process exited, was killed or crashed (docs/run.md describes the fields).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gmemhook::analysis {

struct RunRecord {
  std::vector<std::string> command;
  std::string cwd;
  std::string library;  // the libgmemhook.so that was preloaded
  std::optional<pid_t> pid;
  std::optional<int> exit_code;
  std::optional<int> signal;
  uint64_t start_realtime_ns = 0;
  std::optional<uint64_t> end_realtime_ns;  // absent while the command runs
};

// The record as JSON text (indented, keys in the order of docs/run.md), ending in a newline.
std::string run_record_json(const RunRecord& r);

// Writes <run_dir>/run.json (output/private_file.h: 0600, a temporary file and rename(), so a
// reader sees the old or the new record, never half of one), into a directory RunDirHandle
// accepts. Throws std::runtime_error.
void write_run_record(const std::filesystem::path& run_dir, const RunRecord& r);

// "SIGSEGV", "SIGRTMIN+3"; "signal 99" when it has no name.
std::string signal_name(int sig);

// What a death by `sig` means for the reports: "killed" (SIGKILL, SIGTERM, SIGINT, SIGHUP: someone
// stopped it), "crashed" (SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL: the program failed), else
// nullopt.
std::optional<std::string> signal_verdict(int sig);

// CLOCK_REALTIME now, in nanoseconds.
uint64_t realtime_now_ns();

}  // namespace gmemhook::analysis

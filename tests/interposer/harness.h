// Runs a program under libgmemhook.so on the simulated device and reads back what it recorded.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/log/reader.h"
#include "gmemhook/api_table.h"

namespace gmemhook::test {

// A child process with its stdout on a pipe (read line by line) and stderr captured to a file.
class TracedProcess {
 public:
  // `env` entries override the inherited environment; an empty value removes the variable.
  TracedProcess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);
  ~TracedProcess();
  std::optional<std::string> read_line();  // nullopt at EOF
  std::string read_all();
  void kill(int sig);
  // Waits (at most `timeout_s`, then SIGKILL and fail); returns the raw wait status.
  int wait(int timeout_s = 120);
  std::string stderr_text() const;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string buffer_;
  std::filesystem::path err_path_;
  int status_ = -1;
  std::chrono::steady_clock::time_point deadline_;
};

struct RunResult {
  int status = 0;  // raw wait status
  std::string out, err;
  bool exited(int code) const;
  bool signaled(int sig) const;
};

// The environment that traces on the simulated device into `out_dir`.
std::map<std::string, std::string> traced_env(const std::filesystem::path& out_dir);
RunResult run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);

std::string scenario_path();
std::string hook_path();
// True when the tests run against the real CUDA libraries (GMEMHOOK_TEST_CUDA_LIB_DIR=system).
bool on_real_gpu();

// How many times `what` occurs in `text` (a warning said once, a summary line).
size_t count_of(const std::string& text, const std::string& what);

// A fresh empty directory under the test temp dir.
std::filesystem::path temp_dir(const std::string& name);

struct LoggedEvent {
  std::string api;
  format::EventKind kind;
  format::Event ev;
  uint64_t tid;
  std::vector<uint64_t> stack;
};

struct LoggedProcess {
  std::filesystem::path dir;
  analysis::ProcessInfo info;
  std::optional<analysis::EndRecord> end;
  uint64_t start_ns = 0;                  // the header's CLOCK_MONOTONIC start
  uint64_t time_step_ns = 0;              // ProcessReader::time_step_ns()
  std::vector<analysis::Module> modules;  // the latest snapshot
  std::vector<LoggedEvent> events;        // in sequence order
  std::vector<std::string> notes;          // process.gmh's, in file order
  std::vector<analysis::NvmlSample> nvml;  // process.gmh's, in file order
  size_t thread_files = 0;
  uint64_t committed_bytes = 0;           // of all thread files
};

std::vector<std::filesystem::path> process_dirs(const std::filesystem::path& run);
LoggedProcess read_process(const std::filesystem::path& dir);

// The module of the latest snapshot that contains `address`, or nullptr.
const analysis::Module* module_of(const LoggedProcess& p, uint64_t address);

}  // namespace gmemhook::test

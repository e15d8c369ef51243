// The process loop (see process_walk.h).
#include "analyzer/reports/process_walk.h"

#include <fmt/format.h>

#include "analyzer/log/run_dir.h"
#include "analyzer/output/terminal_text.h"

namespace gmemhook::analysis {

namespace {

// The first format whose hook made a process's directory at its first CUDA call.
constexpr uint16_t kDirectoryAtFirstCudaCall = 3;

void say_skipped_no_cuda(std::FILE* err, size_t skipped) {
  if (!skipped) return;
  fmt::print(err,
             "gmemhook: {} process director{} of processes that made no CUDA call skipped "
             "(left by a hook older than log format {})\n",
             skipped, skipped == 1 ? "y" : "ies", kDirectoryAtFirstCudaCall);
}

void say_not_read(std::FILE* err, const std::filesystem::path& run,
                  std::vector<std::string> not_started) {
  std::vector<std::string> headless;
  if (names_whole_run(run))
    for (const DirWithoutProcessFile& d : find_dirs_without_process_file(run)) {
      const std::string name = d.path.filename().string();
      if (d.thread_files == 0)
        not_started.push_back(name);  // made, then killed before process.gmh was created
      else
        headless.push_back(fmt::format("{} ({} thread file{})", name, d.thread_files,
                                       d.thread_files == 1 ? "" : "s"));
    }
  auto list = [](const std::vector<std::string>& names) {
    std::string s;
    for (const std::string& n : names) s += (s.empty() ? "" : ", ") + terminal_text(n);
    return s;
  };
  if (!not_started.empty())
    fmt::print(err, "gmemhook: {} killed while starting, before recording anything, skipped: {}\n",
               not_started.size() == 1 ? "1 process was"
                                       : fmt::format("{} processes were", not_started.size()),
               list(not_started));
  if (!headless.empty())
    fmt::print(err, "gmemhook: {} no process.gmh (its events cannot be read without it): {}\n",
               headless.size() == 1 ? "1 process directory has"
                                    : fmt::format("{} process directories have", headless.size()),
               list(headless));
}

}  // namespace

bool made_no_cuda_call(const ProcessReader& reader) {
  return reader.process().header.version < kDirectoryAtFirstCudaCall &&
         reader.thread_count() == 0 && reader.nvml_samples().empty() &&
         !(reader.end() && reader.end()->cuda_used);
}

bool names_whole_run(const std::filesystem::path& run) {
  return !std::filesystem::exists(run / "process.gmh") && !std::filesystem::is_regular_file(run);
}

int walk_processes(const std::filesystem::path& run, std::optional<uint64_t> only_pid,
                   std::FILE* out, std::FILE* err, const std::function<void(ProcessReader&)>& visit,
                   bool say_skipped) {
  size_t visited = 0, skipped = 0;
  std::vector<std::string> not_started;
  try {
    // One named process directory is shown whatever it holds: the user asked for it.
    const bool whole_run = names_whole_run(run);
    for (const std::filesystem::path& dir : find_process_dirs(run)) {
      std::optional<ProcessReader> opened;
      try {
        opened.emplace(ProcessReader::open(dir));
      } catch (const NothingRecordedError&) {
        if (!whole_run) throw;  // one named process directory: its log is unreadable
        not_started.push_back(dir.filename().string());
        continue;
      }
      ProcessReader& reader = *opened;
      if (only_pid && reader.info().pid != *only_pid) continue;
      if (whole_run && !only_pid && made_no_cuda_call(reader)) {
        ++skipped;
        continue;
      }
      ++visited;
      visit(reader);
    }
  } catch (const ReadError& e) {
    std::fflush(out);
    fmt::print(err, "gmemhook: {}\n", terminal_text(e.what()));  // it names a directory
    return kExitUnreadable;
  }
  return finish_walk(err, run, only_pid, visited, say_skipped ? skipped : 0,
                     std::move(not_started));
}

int finish_walk(std::FILE* err, const std::filesystem::path& run, std::optional<uint64_t> only_pid,
                size_t visited, size_t skipped_no_cuda, std::vector<std::string> not_started) {
  say_skipped_no_cuda(err, skipped_no_cuda);
  say_not_read(err, run, std::move(not_started));
  if (only_pid && visited == 0) {
    fmt::print(err, "gmemhook: no process with pid {} in {}\n", *only_pid, run.string());
    return kExitReportFailure;
  }
  return kExitOk;
}

}  // namespace gmemhook::analysis

// Workers take the processes of a run in pid order from a shared counter; the calling thread
// waits for each in turn (see parallel_walk.h).
#include "analyzer/reports/parallel_walk.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "analyzer/log/run_dir.h"
#include "analyzer/output/terminal_text.h"
#include "analyzer/reports/process_walk.h"

namespace gmemhook::analysis {

namespace {

struct Slot {
  bool done = false;
  bool skipped = false;     // not the --pid asked for, or an old directory of no CUDA call
  bool no_cuda = false;     // the latter (made_no_cuda_call)
  std::string not_started;  // a process killed while starting: its directory's name
  std::unique_ptr<ProcessResult> result;
  std::string read_error;        // a ReadError's message: the log is unreadable
  std::exception_ptr exception;  // anything else, rethrown on the calling thread
};

}  // namespace

unsigned default_jobs() { return std::max(1u, std::thread::hardware_concurrency()); }

int walk_processes_parallel(
    const std::filesystem::path& run, std::optional<uint64_t> only_pid, unsigned jobs,
    std::FILE* out, std::FILE* err,
    const std::function<std::unique_ptr<ProcessResult>(std::unique_ptr<ProcessReader>)>& analyze,
    const std::function<void(ProcessResult&)>& deliver) {
  std::vector<std::filesystem::path> dirs;
  try {
    dirs = find_process_dirs(run);
  } catch (const ReadError& e) {
    fmt::print(err, "gmemhook: {}\n", terminal_text(e.what()));
    return kExitUnreadable;
  }
  const bool whole_run = names_whole_run(run);  // as walk_processes: old no-CUDA dirs skipped
  std::vector<Slot> slots(dirs.size());
  std::mutex mutex;
  std::condition_variable ready;
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};  // an unreadable log: the processes after it are not needed

  auto work = [&] {
    for (size_t i; !stop.load() && (i = next.fetch_add(1)) < dirs.size();) {
      Slot s;
      try {
        auto reader = std::make_unique<ProcessReader>(ProcessReader::open(dirs[i]));
        if (only_pid && reader->info().pid != *only_pid)
          s.skipped = true;
        else if (whole_run && !only_pid && made_no_cuda_call(*reader))
          s.skipped = s.no_cuda = true;
        else
          s.result = analyze(std::move(reader));
      } catch (const NothingRecordedError& e) {
        if (whole_run) {
          s.skipped = true;
          s.not_started = dirs[i].filename().string();
        } else {
          s.read_error = e.what();
        }
      } catch (const ReadError& e) {
        s.read_error = e.what();
      } catch (...) {
        s.exception = std::current_exception();
      }
      s.done = true;
      {
        std::lock_guard lock(mutex);
        slots[i] = std::move(s);
      }
      ready.notify_all();
    }
  };
  if (jobs == 0) jobs = default_jobs();
  std::vector<std::jthread> workers;
  for (size_t t = 0; t < std::min<size_t>(jobs, dirs.size()); ++t) workers.emplace_back(work);

  size_t visited = 0, no_cuda = 0;
  std::vector<std::string> not_started;
  int status = kExitOk;
  std::exception_ptr failure;
  for (size_t i = 0; i < slots.size(); ++i) {
    Slot s;
    {
      std::unique_lock lock(mutex);
      ready.wait(lock, [&] { return slots[i].done; });
      s = std::move(slots[i]);
    }
    if (s.exception || !s.read_error.empty()) {
      stop.store(true);
      failure = s.exception;
      if (!failure) {
        std::fflush(out);
        fmt::print(err, "gmemhook: {}\n", terminal_text(s.read_error));  // it names a directory
        status = kExitUnreadable;
      }
      break;
    }
    no_cuda += s.no_cuda;
    if (!s.not_started.empty()) not_started.push_back(s.not_started);
    if (s.skipped) continue;
    ++visited;
    deliver(*s.result);
  }
  workers.clear();  // joins: a worker still busy with a later process finishes it unseen
  if (failure) std::rethrow_exception(failure);
  if (status != kExitOk) return status;
  return finish_walk(err, run, only_pid, visited, no_cuda, std::move(not_started));
}

}  // namespace gmemhook::analysis

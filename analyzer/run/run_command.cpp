// `gmemhook run`: find the hook, make the run directory, run the command under it, record how it
// ended in run.json, summarise, and end the way the command did.
#include "analyzer/run/run_command.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <system_error>

#include "analyzer/run/child_process.h"
#include "analyzer/run/hook_library.h"
#include "analyzer/run/new_run_dir.h"
#include "analyzer/run/run_record.h"
#include "analyzer/run/run_summary.h"
#include "analyzer/run/traced_environment.h"

namespace gmemhook::analysis {

namespace fs = std::filesystem;

namespace {

constexpr int kOwnError = 2;
// What a shell returns when it cannot run a command (POSIX "Command Search and Execution").
constexpr int kNotFound = 127;
constexpr int kNotExecutable = 126;

void error(const std::string& message) { fmt::print(stderr, "gmemhook run: {}\n", message); }

std::optional<fs::path> locate_hook() {
  const fs::path exe = self_executable();
  if (std::optional<fs::path> lib = find_hook_library(exe)) {
    // ld.so splits LD_PRELOAD at spaces and colons: such a path cannot be preloaded.
    if (lib->string().find_first_of(": ") == std::string::npos) return lib;
    error(
        fmt::format("{} cannot go in LD_PRELOAD (its path has a space or a colon); install "
                    "gmemhook under another prefix",
                    lib->string()));
    return std::nullopt;
  }
  std::string tried;
  for (const fs::path& p : hook_library_candidates(exe)) tried += "\n  " + p.string();
  error(
      fmt::format("libgmemhook.so not found next to {}; looked for:{}\nBuild it (scripts/build.sh) "
                  "or install both with `cmake --install`.",
                  exe.empty() ? std::string("the gmemhook binary") : exe.string(), tried));
  return std::nullopt;
}

// Removes what this run created when the command never started, so a typo leaves no litter.
void undo_run_dir(const NewRunDir& dir) {
  std::error_code ec;
  fs::remove(dir.path / "run.json", ec);
  if (dir.created) fs::remove(dir.path, ec);
}

bool getenv_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0 && std::strcmp(v, "false") != 0;
}

}  // namespace

int run_command(const RunOptions& opts) {
  if (opts.command.empty()) {
    error("no command given");
    return kOwnError;
  }
  std::optional<fs::path> hook = locate_hook();
  if (!hook) return kOwnError;
  if (const char* preload = std::getenv("LD_PRELOAD"))
    if (std::optional<fs::path> other = hook_in_preload(preload, *hook); other && *other != *hook) {
      error(
          fmt::format("note: LD_PRELOAD already names {}: that copy of the hook records this "
                      "run, not {}",
                      other->string(), hook->string()));
      hook = other;
    }
  if (getenv_flag("GMEMHOOK_DISABLE"))
    error("warning: GMEMHOOK_DISABLE is set in the environment; nothing will be recorded");

  NewRunDir dir;
  try {
    dir = create_run_dir(opts.out_dir, opts.command[0]);
  } catch (const std::exception& e) {
    error(e.what());
    return kOwnError;
  }

  RunRecord record;
  record.command = opts.command;
  std::error_code ec;
  record.cwd = fs::current_path(ec).string();
  record.library = hook->string();
  record.start_realtime_ns = realtime_now_ns();
  // Written before the command starts, so a run whose gmemhook was killed still says what ran
  // (end_time null).
  try {
    write_run_record(dir.path, record);
  } catch (const std::exception& e) {
    error(e.what());
    undo_run_dir(dir);
    return kOwnError;
  }

  TraceSettings settings;
  settings.library = *hook;
  settings.run_dir = dir.path;
  settings.depth = opts.depth;
  settings.no_python = opts.no_python;
  settings.free_stacks = opts.free_stacks;
  settings.jax_buffers = opts.jax_buffers;
  ChildProcess child;
  try {
    child = ChildProcess::start(opts.command, traced_environment(current_environment(), settings));
  } catch (const std::exception& e) {
    error(e.what());
    undo_run_dir(dir);
    return kOwnError;
  }
  if (int err = child.exec_errno()) {
    undo_run_dir(dir);
    const std::string& cmd = opts.command[0];
    // A shell's wording: a bare name is looked up in PATH, a path is opened as given.
    if (err == ENOENT && cmd.find('/') == std::string::npos) {
      error(cmd + ": command not found");
      return kNotFound;
    }
    error(cmd + ": " + std::strerror(err));
    return err == ENOENT ? kNotFound : kNotExecutable;
  }

  record.pid = child.pid();
  try {
    write_run_record(dir.path, record);
  } catch (const std::exception& e) {
    error(e.what());  // the command runs anyway: its logs are what matter
  }

  ChildOutcome outcome;
  try {
    outcome = child.wait();
  } catch (const std::exception& e) {
    error(e.what());
    return kOwnError;
  }
  record.end_realtime_ns = realtime_now_ns();
  if (outcome.signal)
    record.signal = outcome.signal;
  else
    record.exit_code = outcome.exit_code;
  try {
    write_run_record(dir.path, record);
  } catch (const std::exception& e) {
    error(e.what());
  }

  print_run_summary(stderr, dir.path, record, recorded_processes(dir.path));
  exit_like(outcome);
}

std::function<int()> add_run_command(CLI::App& run) {
  struct Parsed {
    std::string out_dir;
    int depth = 64;
    bool no_python = false;
    bool free_stacks = false;
    bool jax_buffers = false;
    std::vector<std::string> command;
  };
  auto p = std::make_shared<Parsed>();
  CLI::Option* out =
      run.add_option("-o,--out", p->out_dir,
                     "Run directory (new or empty); default ./gmemhook.<exe>.<YYYYMMDD-HHMMSS>");
  CLI::Option* depth =
      run.add_option("--depth", p->depth, "Native frames per stack (default 64, 0 = no stacks)")
          ->check(CLI::Range(0, 256));
  run.add_flag("--no-python", p->no_python, "Leave Python frames out of stacks");
  run.add_flag("--free-stacks", p->free_stacks,
               "Also record the stacks of frees, unmaps and releases");
  run.add_flag("--jax-buffers", p->jax_buffers,
               "Set XLA_PYTHON_CLIENT_ALLOCATOR=platform: JAX allocates each buffer from CUDA "
               "instead of carving them out of one preallocated pool gmemhook cannot see into "
               "(slower; for finding which buffer holds the memory)");
  run.add_option("COMMAND", p->command, "The command and its arguments, best after --")->required();
  // Everything from the command's name on belongs to the command, its own options included.
  run.positionals_at_end();
  return [p, out, depth] {
    RunOptions opts;
    if (out->count()) opts.out_dir = p->out_dir;
    if (depth->count()) opts.depth = p->depth;
    opts.no_python = p->no_python;
    opts.free_stacks = p->free_stacks;
    opts.jax_buffers = p->jax_buffers;
    opts.command = p->command;
    return run_command(opts);
  };
}

}  // namespace gmemhook::analysis

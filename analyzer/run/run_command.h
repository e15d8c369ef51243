// `gmemhook run [-o DIR] [--depth N] [--no-python] [--free-stacks] -- CMD ARGS…`: runs a command
// with libgmemhook.so preloaded into it and every process it starts, all logging into one run
// directory, then writes DIR/run.json and prints a summary (docs/run.md).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace gmemhook::analysis {

struct RunOptions {
  std::optional<std::string> out_dir;  // -o; default ./gmemhook.<exe>.<YYYYMMDD-HHMMSS>
  std::optional<int> depth;            // --depth → GMEMHOOK_DEPTH
  bool no_python = false;              // --no-python → GMEMHOOK_PYTHON=0
  bool free_stacks = false;            // --free-stacks → GMEMHOOK_FREE_STACKS=1
  bool jax_buffers = false;            // --jax-buffers → XLA_PYTHON_CLIENT_ALLOCATOR=platform
  std::vector<std::string> command;
};

// The options of `run` on its subcommand (its line of the command table, cli_commands.cpp); what
// it returns runs the command (run_command).
std::function<int()> add_run_command(CLI::App& run);

// Runs `opts.command` under the hook. Once the command has run, gmemhook ends the way it did
// (exit_like) and this does not return. It returns only when the command never ran: 2 for
// gmemhook's own errors (library not found, run directory unusable), 127 when the command is not
// found and 126 when it cannot be executed, as a shell would.
int run_command(const RunOptions& opts);

}  // namespace gmemhook::analysis

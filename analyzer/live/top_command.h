// `gmemhook top RUN [--once] [--json] [--interval S] [--top N] [--sort KEY] [--window S]`:
// follows a run directory while its processes write to it (docs/top.md).
#pragma once

#include <functional>

namespace CLI {
class App;
}

namespace gmemhook::analysis {

// The options of `top` on its subcommand (its line of the command table, cli_commands.cpp); what
// it returns follows the run and returns the exit status (0; 2 when the run does not exist).
std::function<int()> add_top_command(CLI::App& top);

}  // namespace gmemhook::analysis

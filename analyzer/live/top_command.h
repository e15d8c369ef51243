// `gmemhook top RUN [--once] [--json] [--interval S] [--top N] [--sort KEY] [--window S]`:
// follows a run directory while its processes write to it (docs/top.md).
#pragma once

namespace CLI {
class App;
}

namespace gmemhook::analysis {

// Adds the `top` subcommand to `app`. When it is the one parsed, its callback runs it and ends
// gmemhook with its exit status (0; 2 when the run directory does not exist).
void add_top_command(CLI::App& app);

}  // namespace gmemhook::analysis

// The `gmemhook html` subcommand: its options, kept out of cli_main.cpp's report table
// because it writes a file (-o) in a format of its own rather than text or JSON on stdout.
#pragma once

#include <CLI/CLI.hpp>

#include "analyzer/reports/whole_run_format.h"

namespace gmemhook::analysis {

// Adds `html` to `app`, filling `options` when it is parsed.
CLI::App* add_html_command(CLI::App& app, WholeRunOptions& options);

}  // namespace gmemhook::analysis

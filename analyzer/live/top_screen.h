// The full-screen view of `gmemhook top`: plain ANSI escape codes and a raw terminal (termios),
// refreshed every interval, with keys to pick the process and device, sort, and freeze.
#pragma once

#include "analyzer/live/run_watch.h"

namespace gmemhook::analysis {

// Runs until q (or ^C); the terminal is restored however it ends. Returns the exit status.
int run_screen(RunWatch& watch, WatchOptions options, double interval_s);

}  // namespace gmemhook::analysis

// The one table of gmemhook's subcommands (cli_commands.cpp), from which cli_main.cpp builds the
// command line: a new command is a file with its add function plus one line in the table.
#pragma once

#include <functional>
#include <span>

namespace CLI {
class App;
}

namespace gmemhook::analysis {

struct Command {
  const char* name;
  const char* help;    // its line in `gmemhook --help`
  const char* footer;  // the end of `gmemhook NAME --help`: what its exit status says
  // Adds its arguments to the subcommand; returns what runs it, which returns the exit status.
  std::function<int()> (*add)(CLI::App& command);
};

// Every subcommand, in the order `gmemhook --help` lists them.
std::span<const Command> commands();

}  // namespace gmemhook::analysis

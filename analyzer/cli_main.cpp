// The gmemhook command line: one CLI11 subcommand per report, each implemented in its own file.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "analyzer/dump_command.h"
#include "gmemhook/format.h"

#ifndef GMEMHOOK_VERSION
#define GMEMHOOK_VERSION "unknown"
#endif

int main(int argc, char** argv) {
  CLI::App app{"gmemhook: reports on the CUDA allocations recorded by libgmemhook.so", "gmemhook"};
  app.set_version_flag("--version", std::string("gmemhook ") + GMEMHOOK_VERSION + " (log format " +
                                        std::to_string(gmemhook::format::kFormatVersion) + ")");
  app.require_subcommand(1);

  std::string dump_run;
  CLI::App* dump = app.add_subcommand("dump", "Print every record of a run, one line each");
  dump->add_option("RUN", dump_run, "A run directory, or one <exe>.<pid> process directory")
      ->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Usage errors exit 1; 2 is reserved for logs that cannot be read.
    return app.exit(e) == 0 ? 0 : 1;
  }

  if (dump->parsed()) return gmemhook::analysis::dump_command(dump_run, stdout, stderr);
  return 1;
}

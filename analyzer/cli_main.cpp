// The gmemhook command line: a CLI11 subcommand per line of the command table (cli_commands.h),
// and the one the user typed run.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/cli_commands.h"
#include "analyzer/cli_words.h"
#include "analyzer/output/command_name.h"
#include "gmemhook/format.h"

#ifndef GMEMHOOK_VERSION
#define GMEMHOOK_VERSION "unknown"
#endif

namespace {

// Usage errors exit 2, as cmp's and diff's do: 1 is diff --fail-above's "grew too much".
constexpr int kExitUsage = 2;

// The nearest subcommand to an unknown first word, said before CLI11 would answer "A subcommand
// is required", which names neither. Returns true when it said so.
bool unknown_subcommand(CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return false;
  std::vector<std::string> names;
  for (const CLI::App* s : app.get_subcommands({})) names.push_back(s->get_name());
  const std::string typed = argv[1];
  if (std::find(names.begin(), names.end(), typed) != names.end()) return false;
  const std::string near = gmemhook::analysis::nearest_word(typed, names);
  std::string all;
  for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
  std::fprintf(stderr, "gmemhook: unknown command '%s'%s\ncommands: %s (--help for more)\n",
               typed.c_str(), near.empty() ? "" : ("; did you mean '" + near + "'?").c_str(),
               all.c_str());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 0) gmemhook::analysis::set_invoked_as(argv[0]);  // hints name it so
  CLI::App app{"gmemhook: reports on the CUDA allocations recorded by libgmemhook.so", "gmemhook"};
  app.set_version_flag("--version", std::string("gmemhook ") + GMEMHOOK_VERSION + " (log format " +
                                        std::to_string(gmemhook::format::kFormatVersion) + ")");
  app.require_subcommand(1);
  app.footer("Exit status: 0 ok, 2 bad usage; the rest ends each command's --help.");
  std::vector<std::pair<CLI::App*, std::function<int()>>> commands;
  for (const gmemhook::analysis::Command& c : gmemhook::analysis::commands()) {
    CLI::App* s = app.add_subcommand(c.name, c.help);
    s->footer(c.footer);
    commands.emplace_back(s, c.add(*s));
  }

  if (unknown_subcommand(app, argc, argv)) return kExitUsage;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
  for (auto& [s, run] : commands)
    if (s->parsed()) return run();
  return kExitUsage;  // require_subcommand(1) leaves none unparsed
}

// `gmemhook dump RUN`: every record of a run as one line of text, for eyeballing and for tests.
#pragma once

#include <cstdio>
#include <filesystem>

namespace gmemhook::analysis {

// Prints the run to `out`, warnings and errors to `err`. Returns the exit status: 0, or 2 when
// the input is unreadable (missing, another format version, damaged).
int dump_command(const std::filesystem::path& run, std::FILE* out, std::FILE* err);

}  // namespace gmemhook::analysis

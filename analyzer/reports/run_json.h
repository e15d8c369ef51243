// RUN/run.json (what `gmemhook run` ran and how it ended, docs/run.md) read as untrusted input:
// whoever could write in the run directory could have left a FIFO, a link to /dev/zero, a huge or
// malformed file, or keys of their own there. Only the keys `gmemhook run` writes, each of its
// type, come out; the page shows nothing else of the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/output/json_writer.h"

namespace gmemhook::analysis {

// `gmemhook run` writes a few hundred bytes plus the command line; a larger file is not its.
inline constexpr size_t kMaxRunJsonBytes = 1 << 20;

// The keys of docs/run.md; a key absent, null or of another type is nullopt.
struct RunJson {
  std::optional<std::vector<std::string>> command;
  std::optional<std::string> cwd, library;
  std::optional<int64_t> pid, exit_code, signal;
  std::optional<std::string> signal_name, start_time, end_time;
};

// `text` (what a run.json holds) checked: nullopt when it is not a JSON object. Each thing left out
// (the whole file, a key of the wrong type, keys gmemhook does not write) adds a line to
// `warnings` naming `path`.
std::optional<RunJson> parse_run_json(std::string_view text, const std::string& path,
                                      std::vector<std::string>& warnings);

// <run>/run.json, read without following a symbolic link, only when it is a regular file of at
// most kMaxRunJsonBytes, then parse_run_json(). nullopt without a warning when there is none.
std::optional<RunJson> read_run_json(const std::filesystem::path& run,
                                     std::vector<std::string>& warnings);

// As JSON, the keys in docs/run.md's order, each null where nullopt.
void write_run_json(JsonWriter& out, const RunJson& r);

}  // namespace gmemhook::analysis

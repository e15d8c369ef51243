// Small ready-made processes for the analyzer tests, in memory or written out as a run directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "analyzer/log/reader.h"
#include "log_builder.h"

namespace gmemhook::test_logs {

struct ProcessLogs {
  uint32_t pid = 0;
  std::string exe_name;  // directory is <exe_name>.<pid>
  Bytes process;
  std::vector<std::pair<uint64_t, Bytes>> threads;  // tid, file bytes
};

inline constexpr uint64_t kStartNs = 1000000000000ull;

// pid 4242, threads 4243 and 4244, stacks, a module snapshot, a note; End record when asked.
// Files are not padded to whole chunks, so cutting them anywhere exercises torn tails.
ProcessLogs small_two_thread_process(bool with_end);

// Reads the logs straight from memory (no files). `logs` must outlive the reader: it keeps
// pointers into their bytes, so a temporary is refused at compile time (three tests once passed
// one and read freed memory, passing by luck).
analysis::ProcessReader read_in_memory(const ProcessLogs& logs);
analysis::ProcessReader read_in_memory(ProcessLogs&&) = delete;
// Writes <run>/<exe>.<pid>/process.gmh and thread.<tid>.gmh; returns the process directory.
std::filesystem::path write_process_dir(const std::filesystem::path& run, const ProcessLogs& logs);

// What a pass delivered, flattened for comparisons.
struct SeenEvent {
  uint64_t seq;
  uint64_t tid;
  uint8_t api;
  uint64_t address;
  std::vector<uint64_t> frames;
  bool operator==(const SeenEvent&) const = default;
};
std::vector<SeenEvent> collect_events(analysis::ProcessReader& r);

}  // namespace gmemhook::test_logs

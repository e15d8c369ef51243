// Chrome's JSON trace format ("Trace Event Format"), which ui.perfetto.dev and chrome://tracing
// open: metadata naming processes and threads, counter events (one track per name,
// one series per argument) and instant events. Written compact: a trace is read by a program.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analyzer/output/json_writer.h"

namespace gmemhook::analysis {

class ChromeTrace {
 public:
  ChromeTrace();

  void process_name(uint64_t pid, std::string_view name);
  // Orders the processes in the viewer (lower first), e.g. by rank.
  void process_sort_index(uint64_t pid, int64_t index);
  void thread_name(uint64_t pid, uint64_t tid, std::string_view name);
  // A counter track `name` of process `pid`: at `ts_ns`, each series (argument) has its value.
  void counter(uint64_t pid, std::string_view name, uint64_t ts_ns,
               const std::vector<std::pair<std::string, uint64_t>>& series);
  // A moment on thread `tid` (process-wide when tid is 0), with string arguments.
  void instant(uint64_t pid, uint64_t tid, std::string_view name, uint64_t ts_ns,
               const std::vector<std::pair<std::string, std::string>>& args);

  // The whole trace: {"traceEvents": [...], "displayTimeUnit": "ms"}.
  std::string finish();

 private:
  void begin_event(const char* phase, uint64_t pid, uint64_t tid, std::string_view name);
  void timestamp(uint64_t ts_ns);
  template <typename T>
  void metadata(uint64_t pid, uint64_t tid, std::string_view name, const char* key,
                const T& value);

  std::string text_;
  JsonWriter json_;
};

}  // namespace gmemhook::analysis

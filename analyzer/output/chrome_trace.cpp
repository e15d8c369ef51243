// The trace events (see chrome_trace.h). Timestamps are microseconds, as the format says, with
// the nanoseconds kept as a fraction.
#include "analyzer/output/chrome_trace.h"

#include <fmt/format.h>

namespace gmemhook::analysis {

ChromeTrace::ChromeTrace() : json_(text_) {
  json_.begin_object();
  json_.key("traceEvents");
  json_.begin_array();
}

void ChromeTrace::begin_event(const char* phase, uint64_t pid, uint64_t tid,
                              std::string_view name) {
  json_.begin_object();
  json_.field("ph", phase);
  json_.field("pid", pid);
  json_.field("tid", tid);
  json_.field("name", name);
}

void ChromeTrace::timestamp(uint64_t ts_ns) {
  json_.key("ts");
  json_.raw(fmt::format("{}.{:03}", ts_ns / 1000, ts_ns % 1000));
}

// A metadata event ("M"): one argument naming or ordering a process or thread.
template <typename T>
void ChromeTrace::metadata(uint64_t pid, uint64_t tid, std::string_view name, const char* key,
                           const T& value) {
  begin_event("M", pid, tid, name);
  json_.object("args", [&] { json_.field(key, value); });
  json_.end_object();
}

void ChromeTrace::process_name(uint64_t pid, std::string_view name) {
  metadata(pid, 0, "process_name", "name", name);
}

void ChromeTrace::process_sort_index(uint64_t pid, int64_t index) {
  metadata(pid, 0, "process_sort_index", "sort_index", index);
}

void ChromeTrace::thread_name(uint64_t pid, uint64_t tid, std::string_view name) {
  metadata(pid, tid, "thread_name", "name", name);
}

void ChromeTrace::counter(uint64_t pid, std::string_view name, uint64_t ts_ns,
                          const std::vector<std::pair<std::string, uint64_t>>& series) {
  begin_event("C", pid, 0, name);
  timestamp(ts_ns);
  json_.object("args", [&] {
    for (const auto& [key, value] : series) json_.field(key, value);
  });
  json_.end_object();
}

void ChromeTrace::instant(uint64_t pid, uint64_t tid, std::string_view name, uint64_t ts_ns,
                          const std::vector<std::pair<std::string, std::string>>& args) {
  begin_event("i", pid, tid, name);
  timestamp(ts_ns);
  json_.field("s", tid ? "t" : "p");  // the thread's track, or the whole process
  json_.object("args", [&] {
    for (const auto& [key, value] : args) json_.field(key, value);
  });
  json_.end_object();
}

std::string ChromeTrace::finish() {
  json_.end_array();
  json_.field("displayTimeUnit", "ms");
  json_.end_object();
  return std::move(text_);
}

}  // namespace gmemhook::analysis

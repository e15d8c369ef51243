// What the reports share: how a process is named and how it ended (ProcessHeader), series
// filters, and stacks written as text or JSON frames.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/log/reader.h"
#include "analyzer/model/live_view.h"
#include "analyzer/model/replay.h"
#include "analyzer/output/command_name.h"
#include "analyzer/output/json_writer.h"
#include "analyzer/output/stack_text.h"
#include "analyzer/output/text_format.h"
#include "analyzer/reports/report.h"
#include "analyzer/symbols/frame.h"
#include "analyzer/symbols/stack_resolver.h"

namespace gmemhook::analysis {

// What the reader said about a process after its first pass, which is always complete: a later
// pass may stop early, and the reader refreshes its pass warnings on every pass.
struct ReadFacts {
  std::vector<std::string> warnings;      // torn tails, unfinished module snapshots ...
  std::optional<std::string> abrupt_end;  // abrupt_end_message(): no End record
  std::vector<int32_t> devices;           // the devices the replay saw memory of, for --device
  std::optional<std::string> incomplete;  // incomplete_log_message(): events never written
};
ReadFacts read_facts(const ProcessReader& reader, const Replay& replay);

// How a process ended, as far as its log tells: Exited (an End record: exit() or _exit()), or
// Unknown (none: killed, crashed, or still running). JSON's "killed" and "crashed" are reserved
// for `gmemhook run`, which will see the signal.
enum class EndKind { Exited, Unknown };
const char* end_name(EndKind kind);  // "exited", "unknown"

struct ProcessEnd {
  EndKind kind = EndKind::Unknown;
  std::optional<int64_t> exit_code;
  bool still_running = false;  // no End record and the pid is alive with the same executable
  uint64_t duration_ns = 0;    // from the process file's start to the End record or last event
  // duration_ns's step: the End record's time is the clock's own (1 ns), the last event's in the
  // log's time step (ProcessReader::time_step_ns).
  uint64_t duration_step_ns = 1;
  std::string text;            // "exited with status 0 after 1.06 ms", "ended abruptly ..."
  bool incomplete = false;     // events are missing from the log (the text says how many)
};
// Whether what is live at the end was really never freed: the process exited and its log holds
// every event (an incomplete log never says "nothing leaked").
inline bool exited_with_full_log(const ProcessEnd& e) {
  return e.kind == EndKind::Exited && !e.incomplete;
}
// After the first pass (the abrupt-end text names the last record read).
ProcessEnd process_end(const ProcessReader& reader, const ReadFacts& facts, const Replay& replay);

// The moments a report shows the live set at: the peak, the first failed allocation, --at
// seconds, --at-seq, the end of the log.
enum class Moment { Peak, FirstFailure, Time, Seq, End };
const char* moment_name(Moment moment);  // "peak", "first-failure", "time", "seq", "end"

// "process 48213 python (rank 3 of 8)".
std::string process_title(const ProcessInfo& info);
inline std::string process_title(const ProcessReader& reader) {
  return process_title(reader.info());
}

// What a report's renderers know of a process, taken after its first pass.
struct ProcessHeader {
  ProcessInfo info;
  std::string title;  // process_title()
  uint64_t start_ns = 0;
  uint64_t time_step_ns = 1;  // ProcessReader::time_step_ns()
  size_t threads = 0;
  ReadFacts facts;
  ProcessEnd end;
};
ProcessHeader describe_process(const ProcessReader& reader, const Replay& replay);

// pid, ppid, exe, argv, rank, local_rank, world_size, end, exit_code, still_running.
void write_process_fields(JsonWriter& json, const ProcessHeader& process);
// "warnings": the reader's (abrupt end, torn tails ...) and the symbolizer's.
void write_warnings(JsonWriter& json, const ReadFacts& facts, const StackResolver& stacks);

// Whether a series passes --device (pinned host memory is on no device, so never does).
bool wanted_series(const ReportOptions& options, const SeriesKey& key);
// The series in report order: device memory by device, then managed memory, then pinned host
// memory (a log lists them in the order they were first used).
std::vector<const Series*> ordered_series(const Replay& replay);
// Writes "device" (null for none) and "memory".
void write_series_fields(JsonWriter& json, const SeriesKey& key);

// The rows `gmemhook leaks` prints by default; the HTML page's leaks table shows no more, so that
// a reader of both sees the same list.
constexpr size_t kLeakRowsText = 20;

// --depth and --top with their defaults for text and JSON (0 = unlimited).
size_t depth_limit(const ReportOptions& options, size_t text_default);
size_t top_limit(const ReportOptions& options, size_t text_default);

// --native and --depth as a stack style (depth: lines per section of a user-first stack).
StackStyle stack_style(const ReportOptions& options, size_t text_default_depth);
// One site's stack under its heading line (output/stack_text.h): the user frame, then the
// Python frames, then the native ones folded; with --native the frames as recorded.
void append_frames(std::string& text, const std::vector<Frame>& frames, const StackStyle& style,
                   const char* indent);
// "stack": [frame, ...] with the documented frame keys, each with its "owner" (user, cuda,
// framework, interpreter, runtime), then "user_frame": the index of the user frame or null.
void write_frames(JsonWriter& json, const std::vector<Frame>& frames, size_t depth);
// CUDA graph memory: the site's stack says where the node was made; these say which
// call made it live, a launch or an upload ahead of it (`api`), and its stack `frames`. Text: a
// "made live by cudaGraphUpload from:" line at `indent`, the frames two spaces further in; JSON:
// "launched": {"api", "stack"}.
void append_made_live(std::string& text, uint8_t api, const std::vector<Frame>& frames,
                      const StackStyle& style, const std::string& indent);
void write_made_live(JsonWriter& json, uint8_t api, const std::vector<Frame>& frames, size_t depth);

// A failed allocation's "api", "bytes", "result", "seq", "time_ns" and "stack" (`summary`'s
// failures, `peak`'s first failure), into the object the caller has begun.
void write_failure_fields(JsonWriter& json, const ProcessHeader& process, const Failure& f,
                          const std::vector<Frame>& stack, size_t depth);
// A stream-ordered pool's "pool" (the cudaMemPool_t, or null for a device's default pool) and,
// apart because `summary` puts the device and allocation count between them, what it holds:
// "live_bytes", "live_count", "high_water_bytes", "high_water_seq" (Pool and PoolView alike).
void write_pool_handle(JsonWriter& json, uint64_t handle);
template <typename PoolFigures>
void write_pool_occupancy(JsonWriter& json, const PoolFigures& p) {
  json.field("live_bytes", p.live_bytes);
  json.field("live_count", p.live_count);
  json.field("high_water_bytes", p.high_water_bytes);
  json.field("high_water_seq", p.high_water_seq);
}

// Times in reports are ns since the process file was created (the process's start).
inline uint64_t since_start(const ProcessReader& reader, uint64_t time_ns) {
  return time_ns > reader.start_ns() ? time_ns - reader.start_ns() : 0;
}
inline uint64_t since_start(const ProcessHeader& process, uint64_t time_ns) {
  return time_ns > process.start_ns ? time_ns - process.start_ns : 0;
}
// An event's time since the start as text, no finer than the log's time step: "592 ms" with the
// kernel's 4 ms ticks (not "592.00 ms", nor "10 ns" for an event in the start's own tick).
inline std::string event_time_text(const ProcessHeader& process, uint64_t time_ns) {
  return human_duration(since_start(process, time_ns), process.time_step_ns);
}

// The absolute time --at SECONDS stands for in this process.
uint64_t at_time_ns(const ProcessReader& reader, double seconds);

// "the hint line": "hint: <command>  # <why>"; a command starting "gmemhook " starts with the
// path gmemhook was invoked by instead (output/command_name.h), so it can be pasted as it is.
std::string hint_line(const std::string& command, const std::string& why);

}  // namespace gmemhook::analysis

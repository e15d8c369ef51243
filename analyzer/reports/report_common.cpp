// The pieces every report shares (see report_common.h).
#include "analyzer/reports/report_common.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>

#include "analyzer/log/event_info.h"
#include "analyzer/log/name_table.h"
#include "analyzer/output/command_name.h"
#include "analyzer/output/text_format.h"
#include "analyzer/symbols/user_code.h"

namespace gmemhook::analysis {

namespace {

// Whether `pid` is alive here and runs `exe`. Only meaningful on the machine that recorded the
// run; elsewhere the pid is simply not found (or runs something else).
bool running_here(uint64_t pid, const std::string& exe) {
  if (pid == 0 || pid > INT_MAX || exe.empty()) return false;
  char link[PATH_MAX];
  const std::string proc = "/proc/" + std::to_string(pid) + "/exe";
  const ssize_t n = readlink(proc.c_str(), link, sizeof link - 1);
  if (n <= 0) return false;
  link[n] = '\0';
  return exe == link;
}

// RANK and friends as JSON: a number when numeric, null when unset, else the string.
void write_rank_field(JsonWriter& json, const char* key, const std::string& value) {
  json.key(key);
  if (value.empty()) return json.null();
  if (value.size() < 10 && value.find_first_not_of("0123456789") == std::string::npos)
    return json.value(static_cast<uint64_t>(std::stoull(value)));
  json.value(value);
}

}  // namespace

ReadFacts read_facts(const ProcessReader& reader, const Replay& replay) {
  ReadFacts f;
  for (const Series& s : replay.series())
    if (s.key.memory != format::MemoryType::HostPinned &&
        std::find(f.devices.begin(), f.devices.end(), s.key.device) == f.devices.end())
      f.devices.push_back(s.key.device);
  for (const ReadWarning& w : reader.warnings()) f.warnings.push_back(w.to_string());
  f.abrupt_end = abrupt_end_message(reader);
  f.incomplete = incomplete_log_message(reader);
  return f;
}

namespace {
// What the End record (or its absence) says.
ProcessEnd process_end_of_log(const ProcessReader& reader, const ReadFacts& facts,
                              const Replay& replay) {
  ProcessEnd e;
  if (const auto& end = reader.end()) {
    e.kind = EndKind::Exited;
    e.exit_code = end->status;
    e.duration_ns = end->time_delta_ns;
    e.text = fmt::format("exited with status {}{} after {}", end->status,
                         end->how == format::EndHow::UnderscoreExit ? " (_exit)" : "",
                         human_duration(end->time_delta_ns));
    // The image was replaced, not killed; its memory went with it, as at an exit.
    if (end->how == format::EndHow::Exec)
      e.text = "replaced by exec after " + human_duration(end->time_delta_ns);
    return e;
  }
  e.duration_ns = replay.events() ? since_start(reader, replay.last_time_ns()) : 0;
  e.duration_step_ns = reader.time_step_ns();
  e.still_running = running_here(reader.info().pid, reader.info().exe);
  if (e.still_running) {
    e.text = fmt::format("still running (pid {} is alive); the log so far covers {}",
                         reader.info().pid, human_duration(e.duration_ns, e.duration_step_ns));
  } else {
    // The log alone cannot tell a SIGKILL from a crash; `gmemhook run` will record the signal.
    e.text = facts.abrupt_end.value_or("ended abruptly (killed or crashed)");
    const std::string prefix = "process " + std::to_string(reader.info().pid) + " ";
    if (e.text.starts_with(prefix)) e.text = e.text.substr(prefix.size());
  }
  return e;
}
}  // namespace

ProcessEnd process_end(const ProcessReader& reader, const ReadFacts& facts, const Replay& replay) {
  ProcessEnd e = process_end_of_log(reader, facts, replay);
  if (facts.incomplete) {
    e.incomplete = true;
    e.text += "; " + *facts.incomplete;
  }
  return e;
}

const char* end_name(EndKind kind) { return kind == EndKind::Exited ? "exited" : "unknown"; }

const char* moment_name(Moment moment) {
  return name_in(moment, {"peak", "first-failure", "time", "seq", "end"});
}

std::string process_title(const ProcessInfo& p) {
  std::string title = fmt::format("process {} {}", p.pid, base_name(p.exe));
  if (!p.rank.empty())
    title += fmt::format(" (rank {}{})", p.rank, p.world_size.empty() ? "" : " of " + p.world_size);
  return title;
}

ProcessHeader describe_process(const ProcessReader& reader, const Replay& replay) {
  ProcessHeader h;
  h.info = reader.info();
  h.title = process_title(reader.info());
  h.start_ns = reader.start_ns();
  h.time_step_ns = reader.time_step_ns();
  h.threads = reader.thread_count();
  h.facts = read_facts(reader, replay);
  h.end = process_end(reader, h.facts, replay);
  return h;
}

void write_process_fields(JsonWriter& json, const ProcessHeader& process) {
  const ProcessInfo& p = process.info;
  const ProcessEnd& end = process.end;
  json.field("pid", p.pid);
  json.field("ppid", p.ppid);
  json.field("exe", p.exe);
  json.key("argv");
  json.begin_array();
  for (const std::string& a : p.argv) json.value(a);
  json.end_array();
  write_rank_field(json, "rank", p.rank);
  write_rank_field(json, "local_rank", p.local_rank);
  write_rank_field(json, "world_size", p.world_size);
  json.field("end", end_name(end.kind));
  json.field("exit_code", end.exit_code);
  json.field("still_running", end.still_running);
  json.field("duration_ns", end.duration_ns);
  json.field("time_step_ns", process.time_step_ns);
}

void write_warnings(JsonWriter& json, const ReadFacts& facts, const StackResolver& stacks) {
  json.key("warnings");
  json.begin_array();
  if (facts.abrupt_end) json.value(*facts.abrupt_end);
  if (facts.incomplete) json.value(*facts.incomplete);
  for (const std::string& w : facts.warnings) json.value(w);
  for (const std::string& w : stacks.warnings()) json.value(w);
  json.end_array();
}

bool wanted_series(const ReportOptions& options, const SeriesKey& key) {
  if (options.memory && *options.memory != format::to_string(key.memory)) return false;
  if (!options.device) return true;
  return key.memory != format::MemoryType::HostPinned && key.device == *options.device;
}

std::vector<const Series*> ordered_series(const Replay& replay) {
  std::vector<const Series*> out;
  for (const Series& s : replay.series()) out.push_back(&s);
  auto rank = [](format::MemoryType m) {
    return m == format::MemoryType::Device ? 0 : m == format::MemoryType::Managed ? 1 : 2;
  };
  std::stable_sort(out.begin(), out.end(), [&](const Series* a, const Series* b) {
    if (rank(a->key.memory) != rank(b->key.memory))
      return rank(a->key.memory) < rank(b->key.memory);
    return a->key.device < b->key.device;
  });
  return out;
}

void write_series_fields(JsonWriter& json, const SeriesKey& key) {
  json.key("device");
  if (key.device == kNoDevice)
    json.null();
  else
    json.value(key.device);
  json.field("memory", format::to_string(key.memory));
}

size_t depth_limit(const ReportOptions& options, size_t text_default) {
  if (options.depth) return *options.depth;
  return options.format == "json" ? 0 : text_default;
}

size_t top_limit(const ReportOptions& options, size_t text_default) {
  if (options.top) return *options.top;
  return options.format == "json" ? 0 : text_default;
}

StackStyle stack_style(const ReportOptions& options, size_t text_default_depth) {
  return StackStyle{options.native, depth_limit(options, text_default_depth),
                    options.group_by == GroupBy::Function};
}

void append_frames(std::string& text, const std::vector<Frame>& frames, const StackStyle& style,
                   const char* indent) {
  append_site_stacks(text, {StackShare{&frames, 0, 0}}, style, indent);
}

void append_made_live(std::string& text, uint8_t api, const std::vector<Frame>& frames,
                      const StackStyle& style, const std::string& indent) {
  text += fmt::format("{}made live by {} from:\n", indent, api_name(api));
  append_frames(text, frames, style, (indent + "  ").c_str());
}

void write_made_live(JsonWriter& json, uint8_t api, const std::vector<Frame>& frames,
                     size_t depth) {
  json.object("launched", [&] {
    json.field("api", api_name(api));
    write_frames(json, frames, depth);
  });
}

void write_frames(JsonWriter& json, const std::vector<Frame>& frames, size_t depth) {
  const size_t user = user_frame(frames);
  // `--depth` keeps its frames and never fewer than down to the user frame, so that user_frame
  // always indexes a frame of the list: the HTML page, which embeds stacks 12 deep, showed "no
  // stack recorded" for every GPT-2 leak whose user line lay deeper (index 22 of a list of 12).
  size_t shown = depth == 0 ? frames.size() : std::min(depth, frames.size());
  if (user != kNoUserFrame) shown = std::max(shown, user + 1);
  json.key("stack");
  json.begin_array();
  for (size_t i = 0; i < shown; ++i) {
    const Frame& f = frames[i];
    json.begin_object();
    json.field("function", f.function);
    json.field("file", f.file);
    json.field("line", f.line);
    json.key("module");
    if (f.module.empty())
      json.null();
    else
      json.value(f.module);
    json.field("address", f.address);
    json.field("offset", f.module_offset);
    json.field("python", f.python);
    json.field("inlined", f.inlined);
    json.field("owner", to_string(owner_of(f)));
    json.end_object();
  }
  json.end_array();
  json.key("user_frame");
  if (user == kNoUserFrame)
    json.null();
  else
    json.value(uint64_t(user));
  // A backward pass's stack has no user frame; its autograd node says which operation it was.
  const std::string node = user == kNoUserFrame ? autograd_node(frames) : std::string();
  if (!node.empty()) json.field("autograd_node", node);
}

uint64_t at_time_ns(const ProcessReader& reader, double seconds) {
  if (!(seconds > 0)) return reader.start_ns();
  const double ns = std::floor(seconds * 1e9);
  if (ns >= 1.8e19) return UINT64_MAX;
  return reader.start_ns() + static_cast<uint64_t>(ns);
}

void write_failure_fields(JsonWriter& json, const ProcessHeader& process, const Failure& f,
                          const std::vector<Frame>& stack, size_t depth) {
  json.field("api", api_name(f.api));
  json.field("bytes", f.bytes);
  json.field("result", f.result);
  json.field("seq", f.seq);
  json.field("time_ns", since_start(process, f.time_ns));
  write_frames(json, stack, depth);
}

void write_pool_handle(JsonWriter& json, uint64_t handle) {
  json.key("pool");
  if (handle)
    json.value(handle);
  else
    json.null();
}

std::string hint_line(const std::string& command, const std::string& why) {
  const std::string self = "gmemhook ";
  if (command.starts_with(self))
    return fmt::format("hint: {} {}   # {}\n", command_name(), command.substr(self.size()), why);
  return fmt::format("hint: {}   # {}\n", command, why);
}

}  // namespace gmemhook::analysis

// `gmemhook html`: the page's data — per process the stacked timelines, the peak's stacks as a
// tree, and the summary, leaks and fragmentation reports' own JSON, embedded as they are so the
// page shows exactly the numbers the JSON reports give — poured into the page template
// (output/html_page.h). --format perfetto and memory-viz hand the same run to their writers.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <map>
#include <memory>
#include <stdexcept>

#include "analyzer/log/read_error.h"
#include "analyzer/log/run_dir.h"
#include "analyzer/output/html_page.h"
#include "analyzer/output/private_file.h"
#include "analyzer/output/terminal_text.h"
#include "analyzer/output/text_format.h"
#include "analyzer/reports/process_walk.h"
#include "analyzer/reports/report.h"
#include "analyzer/reports/report_common.h"
#include "analyzer/reports/run_json.h"
#include "analyzer/reports/site_timeline.h"
#include "analyzer/reports/whole_run_format.h"
#include "analyzer/symbols/user_code.h"

namespace gmemhook::analysis {

namespace {

// Keeps a page of many ranks under the 8 MiB scripts/check_page.py allows: fewer buckets and
// rows per process.
constexpr size_t kBucketBudget = 6000;
constexpr size_t kMaxBuckets = 800, kMinBuckets = 120;
constexpr size_t kFlameStacks = 300;  // stacks drawn one by one; the rest become one box
constexpr size_t kStackDepth = 8;     // lines per section of a user-first stack
// The embedded reports run beside the timelines only while four replays at once fit in memory:
// a replay holds up to ~130 bytes per live allocation and an event takes at least ~6 bytes of
// log, so logs of 16 MiB may hold ~350 MiB of live set per replay. Past that they wait for the
// timelines and run one after another (ten million live allocations: 4.2 GB side by side).
constexpr uint64_t kSideBySideLogBytes = 16u << 20;

uint64_t log_bytes(const std::vector<std::filesystem::path>& process_dirs) {
  uint64_t bytes = 0;
  std::error_code ec;
  for (const std::filesystem::path& dir : process_dirs)
    for (const auto& file : std::filesystem::directory_iterator(dir, ec))
      if (file.is_regular_file(ec)) bytes += file.file_size(ec);
  return bytes;
}

// JSON without the indentation JsonWriter adds for people: the page only parses it.
std::string minified(const std::string& json) {
  std::string out;
  out.reserve(json.size() / 2);
  bool in_string = false, escaped = false;
  for (char c : json) {
    if (in_string) {
      out += c;
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
      out += c;
    } else if (c != ' ' && c != '\n' && c != '\t' && c != '\r') {
      out += c;
    }
  }
  return out;
}

// A JSON report of the whole run, as `gmemhook KIND --json` writes it; "null" when it failed.
std::string json_report(const char* report, const WholeRunOptions& options, size_t top,
                        size_t depth, size_t nvml_samples) {
  const ReportEntry* entry = find_report(report);
  if (!entry) return "null";
  ReportOptions o;
  o.run = options.run;
  o.run_arg = options.run_arg;
  o.format = "json";
  o.pid = options.pid;
  o.device = options.device;
  o.apis = options.apis;
  o.top = top;
  o.depth = depth;
  o.nvml_samples = nvml_samples;
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  std::FILE* quiet = std::fopen("/dev/null", "w");
  const int status = run_report(*entry, o, out, quiet ? quiet : stderr);
  std::fclose(out);
  if (quiet) std::fclose(quiet);
  std::string text(buffer ? buffer : "", size);
  std::free(buffer);
  return status == kExitOk && !text.empty() ? minified(text) : "null";
}

// The user-first stack as the text reports write it, one string per line.
void write_stack_lines(JsonWriter& json, const std::vector<Frame>* frames) {
  json.begin_array();
  if (frames) {
    std::string text;
    append_stack(text, *frames, StackStyle{false, kStackDepth}, "");
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      if (end > start) json.value(std::string_view(text).substr(start, end - start));
      start = end + 1;
    }
  }
  json.end_array();
}

// The flame graph: stacks merged from the outermost line down, a stack's library runs folded
// into one box as in the text reports.
struct FlameNode {
  uint64_t bytes = 0;
  std::map<std::string, FlameNode> children;
};

std::string flame_label(const std::vector<Frame>& frames, const StackLine& line) {
  if (line.folded) return terminal_text(describe_fold(line));
  return frame_text(frames[line.first]);
}

void write_flame(JsonWriter& json, const std::string& name, const FlameNode& node) {
  json.begin_array();
  json.value(name);
  json.value(node.bytes);
  if (!node.children.empty()) {
    std::vector<const std::pair<const std::string, FlameNode>*> kids;
    for (const auto& kid : node.children) kids.push_back(&kid);
    std::stable_sort(kids.begin(), kids.end(),
                     [](auto* a, auto* b) { return a->second.bytes > b->second.bytes; });
    json.begin_array();
    for (const auto* kid : kids) write_flame(json, kid->first, kid->second);
    json.end_array();
  }
  json.end_array();
}

void write_peak_flame(JsonWriter& json, const SiteTrack& t) {
  FlameNode root;
  uint64_t rest = 0;
  size_t rest_count = 0;
  for (size_t i = 0; i < t.peak_stacks.size(); ++i) {
    const auto& [frames, bytes] = t.peak_stacks[i];
    root.bytes += bytes;
    if (i >= kFlameStacks) {
      rest += bytes;
      ++rest_count;
      continue;
    }
    const std::vector<StackLine> lines = fold_library_frames(*frames);
    FlameNode* node = &root;
    for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
      node = &node->children[flame_label(*frames, *it)];
      node->bytes += bytes;
    }
    if (lines.empty()) {
      node = &node->children["(no stack recorded)"];
      node->bytes += bytes;
    }
  }
  if (rest_count) root.children[fmt::format("({} smaller stacks)", rest_count)].bytes += rest;
  write_flame(json, "all", root);
}

void write_numbers(JsonWriter& json, const std::vector<uint64_t>& values) {
  json.begin_array();
  for (uint64_t v : values) json.value(v);
  json.end_array();
}

void write_track(JsonWriter& json, const SiteTrack& t) {
  json.begin_object();
  json.field("label", series_label(t.key));
  write_series_fields(json, t.key);
  json.field("layer", t.allocated_layer ? "allocated" : "live");
  json.objects("rows", t.rows, [&](const TimelineRow& r) {
    json.field("site", r.site);
    json.field("kind", r.kind);
    json.key("stack");
    write_stack_lines(json, r.frames);
  });
  json.key("t");
  write_numbers(json, t.time_ns);
  json.key("seq");
  write_numbers(json, t.seq);
  json.key("after_seq");
  write_numbers(json, t.after_seq);
  json.key("inside_event");
  json.begin_array();
  for (size_t b : t.inside_event) json.value(static_cast<uint64_t>(b));
  json.end_array();
  json.field("end_time_ns", t.end_time_ns);
  json.key("v");
  json.begin_array();
  for (const auto& row : t.values) write_numbers(json, row);
  json.end_array();
  json.key("reserved");
  if (t.allocated_layer)
    write_numbers(json, t.reserved);
  else
    json.null();
  json.field("peak_bytes", t.peak_bytes);
  json.field("peak_time_ns", t.peak_time_ns);
  json.field("peak_seq", t.peak_seq);
  json.field("peak_bucket", static_cast<uint64_t>(t.peak_bucket));
  json.field("reserved_peak_bytes", t.reserved_peak_bytes);
  json.field("end_bytes", t.end_bytes);
  json.objects("failures", t.failures, [&](const TimelineFailure& f) {
    json.field("time_ns", f.time_ns);
    json.field("seq", f.seq);
    json.field("bucket", static_cast<uint64_t>(f.bucket));
    json.field("bytes", f.bytes);
    json.field("what", f.what);
    json.field("site", f.site);
  });
  json.key("flame");
  write_peak_flame(json, t);
  json.end_object();
}

int write_file(const std::filesystem::path& path, const std::string& text, std::FILE* err) {
  try {
    write_private_file(path, text);
  } catch (const std::runtime_error& e) {
    fmt::print(err, "gmemhook: {}\n", e.what());
    return kExitReportFailure;
  }
  return kExitOk;
}

int html_page(const WholeRunOptions& options, std::string& page, std::FILE* err) {
  std::string data;
  JsonWriter json(data);
  const std::vector<std::filesystem::path> dirs = find_process_dirs(options.run);
  const size_t process_dirs = dirs.size();
  const auto launch =
      log_bytes(dirs) <= kSideBySideLogBytes ? std::launch::async : std::launch::deferred;
  const size_t buckets =
      std::clamp(kBucketBudget / std::max<size_t>(1, process_dirs), kMinBuckets, kMaxBuckets);
  // The embedded reports each replay the run on their own (a pass is the reader's and the
  // replay's work, most of the page's cost): made beside the timelines' two passes, on other
  // cores, the page takes about as long as its longest part instead of the sum (a
  // 10 M-event run took 83 s one after the other). Fewer, shallower rows per process when there
  // are many, so the file stays small; at most the rows the leaks text report shows (`top` limits
  // only the leaks of the embedded reports).
  const size_t shown = options.pid ? 1 : std::max<size_t>(1, process_dirs);
  const size_t top = std::clamp<size_t>(400 / shown, 5, kLeakRowsText);
  std::vector<std::pair<const char*, std::future<std::string>>> reports;
  for (const char* report : {"summary", "leaks", "fragmentation"})
    reports.emplace_back(report, std::async(launch, [&options, report, top, buckets] {
                           // As many NVML samples as the timeline has buckets, twice.
                           return json_report(report, options, top, 12, 2 * buckets);
                         }));
  json.begin_object();
  json.field("run", options.run_arg);
  json.key("processes");
  json.begin_array();
  const int status =
      walk_processes(options.run, options.pid, stdout, err, [&](ProcessReader& reader) {
        ProcessContext process(reader, options.apis);
        SiteTimelineOptions o;
        o.buckets = buckets;
        o.device = options.device;
        const std::vector<SiteTrack> tracks = site_timeline(process, o);
        json.begin_object();
        json.field("pid", reader.info().pid);
        json.field("title", process_title(reader));
        json.field("rank", reader.info().rank);
        json.key("tracks");
        json.begin_array();
        for (const SiteTrack& t : tracks) write_track(json, t);
        json.end_array();
        json.end_object();
      });
  if (status != kExitOk) return status;  // (the reports' futures wait for their threads)
  json.end_array();
  json.object("reports", [&] {
    for (auto& [report, text] : reports) {
      json.key(report);
      json.raw(text.get());
    }
  });
  // Only run.json's known keys, as JsonWriter writes them: the file is not trusted (run_json.h).
  json.key("run_json");
  std::vector<std::string> warnings;
  if (const std::optional<RunJson> run_json = read_run_json(options.run, warnings))
    write_run_json(json, *run_json);
  else
    json.null();
  for (const std::string& w : warnings)
    fmt::print(err, "gmemhook: warning: {}\n", terminal_text(w));
  json.end_object();
  page = html_page_text("gmemhook: " + options.run_arg, minified(data));
  return kExitOk;
}

}  // namespace

// The other formats' writers, each in its file of the same name.
int perfetto_export(const WholeRunOptions& options, std::string& out, std::FILE* err);
int memory_viz_export(const WholeRunOptions& options, std::string& out, std::FILE* err);

const std::vector<WholeRunFormat>& whole_run_formats() {
  static const std::vector<WholeRunFormat> formats = {
      {"html", "the page", "gmemhook.html", html_page},
      {"perfetto", "a Chrome JSON trace for ui.perfetto.dev and chrome://tracing",
       "gmemhook.trace.json", perfetto_export},
      {"memory-viz",
       "a PyTorch memory snapshot pickle for torch.cuda._memory_viz and pytorch.org/memory_viz",
       "gmemhook.memory_viz.pickle", memory_viz_export},
  };
  return formats;
}

const WholeRunFormat* find_whole_run_format(const std::string& name) {
  for (const WholeRunFormat& f : whole_run_formats())
    if (name == f.name) return &f;
  return nullptr;
}

int run_html_report(const WholeRunOptions& options, std::FILE* err) {
  const WholeRunFormat* format = find_whole_run_format(options.format);
  if (!format) {
    std::fprintf(err, "gmemhook: unknown format %s\n", options.format.c_str());
    return 2;  // a usage error (the CLI's IsMember check normally catches it first)
  }
  std::string text;
  int status;
  try {
    status = format->write(options, text, err);
  } catch (const ReadError& e) {
    // A run that cannot be read at all (no process directory, a damaged header): said as every
    // other report says it, not an abort.
    std::fprintf(err, "gmemhook: %s\n", e.what());
    return kExitUnreadable;
  }
  return status == kExitOk ? write_file(options.output, text, err) : status;
}

}  // namespace gmemhook::analysis

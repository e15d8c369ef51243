// `gmemhook dump`: one line per record, process by process in pid order. Process-file records
// come in file order, thread-file headers next, then stacks, Python code objects and events merged
// by seq, the chunks read without a seal check and the End record (or its absence) last. A
// stack's Python frames follow its addresses as
// `py: CODE@OFFSET:LINE`, innermost first, `*` marking the first frame of an interpreter-loop call.
#include "analyzer/reports/dump_command.h"

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "analyzer/log/event_info.h"
#include "analyzer/log/reader.h"
#include "analyzer/output/terminal_text.h"
#include "analyzer/output/text_format.h"
#include "analyzer/reports/process_walk.h"
#include "analyzer/symbols/python_lines.h"

namespace gmemhook::analysis {

namespace {

// A string as one token: bare when it is plain, else double-quoted with escapes, so a path with
// spaces or a note with a newline cannot break the one-record-per-line rule.
std::string as_token(std::string_view s) {
  bool plain = !s.empty();
  for (unsigned char c : s)
    if (c <= ' ' || c == '"' || c == '\\' || c >= 0x7f || c == ',' || c == ']') plain = false;
  if (plain) return std::string(s);
  std::string q;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      q += '\\';
      q += c;
    } else if (c == '\n') {
      q += "\\n";
    } else {
      q += c;
    }
  }
  // Other controls and bytes that are not UTF-8 as \xNN, UTF-8 as it is.
  return '"' + terminal_text(q) + '"';
}

std::string hex_bytes(std::string_view raw) {
  std::string s;
  for (unsigned char c : raw) s += fmt::format("{:02x}", c);
  return s;
}

// "+1.234567s": a signed offset from the process's start.
void append_since_start(fmt::memory_buffer& buf, uint64_t t_ns, uint64_t start_ns) {
  bool negative = t_ns < start_ns;
  uint64_t d = negative ? start_ns - t_ns : t_ns - start_ns;
  fmt::format_to(fmt::appender(buf), "{}{}.{:06}s", negative ? '-' : '+', d / 1000000000,
                 d % 1000000000 / 1000);
}

std::string since_start(uint64_t t_ns, uint64_t start_ns) {
  fmt::memory_buffer buf;
  append_since_start(buf, t_ns, start_ns);
  return fmt::to_string(buf);
}

std::string segment_flags(uint64_t flags) {
  // ELF PF_R = 4, PF_W = 2, PF_X = 1.
  return std::string(flags & 4 ? "r" : "-") + (flags & 2 ? "w" : "-") + (flags & 1 ? "x" : "-");
}

void print_process_info(std::FILE* out, const ProcessReader& r) {
  const ProcessInfo& p = r.info();
  std::string line =
      fmt::format("process pid={} ppid={} exe={} argv=[", p.pid, p.ppid, as_token(p.exe));
  for (size_t i = 0; i < p.argv.size(); ++i) line += (i ? ", " : "") + as_token(p.argv[i]);
  line += "]";
  if (!p.rank.empty()) line += " rank=" + as_token(p.rank);
  if (!p.local_rank.empty()) line += " local_rank=" + as_token(p.local_rank);
  if (!p.world_size.empty()) line += " world_size=" + as_token(p.world_size);
  const auto& h = r.process().header;
  line += fmt::format(" started={} library={} chunk_size={} file={}", utc_time(h.start_realtime_ns),
                      as_token(p.library_version), h.chunk_size, as_token(r.process_file_name()));
  fmt::print(out, "{}\n", line);
}

void print_snapshot(std::FILE* out, const ModuleSnapshot& s) {
  fmt::print(out, "modules seq={} count={}{}\n", s.seq, s.declared,
             s.complete() ? "" : fmt::format(" (only {} committed)", s.modules.size()));
  for (const Module& m : s.modules) {
    std::string segs;
    for (const Segment& seg : m.segments)
      segs += fmt::format("{}{}@{:#x}+{:#x}", segs.empty() ? "" : ",", segment_flags(seg.flags),
                          seg.vaddr, seg.memsz);
    fmt::print(out, "module {} build-id={} base={:#x} segs={}\n", as_token(m.path),
               m.build_id.empty() ? "-" : hex_bytes(m.build_id), m.load_bias,
               segs.empty() ? "-" : segs);
  }
}

// Process-file snapshots and notes, interleaved as they were written.
void print_process_records(std::FILE* out, const ProcessReader& r) {
  const auto& snaps = r.module_snapshots();
  const auto& notes = r.notes();
  size_t si = 0, ni = 0;
  while (si < snaps.size() || ni < notes.size()) {
    if (ni == notes.size() || (si < snaps.size() && snaps[si].offset < notes[ni].offset))
      print_snapshot(out, snaps[si++]);
    else
      fmt::print(out, "note: {}\n", as_token(notes[ni++].text));
  }
  // What NVML said: not events, so after them in no sequence; seq= places each.
  for (const NvmlSample& s : r.nvml_samples())
    fmt::print(out,
               "nvml seq={} t_ns={} device={} reason={} listed={} process_used={} total={} "
               "used={}\n",
               s.seq, s.time_delta_ns, s.device, format::to_string(s.reason), s.listed ? 1 : 0,
               s.process_used, s.total, s.used);
}

class EventPrinter : public EventVisitor {
 public:
  EventPrinter(std::FILE* out, uint64_t start_ns) : out_(out), start_ns_(start_ns) {}

  void on_event(const format::Event& ev, const ThreadFileReader& t) override {
    line_.clear();
    auto out = fmt::appender(line_);
    fmt::format_to(out, "seq={} t=", ev.seq);
    append_since_start(line_, ev.time_ns, start_ns_);
    fmt::format_to(out, " tid={} ", t.tid());
    if (const format::ApiInfo* api = format::find_api(ev.api))
      fmt::format_to(out, "{} {}", api->name,
                     format::to_string(format::event_kind_of(api->kind, ev.f.mask)));
    else
      fmt::format_to(out, "api#{}", ev.api);
    if (auto mem = memory_type(ev)) fmt::format_to(out, " mem={}", format::to_string(*mem));
    const format::EventFields& f = ev.f;
    if (f.has(format::kHasDevice)) fmt::format_to(out, " device={}", f.device);
    if (f.has(format::kHasAddress)) fmt::format_to(out, " ptr={:#x}", f.address);
    if (f.has(format::kHasSize)) fmt::format_to(out, " size={}", f.size);
    if (f.has(format::kHasStream)) fmt::format_to(out, " stream={:#x}", f.stream);
    if (f.has(format::kHasPool)) fmt::format_to(out, " pool={:#x}", f.pool);
    if (f.has(format::kHasHandle)) fmt::format_to(out, " handle={:#x}", f.handle);
    if (f.has(format::kHasOffset)) fmt::format_to(out, " offset={}", f.offset);
    if (f.has(format::kHasGraph)) fmt::format_to(out, " graph={:#x}", f.graph);
    if (f.has(format::kHasFlags)) fmt::format_to(out, " flags={:#x}", f.flags);
    if (f.has(format::kHasTotals))
      fmt::format_to(out, " allocated={} reserved={}", f.allocated, f.reserved);
    fmt::format_to(out, " result={}", ev.result);
    if (ev.stack_id) fmt::format_to(out, " stack={}", ev.stack_id);
    emit();
  }

  void on_stack(uint32_t id, std::span<const uint64_t> frames, const ThreadFileReader& t) override {
    line_.clear();
    auto out = fmt::appender(line_);
    fmt::format_to(out, "stack {} tid={}:", id, t.tid());
    for (uint64_t pc : frames) fmt::format_to(out, " {:#x}", pc);
    if (frames.empty()) fmt::format_to(out, " (no frames)");
    auto python = t.python_frames(id);
    if (!python.empty()) fmt::format_to(out, " py:");
    for (const PyFrameRef& f : python) {
      fmt::format_to(out, " {}@{}", f.code_id, f.offset);
      const PyCode* code = t.py_code(f.code_id);
      if (auto line = code ? python_line(*code, f.offset) : std::nullopt)
        fmt::format_to(out, ":{}", *line);
      else
        fmt::format_to(out, ":?");
      if (f.is_entry) fmt::format_to(out, "*");
    }
    emit();
  }

  void on_py_code(const PyCode& c, const ThreadFileReader& t) override {
    line_.clear();
    fmt::format_to(fmt::appender(line_),
                   "pycode {} tid={}: python={}.{} file={} name={} qualname={} first_line={} "
                   "line_table={}B",
                   c.id, t.tid(), c.py_version >> 8, c.py_version & 0xff, as_token(c.filename),
                   as_token(c.name), c.qualname.empty() ? "-" : as_token(c.qualname), c.first_line,
                   c.line_table.size());
    emit();
  }

  void on_note(const Note& note, const ThreadFileReader& t) override {
    fmt::print(out_, "note tid={}: {}\n", t.tid(), as_token(note.text));
  }

  // A line is printed as its event arrives: nothing to start loading ahead of it.
  bool wants_upcoming() const override { return false; }

 private:
  void emit() {
    line_.push_back('\n');
    std::fwrite(line_.data(), 1, line_.size(), out_);
  }

  std::FILE* out_;
  uint64_t start_ns_;
  // Reused for every line: dumps of large runs print millions of them.
  fmt::memory_buffer line_;
};

void print_end(std::FILE* out, const ProcessReader& r) {
  if (auto abrupt = abrupt_end_message(r)) {
    fmt::print(out, "end: none \u2014 {}\n", *abrupt);
    return;
  }
  const EndRecord& e = *r.end();
  fmt::print(out, "end: {}({}) after seq={} cuda_used={} t={}\n",
             e.how == format::EndHow::Exit ? "exit" : "_exit", e.status, e.last_seq,
             e.cuda_used ? 1 : 0, since_start(r.start_ns() + e.time_delta_ns, r.start_ns()));
}

void dump_process(std::FILE* out, std::FILE* err, ProcessReader& r) {
  print_process_info(out, r);
  print_process_records(out, r);
  for (size_t i = 0; i < r.thread_count(); ++i) {
    const ThreadFileReader& t = r.thread(i);
    fmt::print(out, "thread tid={} file={} chunk_size={} start={}\n", t.tid(), as_token(t.name()),
               t.header().chunk_size, since_start(t.header().start_monotonic_ns, r.start_ns()));
  }
  EventPrinter printer(out, r.start_ns());
  r.read_events(printer);
  // What no seal vouched for: the last chunks of files written until the process ended.
  for (const ProcessReader::Unsealed& u : r.unsealed_chunks())
    fmt::print(out, "unsealed file={} chunk={} bytes={} (no seal: read without a check)\n",
               as_token(u.file), u.chunk.offset, u.chunk.bytes);
  print_end(out, r);
  for (const ReadWarning& w : r.warnings())
    fmt::print(err, "gmemhook: warning: {}\n", w.to_string());
}

}  // namespace

int dump_command(const std::filesystem::path& run, std::FILE* out, std::FILE* err) {
  size_t dumped = 0;
  return walk_processes(run, std::nullopt, out, err, [&](ProcessReader& reader) {
    if (dumped++) fmt::print(out, "\n");
    dump_process(out, err, reader);
  });
}

}  // namespace gmemhook::analysis

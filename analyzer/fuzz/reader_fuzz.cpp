// libFuzzer target for the reader: any bytes must give events or a ReadError, never a crash, a
// hang or an allocation that the input's size does not justify.
//
// Input layout: byte 0 = flags, bytes 1..4 = two u16 split points, the rest is cut into
// process.gmh and one or two thread files. Flag bit 0 prepends valid file headers so the fuzzer
// spends its time on records rather than on rediscovering the magic; bit 1 asks for two threads;
// bit 2 makes those headers say format version 1 (the older event mask).
#include <cstdint>
#include <vector>

#include "analyzer/log/event_info.h"
#include "analyzer/log/reader.h"
#include "analyzer/symbols/python_stack.h"
#include "gmemhook/framing.h"

namespace {

using namespace gmemhook;

std::vector<uint8_t> file_part(const uint8_t* p, size_t n, bool with_header, uint16_t version,
                               format::FileKind kind, uint64_t tid) {
  std::vector<uint8_t> out;
  if (with_header) {
    out.resize(sizeof(format::FileHeader));
    format::put_file_header(out.data(), {.kind = static_cast<uint16_t>(kind),
                                         .chunk_size = format::kMinChunkSize,
                                         .tid = tid,
                                         .pid = 1});
    reinterpret_cast<format::FileHeader*>(out.data())->version = version;  // today's, or the oldest
  }
  out.insert(out.end(), p, p + n);
  return out;
}

// Touches everything a report would, so the sanitizers see every byte the reader hands out.
struct Touch : analysis::EventVisitor {
  uint64_t sum = 0;
  void on_event(const format::Event& ev, const analysis::ThreadFileReader& t) override {
    sum +=
        ev.seq + ev.f.address + ev.f.allocated + ev.f.reserved + analysis::api_name(ev.api).size();
    if (auto k = analysis::event_kind(ev)) sum += static_cast<uint64_t>(*k);
    for (uint64_t pc : t.stack(ev.stack_id)) sum += pc;
    // Python frames with their lines decoded from whatever line tables the input holds.
    for (const analysis::PyFrameRef& f : t.python_frames(ev.stack_id))
      sum += analysis::python_frame(f, t).line.value_or(0);
    if (auto m = analysis::memory_type(ev)) sum += static_cast<uint64_t>(*m);
  }
  // A usual event's numbers, as Replay::on_usual_event reads them, must be its whole Event's:
  // a difference stops the fuzzer here.
  void on_usual_event(const analysis::ThreadFileReader& t) override {
    const analysis::UsualEventRef u = t.usual();
    const format::Event& ev = t.current();
    if (u.api() != ev.api || u.seq() != ev.seq || u.time_ns() != ev.time_ns ||
        u.stack_id() != ev.stack_id || u.address() != ev.f.address || u.size() != ev.f.size ||
        u.stream() != ev.f.stream || u.device() != ev.f.device || ev.result != 0 ||
        t.current_address() != ev.f.address || t.current_stack_id() != ev.stack_id)
      __builtin_trap();
    on_event(ev, t);
  }
  void on_stack(uint32_t id, std::span<const uint64_t> frames,
                const analysis::ThreadFileReader&) override {
    sum += id + frames.size();
  }
  void on_note(const analysis::Note& n, const analysis::ThreadFileReader&) override {
    sum += n.text.size();
  }
  void on_py_code(const analysis::PyCode& c, const analysis::ThreadFileReader&) override {
    sum += c.filename.size() + c.line_table.size();
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 5) return 0;
  const uint8_t flags = data[0];
  const bool headers = flags & 1, two_threads = flags & 2;
  const uint16_t version = flags & 4 ? format::kOldestReadableVersion : format::kFormatVersion;
  size_t split1 = static_cast<size_t>(data[1] | data[2] << 8);
  size_t split2 = static_cast<size_t>(data[3] | data[4] << 8);
  data += 5;
  size -= 5;
  split1 = size ? split1 % (size + 1) : 0;
  const size_t rest = size - split1;
  split2 = two_threads ? split2 % (rest + 1) : rest;

  auto process = file_part(data, split1, headers, version, format::FileKind::Process, 0);
  auto t1 = file_part(data + split1, split2, headers, version, format::FileKind::Thread, 2);
  auto t2 = file_part(data + split1 + split2, rest - split2, headers, version,
                      format::FileKind::Thread, 3);

  try {
    std::vector<analysis::LogBytes> threads;
    threads.push_back(analysis::LogBytes::borrow(t1, "thread.2.gmh"));
    if (two_threads) threads.push_back(analysis::LogBytes::borrow(t2, "thread.3.gmh"));
    auto reader = analysis::ProcessReader::from_logs(
        analysis::LogBytes::borrow(process, "process.gmh"), std::move(threads));
    Touch touch;
    reader.read_events(touch);
    for (const auto& s : reader.module_snapshots())
      for (const auto& m : s.modules) touch.sum += m.path.size() + m.segments.size();
    (void)analysis::abrupt_end_message(reader);
    (void)analysis::incomplete_log_message(reader);
    // What the reader says it read unchecked, or lost, lies within the files.
    const size_t all = process.size() + t1.size() + t2.size();
    for (const auto& u : reader.unsealed_chunks())
      if (u.chunk.bytes > all) __builtin_trap();
    if (reader.damaged_bytes() > all) __builtin_trap();
    (void)reader.warnings();
  } catch (const analysis::ReadError& e) {
    // Damage must be reported with a message; an empty one would leave the user guessing.
    if (e.expected().empty()) __builtin_trap();
  }
  return 0;
}

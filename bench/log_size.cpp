// Where a log's bytes go (the target: at most 12 bytes per event): bytes per event of a run or
// process directory, split by record kind and, for events, by part of the encoding (codec.h,
// EventPart). Every byte of every file is counted once: headers, records, and what chunks leave
// unused (ChunkEnd tails, seals).
//
// Usage: log_size DIR   (a run directory or one process directory)
#include <cstdio>
#include <filesystem>
#include <string>

#include "analyzer/log/log_bytes.h"
#include "analyzer/log/read_error.h"
#include "analyzer/log/record_cursor.h"
#include "gmemhook/codec.h"
#include "gmemhook/format.h"

namespace fs = std::filesystem;
namespace fmt = gmemhook::format;
using gmemhook::analysis::LogBytes;
using gmemhook::analysis::Record;
using gmemhook::analysis::RecordCursor;

namespace {

// Counts what encode_event_to writes, by part.
struct PartSizer {
  uint64_t bytes[static_cast<size_t>(fmt::EventPart::Count)] = {};
  fmt::EventPart current = fmt::EventPart::Api;
  void part(fmt::EventPart p) { current = p; }
  void u8(uint8_t) { bytes[static_cast<size_t>(current)] += 1; }
  void varint(uint64_t v) { bytes[static_cast<size_t>(current)] += fmt::varint_size(v); }
  void zigzag(int64_t v) { varint(fmt::zigzag(v)); }
};

struct Totals {
  uint64_t files = 0, file_bytes = 0, events = 0, event_headers = 0, event_payloads = 0;
  uint64_t stacks = 0, py_codes = 0, process_records = 0, other = 0;
  PartSizer parts;
};

void count_file(const fs::path& path, fmt::FileKind kind, Totals& t) {
  LogBytes file = LogBytes::map(path, path.filename().string());
  const auto header = gmemhook::analysis::read_file_header(file, kind);
  ++t.files;
  t.file_bytes += file.size();
  if (!header) return;
  RecordCursor cursor(file, *header);
  fmt::EventDeltas deltas, sizing;
  deltas.last_time_ns = sizing.last_time_ns = header->start_monotonic_ns;
  deltas.version = header->version;
  Record r;
  while (cursor.next(&r)) {
    const uint64_t header_size = fmt::is_big(r.type) ? fmt::kBigHeaderSize : fmt::kSmallHeaderSize;
    const uint64_t n = header_size + r.payload.size();
    if (kind == fmt::FileKind::Process) {
      t.process_records += n;
    } else if (fmt::is_event_type(r.type, header->version)) {
      fmt::Event ev;
      if (!fmt::decode_event(r.type, r.payload.data(), r.payload.size(), &ev, deltas))
        throw gmemhook::analysis::ReadError(file.name(), r.offset, "an event that decodes");
      ++t.events;
      t.event_headers += header_size;
      t.event_payloads += r.payload.size();
      // Re-encoded the way today's writer would: for an older log, what it would take now.
      fmt::encode_event_to(t.parts, ev, ev.f, sizing);
    } else if (r.type == static_cast<uint8_t>(fmt::RecordType::Stack)) {
      t.stacks += n;
    } else if (r.type == static_cast<uint8_t>(fmt::RecordType::PyCode)) {
      t.py_codes += n;
    } else {
      t.other += n;
    }
  }
}

void count_dir(const fs::path& dir, Totals& t) {
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory())
      count_dir(e.path(), t);
    else if (name == fmt::kProcessFileName)
      count_file(e.path(), fmt::FileKind::Process, t);
    else if (name.starts_with(fmt::kThreadFilePrefix) && name.ends_with(fmt::kFileSuffix))
      count_file(e.path(), fmt::FileKind::Thread, t);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: log_size DIR\n");
    return 2;
  }
  Totals t;
  try {
    count_dir(argv[1], t);
  } catch (const gmemhook::analysis::ReadError& e) {
    std::fprintf(stderr, "log_size: %s\n", e.what());
    return 1;
  }
  if (t.events == 0) {
    std::fprintf(stderr, "log_size: no events under %s\n", argv[1]);
    return 1;
  }
  const double ev = static_cast<double>(t.events);
  const uint64_t records = t.event_headers + t.event_payloads + t.stacks + t.py_codes +
                           t.process_records + t.other;
  std::printf("%llu events in %llu files, %llu bytes: %.2f bytes/event\n",
              static_cast<unsigned long long>(t.events), static_cast<unsigned long long>(t.files),
              static_cast<unsigned long long>(t.file_bytes), t.file_bytes / ev);
  auto row = [&](const char* what, uint64_t bytes) {
    std::printf("  %-28s %7.3f\n", what, bytes / ev);
  };
  std::printf("bytes/event by record kind:\n");
  row("event record headers", t.event_headers);
  row("event payloads", t.event_payloads);
  row("stack records", t.stacks);
  row("py-code records", t.py_codes);
  row("process file records", t.process_records);
  row("notes", t.other);
  row("file headers, chunk tails", t.file_bytes - records);
  std::printf("event payload bytes/event by part (as this build encodes them):\n");
  for (size_t p = 0; p < static_cast<size_t>(fmt::EventPart::Count); ++p)
    row(fmt::kEventPartNames[p], t.parts.bytes[p]);
  return 0;
}

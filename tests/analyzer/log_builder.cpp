// The test-side log writer (see log_builder.h).
#include "log_builder.h"

#include <unistd.h>

#include <cstring>
#include <fstream>
#include <stdexcept>

namespace gmemhook::test_logs {

using format::RecordType;

LogFile::LogFile(format::FileKind kind, uint32_t chunk_size, uint32_t pid, uint64_t tid,
                 uint64_t start_ns)
    : chunk_size_(chunk_size), bytes_(sizeof(format::FileHeader), 0) {
  format::FileHeader& h = header();
  std::memcpy(h.magic, format::kMagic, sizeof h.magic);
  h.version = format::kFormatVersion;
  h.kind = static_cast<uint16_t>(kind);
  h.chunk_size = chunk_size;
  h.tid = tid;
  h.start_monotonic_ns = start_ns;
  h.start_realtime_ns = 1796000000ull * 1000000000ull + start_ns;
  h.pid = pid;
}

format::FileHeader& LogFile::header() {
  return *reinterpret_cast<format::FileHeader*>(bytes_.data());
}

void LogFile::record(RecordType type, std::span<const uint8_t> payload) {
  const auto t = static_cast<uint8_t>(type);
  const size_t header_size = format::is_big(t) ? format::kBigHeaderSize : format::kSmallHeaderSize;
  if (!format::is_big(t) && payload.size() > format::kMaxSmallPayload)
    throw std::logic_error("small record payload too long");
  const size_t total = header_size + payload.size();
  if (total > chunk_size_) throw std::logic_error("record larger than a chunk");
  size_t chunk_end = (bytes_.size() / chunk_size_ + 1) * chunk_size_;
  if (bytes_.size() + total > chunk_end) {
    if (chunk_end - bytes_.size() >= format::kSmallHeaderSize) {
      bytes_.push_back(static_cast<uint8_t>(RecordType::ChunkEnd));
      bytes_.push_back(0);
    }
    bytes_.resize(chunk_end, 0);
  }
  raw_record(t, static_cast<uint32_t>(payload.size()), payload);
}

void LogFile::raw_record(uint8_t type, uint32_t payload_len, std::span<const uint8_t> payload) {
  if (format::is_big(type)) {
    bytes_.push_back(type);
    bytes_.push_back(0);
    uint8_t len[4];
    std::memcpy(len, &payload_len, sizeof len);
    bytes_.insert(bytes_.end(), len, len + 4);
  } else {
    bytes_.push_back(type);
    bytes_.push_back(static_cast<uint8_t>(payload_len));
  }
  raw(payload);
}

void LogFile::pad_to_chunk() {
  size_t rem = bytes_.size() % chunk_size_;
  if (rem) bytes_.resize(bytes_.size() + chunk_size_ - rem, 0);
}

ThreadLogBuilder::ThreadLogBuilder(uint32_t pid, uint64_t tid, uint64_t start_ns,
                                   uint32_t chunk_size)
    : file(format::FileKind::Thread, chunk_size, pid, tid, start_ns), deltas_{0, start_ns, 0} {}

Bytes stack_payload(uint32_t id, const std::vector<uint64_t>& frames,
                    const std::vector<analysis::PyFrameRef>& python) {
  Bytes p(30 + frames.size() * 10 + python.size() * 20);
  format::PayloadWriter w(p.data());
  w.varint(id);
  w.varint(frames.size());
  uint64_t prev = 0;
  for (uint64_t pc : frames) {
    w.zigzag(static_cast<int64_t>(pc - prev));
    prev = pc;
  }
  w.varint(python.size());
  for (const analysis::PyFrameRef& f : python) {
    w.varint(f.code_id);
    w.varint(uint64_t{f.offset} << 1 | (f.is_entry ? 1 : 0));
  }
  p.resize(w.size());
  return p;
}

Bytes py_code_payload(const analysis::PyCode& c) {
  Bytes p(80 + c.filename.size() + c.name.size() + c.qualname.size() + c.line_table.size());
  format::PayloadWriter w(p.data());
  w.varint(c.id);
  w.varint(c.py_version);
  w.string(c.filename);
  w.string(c.name);
  w.string(c.qualname);
  w.varint(c.first_line);
  w.string(c.line_table);
  p.resize(w.size());
  return p;
}

uint32_t ThreadLogBuilder::stack(const std::vector<uint64_t>& frames,
                                 const std::vector<analysis::PyFrameRef>& python) {
  file.record(RecordType::Stack, stack_payload(++stacks_, frames, python));
  return stacks_;
}

uint32_t ThreadLogBuilder::py_code(analysis::PyCode code) {
  code.id = ++py_codes_;
  file.record(RecordType::PyCode, py_code_payload(code));
  return py_codes_;
}

void ThreadLogBuilder::event(const format::Event& ev) {
  uint8_t p[format::kMaxEventPayload];
  size_t n = format::encode_event(p, ev, deltas_);
  file.record(RecordType::Event, {p, n});
}

void ThreadLogBuilder::note(std::string_view text) {
  Bytes p(10 + text.size());
  format::PayloadWriter w(p.data());
  w.string(text);
  p.resize(w.size());
  file.record(RecordType::Note, p);
}

ProcessLogBuilder::ProcessLogBuilder(uint32_t pid, uint64_t start_ns, uint32_t chunk_size)
    : file(format::FileKind::Process, chunk_size, pid, 0, start_ns) {}

void ProcessLogBuilder::info(const analysis::ProcessInfo& pi) {
  size_t room = 100 + pi.exe.size() + pi.rank.size() + pi.local_rank.size() + pi.world_size.size() +
                pi.library_version.size();
  for (const auto& a : pi.argv) room += 10 + a.size();
  Bytes p(room);
  format::PayloadWriter w(p.data());
  w.varint(pi.pid);
  w.varint(pi.ppid);
  w.string(pi.exe);
  w.varint(pi.argv.size());
  for (const auto& a : pi.argv) w.string(a);
  w.string(pi.rank);
  w.string(pi.local_rank);
  w.string(pi.world_size);
  w.string(pi.library_version);
  w.varint(pi.chunk_size_hint);
  p.resize(w.size());
  file.record(RecordType::ProcessInfo, p);
}

void ProcessLogBuilder::modules_begin(uint64_t seq, uint64_t count) {
  uint8_t p[20];
  format::PayloadWriter w(p);
  w.varint(seq);
  w.varint(count);
  file.record(RecordType::ModulesBegin, {p, w.size()});
}

void ProcessLogBuilder::module(const analysis::Module& m) {
  Bytes p(40 + m.path.size() + m.build_id.size() + m.segments.size() * 30);
  format::PayloadWriter w(p.data());
  w.string(m.path);
  w.string(m.build_id);
  w.varint(m.load_bias);
  w.varint(m.segments.size());
  for (const auto& s : m.segments) {
    w.varint(s.vaddr);
    w.varint(s.memsz);
    w.varint(s.flags);
  }
  p.resize(w.size());
  file.record(RecordType::Module, p);
}

void ProcessLogBuilder::snapshot(uint64_t seq, const std::vector<analysis::Module>& modules) {
  modules_begin(seq, modules.size());
  for (const auto& m : modules) module(m);
}

void ProcessLogBuilder::note(std::string_view text) {
  Bytes p(10 + text.size());
  format::PayloadWriter w(p.data());
  w.string(text);
  p.resize(w.size());
  file.record(RecordType::Note, p);
}

void ProcessLogBuilder::end(format::EndHow how, int64_t status, uint64_t last_seq,
                            uint64_t time_delta_ns, bool cuda_used) {
  uint8_t p[40];
  format::PayloadWriter w(p);
  w.u8(static_cast<uint8_t>(how));
  w.zigzag(status);
  w.varint(last_seq);
  w.varint(time_delta_ns);
  w.u8(cuda_used ? 1 : 0);
  file.record(RecordType::End, {p, w.size()});
}

format::Event make_event(format::ApiId api, uint64_t seq, uint64_t time_ns, uint32_t stack_id) {
  format::Event ev;
  ev.api = static_cast<uint8_t>(api);
  ev.seq = seq;
  ev.time_ns = time_ns;
  ev.stack_id = stack_id;
  return ev;
}

std::filesystem::path make_temp_dir(std::string_view tag) {
  std::string tmpl =
      (std::filesystem::temp_directory_path() / ("gmemhook-test-" + std::string(tag) + "-XXXXXX"))
          .string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

void write_file(const std::filesystem::path& path, std::span<const uint8_t> bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace gmemhook::test_logs

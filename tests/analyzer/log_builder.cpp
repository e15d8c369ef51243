// The test-side log writer (see log_builder.h).
#include "log_builder.h"

#include <unistd.h>

#include <fstream>
#include <stdexcept>

#include "gmemhook/framing.h"

namespace gmemhook::test_logs {

using format::RecordType;

LogFile::LogFile(format::FileKind kind, uint32_t chunk_size, uint32_t pid, uint64_t tid,
                 uint64_t start_ns)
    : chunk_size_(chunk_size), bytes_(sizeof(format::FileHeader), 0) {
  format::put_file_header(bytes_.data(),
                          {.kind = static_cast<uint16_t>(kind),
                           .chunk_size = chunk_size,
                           .tid = tid,
                           .start_monotonic_ns = start_ns,
                           .start_realtime_ns = 1796000000ull * 1000000000ull + start_ns,
                           .pid = pid});
}

format::FileHeader& LogFile::header() {
  return *reinterpret_cast<format::FileHeader*>(bytes_.data());
}

void LogFile::record(RecordType type, std::span<const uint8_t> payload) {
  const auto t = static_cast<uint8_t>(type);
  if (!format::is_big(t) && payload.size() > format::kMaxSmallPayload)
    throw std::logic_error("small record payload too long");
  const size_t total = format::record_header_size(t) + payload.size();
  if (total + format::kSealSize > chunk_size_) throw std::logic_error("record larger than a chunk");
  // Records end before the chunk's seal (format.h, "Chunk seals"), as the writer keeps them.
  const size_t start = bytes_.size() / chunk_size_ * chunk_size_;
  if (bytes_.size() + total > start + format::record_area(chunk_size_)) {
    const size_t pos = bytes_.size() - start;
    bytes_.resize(start + chunk_size_, 0);
    format::end_chunk(bytes_.data() + start, pos, chunk_size_);
  }
  raw_record(t, static_cast<uint32_t>(payload.size()), payload);
}

void LogFile::seal_cut() { seal_file_end(bytes_, chunk_size_); }

void seal_file_end(Bytes& bytes, uint32_t chunk_size) {
  const size_t start = (bytes.size() - 1) / chunk_size * chunk_size;
  const size_t at = format::cut_seal_offset(bytes.size() - start);
  bytes.resize(start + at + format::kSealSize, 0);
  format::seal_chunk(bytes.data() + start, at);
}

void LogFile::raw_record(uint8_t type, uint32_t payload_len, std::span<const uint8_t> payload) {
  uint8_t header[format::kBigHeaderSize];
  const size_t n = format::put_record_header(header, type, payload_len);
  bytes_.insert(bytes_.end(), header, header + n);
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
  std::vector<uint64_t> words;
  for (const analysis::PyFrameRef& f : python)
    words.push_back(format::py_frame_word(f.code_id, f.offset << 1 | (f.is_entry ? 1 : 0)));
  return encoded(format::StackPayload{id, frames, words});
}

Bytes py_code_payload(const analysis::PyCode& c) {
  return encoded(format::PyCodePayload{c.id, c.py_version, c.filename, c.name, c.qualname,
                                       c.first_line, c.line_table});
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
  const format::EncodedEvent encoded = format::encode_event(p, ev, deltas_);
  file.record(encoded.type, {p, encoded.size});
}

void ThreadLogBuilder::note(std::string_view text) { file.record(format::NotePayload{text}); }

ProcessLogBuilder::ProcessLogBuilder(uint32_t pid, uint64_t start_ns, uint32_t chunk_size)
    : file(format::FileKind::Process, chunk_size, pid, 0, start_ns) {}

void ProcessLogBuilder::info(const analysis::ProcessInfo& pi) {
  std::vector<std::string_view> argv(pi.argv.begin(), pi.argv.end());
  file.record(format::ProcessInfoPayload{pi.pid, pi.ppid, pi.exe, argv, pi.rank, pi.local_rank,
                                         pi.world_size, pi.library_version, pi.chunk_size_hint});
}

void ProcessLogBuilder::modules_begin(uint64_t seq, uint64_t count) {
  file.record(format::ModulesBeginPayload{seq, count});
}

void ProcessLogBuilder::module(const analysis::Module& m) {
  file.record(format::ModulePayload{m.path, m.build_id, m.load_bias, m.segments});
}

void ProcessLogBuilder::snapshot(uint64_t seq, const std::vector<analysis::Module>& modules) {
  modules_begin(seq, modules.size());
  for (const auto& m : modules) module(m);
}

void ProcessLogBuilder::note(std::string_view text) { file.record(format::NotePayload{text}); }
void ProcessLogBuilder::nvml_sample(const format::NvmlSamplePayload& sample) {
  file.record(sample);
}

void ProcessLogBuilder::end(format::EndHow how, int64_t status, uint64_t last_seq,
                            uint64_t time_delta_ns, bool cuda_used) {
  file.record(format::EndPayload{how, status, last_seq, time_delta_ns, cuda_used});
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

// A small in-memory log writer for the analyzer's tests: frames records with framing.h (chunks,
// ChunkEnd, seals, big and small headers), as the recorder does, and encodes payloads with
// codec.h. Deliberately simple: it builds whole files in memory and can also write the damaged
// shapes tests need.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/log/records.h"
#include "gmemhook/api_table.h"
#include "gmemhook/codec.h"
#include "gmemhook/format.h"

namespace gmemhook::test_logs {

using Bytes = std::vector<uint8_t>;

// A payload as codec.h encodes it for the recorder.
template <class Payload>
Bytes encoded(const Payload& p) {
  Bytes out(format::payload_size(p));
  format::encode(out.data(), p);
  return out;
}

// One log file: header plus records, laid out in chunks.
class LogFile {
 public:
  LogFile(format::FileKind kind, uint32_t chunk_size, uint32_t pid, uint64_t tid,
          uint64_t start_ns);

  // Appends a record; ends the current chunk first (with ChunkEnd when there is room for its
  // header) when the record would cross the boundary.
  void record(format::RecordType type, std::span<const uint8_t> payload);
  // Appends a record whose payload codec.h encodes, as the recorder does.
  template <class Payload>
  void record(const Payload& p) {
    record(Payload::kType, encoded(p));
  }
  // Appends a record header claiming `payload_len` bytes followed by `payload`, unchecked.
  void raw_record(uint8_t type, uint32_t payload_len, std::span<const uint8_t> payload);
  void raw(std::span<const uint8_t> bytes) {
    bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
  }
  // Pads with zeros up to the next chunk boundary, as a writer's mapping would be: the last
  // chunk stays unsealed, like a live writer's.
  void pad_to_chunk();
  // Ends the file as a writer's finish() that cuts it: zeros to a multiple of 8 bytes from the
  // chunk's start, then the chunk's seal (format.h, "Chunk seals").
  void seal_cut();

  format::FileHeader& header();
  Bytes& bytes() { return bytes_; }
  const Bytes& bytes() const { return bytes_; }
  uint32_t chunk_size() const { return chunk_size_; }

 private:
  uint32_t chunk_size_;
  Bytes bytes_;
};

// Seals the last chunk of a finished file's bytes, as LogFile::seal_cut does.
void seal_file_end(Bytes& bytes, uint32_t chunk_size);

class ThreadLogBuilder {
 public:
  ThreadLogBuilder(uint32_t pid, uint64_t tid, uint64_t start_ns, uint32_t chunk_size = 4096);

  // Interns a stack; returns its id (1, 2, 3 ...).
  uint32_t stack(const std::vector<uint64_t>& frames,
                 const std::vector<analysis::PyFrameRef>& python = {});
  // Describes a code object; returns its id (1, 2, 3 ...), which `code.id` is replaced with.
  uint32_t py_code(analysis::PyCode code);
  void event(const format::Event& ev);
  void note(std::string_view text);

  LogFile file;

 private:
  format::EventDeltas deltas_;
  uint32_t stacks_ = 0;
  uint32_t py_codes_ = 0;
};

// The payload of a Stack or PyCode record as the recorder writes it.
Bytes stack_payload(uint32_t id, const std::vector<uint64_t>& frames,
                    const std::vector<analysis::PyFrameRef>& python);
Bytes py_code_payload(const analysis::PyCode& code);

class ProcessLogBuilder {
 public:
  ProcessLogBuilder(uint32_t pid, uint64_t start_ns, uint32_t chunk_size = 4096);

  void info(const analysis::ProcessInfo& p);
  void modules_begin(uint64_t seq, uint64_t count);
  void module(const analysis::Module& m);
  // A whole snapshot: ModulesBegin and its Module records.
  void snapshot(uint64_t seq, const std::vector<analysis::Module>& modules);
  void note(std::string_view text);
  void nvml_sample(const format::NvmlSamplePayload& sample);
  void end(format::EndHow how, int64_t status, uint64_t last_seq, uint64_t time_delta_ns,
           bool cuda_used);

  LogFile file;
};

// A convenient event: api, seq, time, optional fields set by the caller afterwards.
format::Event make_event(format::ApiId api, uint64_t seq, uint64_t time_ns, uint32_t stack_id = 0);

// A fresh empty directory under the system temp dir, removed by the caller (or left for a
// post-mortem when a test fails).
std::filesystem::path make_temp_dir(std::string_view tag);
void write_file(const std::filesystem::path& path, std::span<const uint8_t> bytes);

}  // namespace gmemhook::test_logs

// Record framing and file-header checks for one log file.
#include "analyzer/log/record_cursor.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "analyzer/log/read_error.h"
#include "gmemhook/crc32c.h"

namespace gmemhook::analysis {

using format::RecordType;

// The format is little-endian and the reader copies integers straight out of the file.
static_assert(std::endian::native == std::endian::little);

namespace {

bool is_known_type(uint8_t t, uint16_t version) {
  if (format::is_event_type(t, version)) return true;
  if (t == static_cast<uint8_t>(RecordType::Event)) return false;  // version 8 has heads
  switch (static_cast<RecordType>(t)) {
    case RecordType::Event:
    case RecordType::End:
    case RecordType::ModulesBegin:
    case RecordType::NvmlSample:
    case RecordType::ChunkEnd:
    case RecordType::Stack:
    case RecordType::PyCode:
    case RecordType::ProcessInfo:
    case RecordType::Module:
    case RecordType::Note:
      return true;
  }
  return false;
}

const char* kind_name(uint16_t kind) {
  switch (static_cast<format::FileKind>(kind)) {
    case format::FileKind::Process:
      return "process file";
    case format::FileKind::Thread:
      return "thread file";
  }
  return "unknown kind";
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::string record_type_name(uint8_t type) {
  if ((type & ~format::kEventHeadBits) == format::kEventTypeBase) return "event";
  switch (static_cast<RecordType>(type)) {
    case RecordType::Event:
      return "event";
    case RecordType::End:
      return "end";
    case RecordType::ModulesBegin:
      return "modules-begin";
    case RecordType::NvmlSample:
      return "nvml-sample";
    case RecordType::ChunkEnd:
      return "chunk-end";
    case RecordType::Stack:
      return "stack";
    case RecordType::PyCode:
      return "py-code";
    case RecordType::ProcessInfo:
      return "process-info";
    case RecordType::Module:
      return "module";
    case RecordType::Note:
      return "note";
  }
  return "type " + hex(type);
}

std::string a_record(uint8_t type) {
  std::string name = record_type_name(type);
  bool vowel = std::string_view("aeiou").find(name[0]) != std::string_view::npos;
  return (vowel ? "an " : "a ") + name + " record";
}

std::optional<format::FileHeader> read_file_header(const LogBytes& file,
                                                   format::FileKind expected) {
  auto bytes = file.bytes();
  if (bytes.empty()) return std::nullopt;
  format::FileHeader h;
  if (bytes.size() < sizeof h) {
    bool all_zero = true;
    for (uint8_t b : bytes) all_zero = all_zero && b == 0;
    if (all_zero) return std::nullopt;
    throw ReadError(file.name(), 0,
                    "expected a " + std::to_string(sizeof h) + "-byte file header, the file has " +
                        std::to_string(bytes.size()) + " bytes");
  }
  std::memcpy(&h, bytes.data(), sizeof h);
  static constexpr uint8_t kZero[sizeof h] = {};
  if (std::memcmp(&h, kZero, sizeof h) == 0) return std::nullopt;

  if (std::memcmp(h.magic, format::kMagic, sizeof h.magic) != 0)
    throw ReadError(file.name(), 0, "expected magic \"GMEMHOOK\": not a gmemhook log");
  if (h.version < format::kOldestReadableVersion || h.version > format::kFormatVersion)
    throw ReadError(file.name(), offsetof(format::FileHeader, version),
                    "was written by format version " + std::to_string(h.version) +
                        "; this gmemhook reads versions " +
                        std::to_string(format::kOldestReadableVersion) + " to " +
                        std::to_string(format::kFormatVersion));
  if (h.kind != static_cast<uint16_t>(expected))
    throw ReadError(file.name(), offsetof(format::FileHeader, kind),
                    std::string("expected a ") + kind_name(static_cast<uint16_t>(expected)) +
                        ", the header says " + kind_name(h.kind) + " (" + std::to_string(h.kind) +
                        ")");
  if (h.chunk_size < format::kMinChunkSize || h.chunk_size > format::kMaxChunkSize ||
      !std::has_single_bit(h.chunk_size))
    throw ReadError(file.name(), offsetof(format::FileHeader, chunk_size),
                    "expected a chunk size that is a power of two in [" +
                        std::to_string(format::kMinChunkSize) + ", " +
                        std::to_string(format::kMaxChunkSize) + "], got " +
                        std::to_string(h.chunk_size));
  if (h.version < 6) h.max_chunk_size = 0;  // a reserved field then, never read
  if (h.max_chunk_size != 0 &&
      (h.max_chunk_size < h.chunk_size || h.max_chunk_size > format::kMaxChunkSize ||
       !std::has_single_bit(h.max_chunk_size)))
    throw ReadError(file.name(), offsetof(format::FileHeader, max_chunk_size),
                    "expected a largest chunk size that is 0 or a power of two in [" +
                        std::to_string(h.chunk_size) + ", " +
                        std::to_string(format::kMaxChunkSize) + "], got " +
                        std::to_string(h.max_chunk_size));
  return h;
}

RecordCursor::RecordCursor(const LogBytes& file, const format::FileHeader& header)
    : file_(&file),
      data_(file.bytes().data()),
      chunks_(format::ChunkGeometry::of(header)),
      version_(header.version),
      pos_(sizeof(format::FileHeader)) {}

void RecordCursor::rewind() {
  pos_ = sizeof(format::FileHeader);
  end_ = StreamEnd::NotYet;
  chunk_start_ = 1;
  chunk_end_ = 0;
  unsealed_start_ = UINT64_MAX;
  quick_end_ = 0;
}

std::optional<UnsealedChunk> RecordCursor::unsealed_chunk() const {
  // pos_ moves only past records: beyond the chunk's first record slot, some were read.
  const uint64_t first = std::max<uint64_t>(unsealed_start_, sizeof(format::FileHeader));
  if (unsealed_start_ == UINT64_MAX || pos_ <= first) return std::nullopt;
  // A ChunkEnd moves pos_ to the chunk's end, which a cut file may not reach.
  const uint64_t end = std::min(chunks_.end_of(unsealed_start_), file_->size());
  return UnsealedChunk{unsealed_start_, std::min(pos_, end) - first};
}

bool RecordCursor::damaged_chunk(const std::string& why) {
  const uint64_t bytes = std::min<uint64_t>(chunk_end_, file_->size()) - chunk_start_;
  damage_ = {{file_->name(), chunk_start_,
              "chunk at offset " + std::to_string(chunk_start_) + " (" + std::to_string(bytes) +
                  " bytes) is damaged: " + why + "; not read"},
             bytes};
  end_ = StreamEnd::DamagedChunk;
  quick_end_ = 0;
  return false;
}

bool RecordCursor::enter_chunk() {
  chunk_start_ = chunks_.start_of(pos_);
  chunk_end_ = chunks_.end_of(pos_);
  area_end_ = chunk_end_;
  const uint8_t* data = file_->bytes().data();
  const uint64_t size = file_->size();
  const uint64_t present_end = std::min<uint64_t>(chunk_end_, size);
  const uint64_t present = present_end - chunk_start_;
  const bool full = present_end == chunk_end_;
  const bool seal_fits = present >= format::kSealSize && present % 8 == 0;
  auto load_seal = [&](uint64_t at) {
    uint64_t v;
    if (live_ && reinterpret_cast<uintptr_t>(data + at) % 8 == 0)
      v = __atomic_load_n(reinterpret_cast<const uint64_t*>(data + at), __ATOMIC_ACQUIRE);
    else
      std::memcpy(&v, data + at, sizeof v);
    return v;
  };
  const uint64_t at = present_end - format::kSealSize;
  const uint64_t seal = seal_fits ? load_seal(at) : 0;
  if (version_ < format::kFirstSealedVersion) {
    // A version-7 file whose version field was damaged would otherwise be read unchecked.
    if (seal >> 32 == format::kSealMarker)
      damage(offsetof(format::FileHeader, version),
             "the header says format version " + std::to_string(version_) +
                 ", but its chunks end in version-7 seals: the header is damaged");
    return true;
  }
  area_end_ = chunk_end_ - format::kSealSize;
  if (!seal_fits) return unchecked();  // only a cut copy ends this way: no seal to check
  const uint32_t marker = static_cast<uint32_t>(seal >> 32);
  if (marker == format::kSealMarker) {
    const uint32_t stored = static_cast<uint32_t>(seal);
    const uint32_t computed = format::crc32c(data + chunk_start_, at - chunk_start_);
    if (stored != computed)
      return damaged_chunk("its seal at offset " + std::to_string(at) + " says CRC32C " +
                           hex(stored) + ", its bytes give " + hex(computed));
    area_end_ = at;
    return true;
  }
  if (full) {
    // A full chunk's seal slot holds zeros until the writer seals it, then a whole seal.
    if (seal != 0)
      return damaged_chunk("its seal at offset " + std::to_string(at) + " is neither empty nor a seal");
    // The writer seals a chunk before it allocates the next one.
    if (!live_ && size > chunk_end_)
      return damaged_chunk("it has no seal, yet a later chunk follows it");
    return unchecked();
  }
  // A cut last chunk ends in its seal, a cut copy in whatever bytes were there: a marker one or
  // two bits away from the real one is a damaged seal, not chance.
  if (std::popcount(marker ^ format::kSealMarker) <= 2)
    return damaged_chunk("its seal at offset " + std::to_string(at) + " is damaged");
  return unchecked();
}

bool RecordCursor::unchecked() {
  unsealed_start_ = chunk_start_;
  return true;
}

void RecordCursor::damage(uint64_t offset, const std::string& expected) const {
  throw ReadError(file_->name(), offset, expected);
}

bool RecordCursor::next(Record* out) {
  if (end_ != StreamEnd::NotYet) return false;
  const uint8_t* data = file_->bytes().data();
  const uint64_t size = file_->size();
  for (;;) {
    if (pos_ >= size) {
      end_ = StreamEnd::EndOfFile;
      return false;
    }
    if ((pos_ < chunk_start_ || pos_ >= chunk_end_) && !enter_chunk()) return false;
    const uint64_t chunk_end = area_end_;  // records end here; the next chunk at chunk_end_
    data_ = data;
    quick_end_ = live_ || version_ < format::kFirstHeadVersion ? 0 : std::min(size, chunk_end);
    // A record that ends one byte before a boundary leaves no room for even a ChunkEnd header;
    // the writer then simply continues in the next chunk.
    if (chunk_end < pos_ + format::kSmallHeaderSize) {
      pos_ = chunk_end_;
      continue;
    }
    const uint64_t avail = std::min(size, chunk_end) - pos_;
    if (avail < format::kSmallHeaderSize) {
      end_ = data[pos_] == 0 || live_ ? StreamEnd::NoMoreData : StreamEnd::TruncatedTail;
      return false;
    }
    uint16_t h;
    std::memcpy(&h, data + pos_, sizeof h);
    if (h == 0) {
      end_ = StreamEnd::NoMoreData;
      return false;
    }
    const uint8_t type = static_cast<uint8_t>(h & 0xff);
    const uint8_t small_len = static_cast<uint8_t>(h >> 8);
    if (live_) {
      // Half a header: the other byte is still on its way (see set_live). Every small record
      // but ChunkEnd has a payload; a big record's length byte is always 0.
      const bool torn = type == 0 || (!format::is_big(type) && small_len == 0 &&
                                      type != static_cast<uint8_t>(RecordType::ChunkEnd));
      if (torn) {
        end_ = StreamEnd::NoMoreData;
        return false;
      }
      // The payload was stored before the header: read it only after the header.
      std::atomic_thread_fence(std::memory_order_acquire);
    }
    if (type == static_cast<uint8_t>(RecordType::ChunkEnd)) {
      pos_ = chunk_end_;
      continue;
    }
    if (!is_known_type(type, version_))
      damage(pos_, "expected a record header, found unknown record type " + hex(type));

    uint64_t header_size = format::kSmallHeaderSize;
    uint64_t payload_size = small_len;
    if (format::is_big(type)) {
      if (small_len != 0)
        damage(pos_, record_type_name(type) +
                         " record: expected 0 in the header's length byte, got " +
                         std::to_string(small_len));
      header_size = format::kBigHeaderSize;
      if (chunk_end - pos_ < header_size)
        damage(pos_, record_type_name(type) + " record: header crosses the chunk boundary at " +
                         std::to_string(chunk_end));
      if (avail < header_size) {
        end_ = live_ ? StreamEnd::NoMoreData : StreamEnd::TruncatedTail;
        return false;
      }
      uint32_t n;
      std::memcpy(&n, data + pos_ + format::kSmallHeaderSize, sizeof n);
      if (n > format::kMaxBigRecord)
        damage(pos_, record_type_name(type) + " record: expected a payload of at most " +
                         std::to_string(format::kMaxBigRecord) + " bytes, the header says " +
                         std::to_string(n));
      payload_size = n;
    }
    const uint64_t record_end = pos_ + header_size + payload_size;
    if (record_end > chunk_end)
      damage(pos_, record_type_name(type) + " record: expected to end by the chunk boundary at " +
                       std::to_string(chunk_end) + ", its " + std::to_string(payload_size) +
                       "-byte payload ends at " + std::to_string(record_end));
    if (record_end > size) {
      end_ = live_ ? StreamEnd::NoMoreData : StreamEnd::TruncatedTail;
      return false;
    }
    *out = Record{type, pos_, {data + pos_ + header_size, static_cast<size_t>(payload_size)}};
    pos_ = record_end;
    return true;
  }
}

}  // namespace gmemhook::analysis

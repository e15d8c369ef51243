// Walks the record framing of one log file (format.h, "Record framing"): file header, small and
// big records, ChunkEnd, and the zero header that marks the end of committed data. It knows
// nothing about what records mean; process_file and thread_file_reader decode them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "analyzer/log/log_bytes.h"
#include "analyzer/log/read_error.h"
#include "gmemhook/format.h"

namespace gmemhook::analysis {

// One framed record; payload points into the file's bytes.
struct Record {
  uint8_t type = 0;
  uint64_t offset = 0;  // of the record header, for messages
  std::span<const uint8_t> payload;
};

// A chunk not read because its seal did not match (format.h, "Chunk seals").
struct ChunkDamage {
  ReadWarning warning;  // file, the chunk's offset, why
  uint64_t bytes = 0;   // of the chunk, as far as the file holds it
};

// Records read from a chunk that had no seal (format.h, "Chunk seals"): written until the process
// ended (a thread still running at exit, a process killed) or still being written, and read
// without a check. In a finished log only a file's last chunk can be one.
struct UnsealedChunk {
  uint64_t offset = 0;  // of the chunk
  uint64_t bytes = 0;   // of records read from it
};

// Why a file's stream of records stopped.
enum class StreamEnd {
  NotYet,         // next() has not returned false yet
  NoMoreData,     // a zero header: the writer had not committed anything further
  EndOfFile,      // the file ended exactly between records
  TruncatedTail,  // the file ends inside a record: the copy or the disk lost its tail
  DamagedChunk,   // a chunk's seal does not match its bytes (format.h, "Chunk seals"): it is not
                  // read; skip_damaged_chunk() goes on at the next chunk
};

// Reads and checks the 64-byte header. Returns nullopt when the file holds nothing at all (empty,
// or an all-zero header: created but killed before the header was stored). Throws ReadError on a
// wrong magic, version, kind or chunk size.
std::optional<format::FileHeader> read_file_header(const LogBytes& file, format::FileKind expected);

// Human name of a record type for messages ("event", "stack", ...).
std::string record_type_name(uint8_t type);
// The same with its article, for "found ..." messages: "an event record", "a stack record".
std::string a_record(uint8_t type);

class RecordCursor {
 public:
  // `header` must be one that read_file_header accepted.
  RecordCursor(const LogBytes& file, const format::FileHeader& header);

  // The next committed record, or false when the stream ended (see end()). Throws ReadError on
  // damage: unknown types, bad big-record lengths, records crossing a chunk boundary. A sealed
  // chunk whose checksum fails stops the stream instead (DamagedChunk): the records before it
  // were sound, and damage() says where and why.
  bool next(Record* out);
  // next() for the record nearly every call meets, inline: an event record with a small header,
  // lying wholly inside a chunk already entered and checked, and not followed live. For anything
  // else (another record, the chunk's last 257 bytes, the end) it returns false and moves
  // nothing: next() then reads that record, so both give the same records and errors. (A call
  // per record and its checks were a tenth of `gmemhook summary`.)
  bool next_event(Record* out) {
    if (pos_ + format::kSmallHeaderSize + format::kMaxSmallPayload > quick_end_) return false;
    uint16_t h;
    __builtin_memcpy(&h, data_ + pos_, sizeof h);
    const uint8_t type = static_cast<uint8_t>(h & 0xff);
    const uint8_t length = static_cast<uint8_t>(h >> 8);
    // Only version-8 files come here (quick_end_ stays 0 for older ones): an event's type is
    // kEventTypeBase | head, which no big record's type is, with no test of the version.
    if ((type & ~format::kEventHeadBits) != format::kEventTypeBase || length == 0) return false;
    *out = Record{type, pos_, {data_ + pos_ + format::kSmallHeaderSize, length}};
    pos_ += format::kSmallHeaderSize + length;
    return true;
  }

  StreamEnd end() const { return end_; }
  // After DamagedChunk: "chunk at offset 4096 (4096 bytes) is damaged: ...", naming the file.
  const ChunkDamage& damage() const { return damage_; }
  // After DamagedChunk: the stream goes on at the next chunk boundary, where records start
  // afresh (a record never crosses one). What the records there mean may depend on the lost ones:
  // that is the caller's to judge.
  void skip_damaged_chunk() {
    pos_ = chunk_end_;
    end_ = StreamEnd::NotYet;
    quick_end_ = 0;
  }
  // After next() threw ReadError `e`: the chunk it was reading is taken as damaged instead
  // (DamagedChunk, damage() says why), for a caller that reads on past damage anyway.
  void declare_damaged(const ReadError& e) {
    damaged_chunk("at offset " + std::to_string(e.offset().value_or(pos_)) + ", " + e.expected());
  }
  // The last chunk read so far whose records could not be checked against a seal, when it held
  // any (format version 7 on; older files have no seals at all).
  std::optional<UnsealedChunk> unsealed_chunk() const;
  // Where the next record would start; after the end, where the committed data stops.
  uint64_t offset() const { return pos_; }
  const LogBytes& file() const { return *file_; }
  void rewind();

  // Following a file still being written (gmemhook top). A writer stores a record's 2-byte header
  // last, and a store that straddles a cache line may become visible one byte at a time: live,
  // a header with a zero byte where the format never has one is a record not yet committed, not
  // damage, and so is a record that runs past the mapped bytes.
  void set_live(bool live) {
    live_ = live;
    quick_end_ = 0;
  }
  // After the stream ended (next() returned false), looks again from where it stopped: the writer
  // may have committed more since.
  void resume() { end_ = StreamEnd::NotYet; }

 private:
  [[noreturn]] void damage(uint64_t offset, const std::string& expected) const;
  // Called when pos_ enters a chunk: finds its record area and checks its seal. False (and the
  // stream ends, DamagedChunk) when the seal says the chunk is damaged.
  bool enter_chunk();
  bool damaged_chunk(const std::string& why);
  // Called when the chunk entered has no seal to check its records against: notes it, true.
  bool unchecked();

  const LogBytes* file_;
  const uint8_t* data_;  // file_'s bytes, for next_event (a LogBytes mapped again moves them)
  // next_event reads records that end by here: the end of the checked records of the chunk
  // entered last, or of the file if sooner; 0 when next() must read every record (live, a file
  // before version 8, after damage, or before a chunk is entered).
  uint64_t quick_end_ = 0;
  format::ChunkGeometry chunks_;
  uint16_t version_;
  uint64_t chunk_start_ = 1;  // the chunk pos_ is in (none yet: start > end)
  uint64_t chunk_end_ = 0;
  uint64_t area_end_ = 0;  // where its records end: its seal, if any, follows
  ChunkDamage damage_;
  uint64_t unsealed_start_ = UINT64_MAX;  // the last chunk entered without a seal check
  uint64_t pos_;
  StreamEnd end_ = StreamEnd::NotYet;
  bool live_ = false;
};

}  // namespace gmemhook::analysis

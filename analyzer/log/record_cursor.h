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

// Why a file's stream of records stopped.
enum class StreamEnd {
  NotYet,         // next() has not returned false yet
  NoMoreData,     // a zero header: the writer had not committed anything further
  EndOfFile,      // the file ended exactly between records
  TruncatedTail,  // the file ends inside a record: the copy or the disk lost its tail
  DamagedChunk,   // a chunk's seal does not match its bytes (format.h, "Chunk seals"): neither
                  // it nor the rest of the file is read (events are deltas of the ones before)
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
  // chunk whose checksum fails ends the stream instead (DamagedChunk): the records before it
  // were sound, and damage_warning() says where and why.
  bool next(Record* out);

  StreamEnd end() const { return end_; }
  // After DamagedChunk: "chunk at offset 4096 (4096 bytes) is damaged: ...", naming the file.
  const ReadWarning& damage_warning() const { return damage_; }
  // Where the next record would start; after the end, where the committed data stops.
  uint64_t offset() const { return pos_; }
  const LogBytes& file() const { return *file_; }
  void rewind();

  // Following a file still being written (gmemhook top). A writer stores a record's 2-byte header
  // last, and a store that straddles a cache line may become visible one byte at a time: live,
  // a header with a zero byte where the format never has one is a record not yet committed, not
  // damage, and so is a record that runs past the mapped bytes.
  void set_live(bool live) { live_ = live; }
  // After the stream ended (next() returned false), looks again from where it stopped: the writer
  // may have committed more since.
  void resume() { end_ = StreamEnd::NotYet; }

 private:
  [[noreturn]] void damage(uint64_t offset, const std::string& expected) const;
  // Called when pos_ enters a chunk: finds its record area and checks its seal. False (and the
  // stream ends, DamagedChunk) when the seal says the chunk is damaged.
  bool enter_chunk();
  bool damaged_chunk(const std::string& why);

  const LogBytes* file_;
  format::ChunkGeometry chunks_;
  uint16_t version_;
  uint64_t chunk_start_ = 1;  // the chunk pos_ is in (none yet: start > end)
  uint64_t chunk_end_ = 0;
  uint64_t area_end_ = 0;  // where its records end: its seal, if any, follows
  ReadWarning damage_;
  uint64_t pos_;
  StreamEnd end_ = StreamEnd::NotYet;
  bool live_ = false;
};

}  // namespace gmemhook::analysis

// Writes the log's framing (format.h: the file header, record headers, ChunkEnd, chunk seals) into
// memory the caller provides: the one writer of those bytes, mirror of analyzer/log/record_cursor.
// The hook's LogFile, the tests' log builder and the analyzer bench all frame records through it.
// Safe inside a hook: no allocation, no exceptions, no library calls, only stores into the buffer.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "gmemhook/crc32c.h"
#include "gmemhook/format.h"

namespace gmemhook::format {

// --- File header -----------------------------------------------------------------------------

// Stores `h`, the header of a new file, at `out` (the file's offset 0), with the magic and
// today's version. Returns its size: where the first record goes.
inline size_t put_file_header(uint8_t* out, FileHeader h) {
  __builtin_memcpy(h.magic, kMagic, sizeof h.magic);
  h.version = kFormatVersion;
  __builtin_memcpy(out, &h, sizeof h);
  return sizeof h;
}

// --- Records ---------------------------------------------------------------------------------

inline constexpr size_t record_header_size(uint8_t type) {
  return is_big(type) ? kBigHeaderSize : kSmallHeaderSize;
}

// The 2-byte header of a small record with an n-byte payload (n <= kMaxSmallPayload).
inline constexpr uint16_t small_record_header(uint8_t type, size_t n) {
  return static_cast<uint16_t>(type | n << 8);
}

// Stores a record's 2-byte header after everything before it: the commit point. Two observers:
// the page cache after the process is gone (a dying process never undoes a store it has
// executed, so program order is enough), and `gmemhook top` reading the file while it is written
// (record_cursor.cpp's acquire fence after the header). The release fence pairs with that: on
// x86-64 it is only a compiler barrier (stores are not reordered with stores), on ARM a `dmb`,
// without which the header could become visible before the payload.
inline void commit_record_header(uint8_t* at, uint16_t header) {
  std::atomic_thread_fence(std::memory_order_release);
  __builtin_memcpy(at, &header, sizeof header);
}

// Frames the record at `record` whose n-byte payload is already stored right after its header,
// at record + record_header_size(type): a big record's length first, then the header (the
// commit). Returns the header's size. A small record keeps n's low byte, unchecked.
inline size_t put_record_header(uint8_t* record, uint8_t type, uint32_t n) {
  if (!is_big(type)) {
    commit_record_header(record, small_record_header(type, n));
    return kSmallHeaderSize;
  }
  __builtin_memcpy(record + kSmallHeaderSize, &n, sizeof n);
  commit_record_header(record, type);
  return kBigHeaderSize;
}

// Stores a whole record at `record`: the payload, then its framing. Returns the record's size.
inline size_t put_record(uint8_t* record, uint8_t type, const void* payload, uint32_t n) {
  __builtin_memcpy(record + record_header_size(type), payload, n);
  return put_record_header(record, type, n) + n;
}

// --- Chunks ----------------------------------------------------------------------------------

// Where the records of a chunk of `chunk_len` bytes must end: its seal takes the last 8 bytes.
inline constexpr size_t record_area(size_t chunk_len) { return chunk_len - kSealSize; }

// Seals the chunk at `chunk` (8-byte aligned) over its first `at` bytes (a multiple of 8), with
// one aligned 8-byte store at chunk + at after the bytes it covers: a live reader (gmemhook top)
// sees no seal or all of it, and sees the chunk complete when it sees the seal.
inline void seal_chunk(uint8_t* chunk, size_t at) {
  const uint64_t seal = seal_value(crc32c(chunk, at));
  __atomic_store_n(reinterpret_cast<uint64_t*>(chunk + at), seal, __ATOMIC_RELEASE);
}

// Ends the chunk of `chunk_len` bytes at `chunk` whose records end at `pos` (the bytes after them
// zero): a ChunkEnd where its header fits in the record area (else the reader goes on at the next
// chunk by itself), then the seal in the chunk's last 8 bytes.
inline void end_chunk(uint8_t* chunk, size_t pos, size_t chunk_len) {
  const size_t area = record_area(chunk_len);
  if (pos + kSmallHeaderSize <= area)
    commit_record_header(chunk + pos, static_cast<uint16_t>(RecordType::ChunkEnd));
  seal_chunk(chunk, area);
}

// Where the seal of a file's last chunk goes when the file is cut to its records, which end at
// chunk offset `pos`: the next multiple of 8 (zeros up to it). The file ends 8 bytes later.
inline constexpr size_t cut_seal_offset(size_t pos) { return (pos + 7) & ~size_t{7}; }

}  // namespace gmemhook::format

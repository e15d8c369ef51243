// One append-only log file written through MAP_SHARED chunks, so every committed record survives
// the process being killed at any instant (the page cache outlives the process).
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>

#include "gmemhook/format.h"

namespace gmemhook {

class LogFile {
 public:
  // Creates `dir/name` exclusively (0600, never through a symlink) and writes its header.
  // Returns false (and leaves the object unusable) when the file can't be created.
  bool create(const char* dir, const char* name, format::FileKind kind, uint64_t tid,
              uint32_t chunk_size, uint64_t start_monotonic_ns);

  // Appends one record. The payload is copied first and the header stored last: that store is
  // the commit. Returns false once the file can't grow (e.g. disk full); the log is then dead
  // and every later append is a cheap no-op.
  bool append(format::RecordType type, const void* payload, size_t n);

  // Unmaps the current chunk. Committed data stays in the file.
  void close();

  bool alive() const { return chunk_ != nullptr; }
  const char* path() const { return path_; }

 private:
  bool map_chunk(uint64_t index);

  char path_[PATH_MAX] = {};
  uint8_t* chunk_ = nullptr;
  uint64_t chunk_index_ = 0;
  size_t pos_ = 0;  // offset of the next record inside the current chunk
  uint32_t chunk_size_ = 0;
};

}  // namespace gmemhook

// One append-only log file written through MAP_SHARED chunks, so every committed record survives
// the process being killed at any instant (the page cache outlives the process).
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>

#include "gmemhook/codec.h"
#include "gmemhook/framing.h"
#include "interposer/log/log_pages.h"

namespace gmemhook {

class LogFile {
 public:
  // How big chunks are: the first `first` bytes, doubling up to `max` (format.h, ChunkGeometry).
  struct Chunks {
    uint32_t first;
    uint32_t max;
  };

  // Creates `name` in the directory open as `dir_fd` exclusively (0600, never through a
  // symlink) and writes its header; `dir` is that directory's path, for messages only. Every
  // later open is relative to `dir_fd` too: a directory renamed and replaced by a symlink after
  // it was opened cannot redirect the file. Returns false (and leaves the object
  // unusable) when the file can't be created; error() then says why (EEXIST only when the name
  // was taken), and no empty file is left behind.
  bool create(int dir_fd, const char* dir, const char* name, format::FileKind kind, uint64_t tid,
              Chunks chunks, uint64_t start_monotonic_ns);

  // Appends one record. The payload is copied first and the header stored last: that store is
  // the commit. Returns false once the file can't grow (e.g. disk full); the log is then dead
  // and every later append is a cheap no-op.
  bool append(format::RecordType type, const void* payload, size_t n);

  // Appends one record, its payload encoded by codec.h straight into the mapping: its exact size
  // is reserved first and the header stored last, as above. Returns false as above.
  template <class Payload>
  bool append(const Payload& p) {
    size_t n = format::payload_size(p);
    uint8_t* at = reserve(Payload::kType, n);
    if (!at) return false;
    format::encode(at, p);
    commit(Payload::kType, at, n);
    return true;
  }

  // Keeps the last `n` bytes of every chunk's record area for the file's final record (see
  // append_final): ordinary records end a chunk before them. process.gmh keeps room for its End
  // record, which says how the process ended and what was lost: a file that cannot grow (disk
  // full, ulimit -f) stops taking ordinary records but still takes that one.
  void keep_for_final(size_t n) {
    kept_ = n;
    set_in_place_end();
  }
  // Appends the file's final record, into the kept room when the next chunk cannot be had (then
  // over the ChunkEnd of the chunk sealed before the file failed to grow: until seal() seals it
  // again, a reader finds that chunk's seal wrong and reports it damaged — only on that path).
  template <class Payload>
  bool append_final(const Payload& p) {
    final_ = true;
    const bool ok = append(p);
    final_ = false;
    return ok;
  }
  // Whether an ordinary record has failed because the file could not grow while its current
  // chunk stayed open for the final record.
  bool full() const { return full_; }

  // Appends one event, which `encode(uint8_t* out)` encodes (at most format::kMaxEventPayload
  // bytes) and returns as a format::EncodedEvent: straight into the mapping while the chunk has
  // room for the largest event and its pages are prefaulted (one compare), else through a buffer
  // and append() above. The same bytes land in the same place either way; copying each event in
  // would be a tenth of recording it. Inline: called out of line (GCC's choice when the recorder's
  // bodies hold more), the encoder's lambda reaches it through a frame of captures stored and
  // loaded again, ~45 instructions an event.
  template <class Encode>
  __attribute__((always_inline)) bool append_event(Encode encode) {
    static_assert(format::kMaxEventPayload <= format::kMaxSmallPayload);
    static_assert(!format::is_big(format::kEventTypeBase | format::kEventHeadBits));
    if (pos_ < in_place_end_ || prefault_ahead()) [[likely]] {
      uint8_t* at = chunk_ + pos_ + format::kSmallHeaderSize;
      const format::EncodedEvent e = encode(at);
      commit_small(e.type, at, e.size);
      return true;
    }
    uint8_t buf[format::kMaxEventPayload];
    const format::EncodedEvent e = encode(buf);
    return append(e.type, buf, e.size);
  }

  // Unmaps the current chunk, unsealed (a fork child's copy of its parent's file). Committed
  // data stays in the file.
  void close();
  // Seals the current chunk (format.h, "Chunk seals") and unmaps it; the next append, if any,
  // maps the next chunk. For a log that may still be written to, e.g. at exit.
  void seal();
  // Seals and closes the file, first cutting it to the bytes committed when the unused rest of
  // its last chunk is larger than a first chunk: a finished thread's log holds about what it
  // recorded.
  void finish();

  bool alive() const { return chunk_ != nullptr || next_chunk_start_ != 0; }
  const char* path() const { return path_; }
  // The errno of the failure that made the log unusable (0 while none). posix_fallocate returns
  // its error rather than setting errno, so errno itself can't be trusted after a failure.
  int error() const { return error_; }

 private:
  // Makes room for a record with an n-byte payload at pos_, ending the chunk first if it can't
  // hold it; returns where the payload goes, or nullptr when the record can never be written.
  uint8_t* reserve(format::RecordType type, size_t n);
  // Stores the length (big records) and then the header of the record whose payload reserve()
  // placed at `payload`.
  void commit(format::RecordType type, uint8_t* payload, size_t n);
  // commit() of a small record (every event is one), inline: no test of the type's size.
  void commit_small(format::RecordType type, uint8_t* payload, size_t n) {
    format::commit_record_header(payload - format::kSmallHeaderSize,
                                 format::small_record_header(static_cast<uint8_t>(type), n));
    pos_ += format::kSmallHeaderSize + n;
  }
  // Ends the current chunk with ChunkEnd and maps the next; false when a record of `need` bytes
  // (header included) could never fit a chunk, or the file can't grow.
  bool next_chunk(size_t need);
  // Maps the chunk that starts at file offset `start`, or returns nullptr and sets error_.
  uint8_t* map_chunk(uint64_t start, size_t len);
  // Makes the mapping at `m` the current chunk.
  void use_chunk(uint8_t* m, uint64_t start, size_t len);
  // Stores the seal of the current chunk at chunk offset `at` (a multiple of 8), covering the
  // bytes before it, and unmaps the chunk.
  void seal_at(size_t at);
  void unmap_chunk();
  // The end of the current chunk's record area: its seal lives after it.
  size_t record_area() const { return chunk_len_ - format::kSealSize; }
  // Where ordinary records end: before the room kept for the final record.
  // Where ordinary records end: before the room kept for the final record; nowhere once the file
  // could not grow (only the final record comes after that: a smaller record that still fitted
  // would go over the sealed chunk's ChunkEnd, after a module snapshot cut short).
  size_t ordinary_end() const { return full_ ? 0 : record_area() - kept_; }

  // Opens the file again (to map a chunk, to cut it).
  int reopen() const;

  // An event is written in place while pos_ < in_place_end_: the chunk has room for the largest
  // event and a ChunkEnd after it (as reserve() keeps), and the pages it may touch are
  // prefaulted. Writing a log page the first time through the MAP_SHARED mapping is a page
  // fault taken by the traced thread, one per ~700 events, and the kernel's work for a new page
  // (ext4's page_mkwrite, zeroing it: ~6 µs on the EPYC VM) stays even when prefaulted with
  // MADV_POPULATE_WRITE. So the "gmemhook-pages" thread (log_pages.h) prefaults the
  // next window of up to kThreadWindow bytes while the writer fills this one (one wake of the
  // thread a window: ~9 µs on the EPYC VM); the writer prefaults only kFirstPages itself where
  // no window was ready (a new chunk, a late or missing thread), and kPrefault at a time when
  // there is no thread. Only a hint: a page not prefaulted (other records, a kernel without
  // MADV_POPULATE_WRITE) is faulted in when written.
  static constexpr size_t kPrefault = 64u << 10;
  static constexpr size_t kThreadWindow = 256u << 10;
  static constexpr size_t kFirstPages = 16u << 10;
  // Called when an event has reached the end of the pages prefaulted so far: takes the window
  // the thread was asked for, or prefaults the next pages here, and asks for the next window.
  // Returns whether the event may now be written in place.
  bool prefault_ahead();
  // Asks the thread for the pages from chunk offset `from` to the end of their window.
  void request_pages(size_t from);
  // Before the chunk is unmapped or cut: the thread must be done with it (log_pages.h).
  void drop_page_request();
  void set_in_place_end();

  // What every event reads comes first (append_event, alive()): with the ThreadLog's own first
  // fields it fills one cache line (recorder.cpp); the 4 KiB path, read only on failures and
  // at the chunk's end, comes last (first, it would put these behind it, on a line of their own).
  uint8_t* chunk_ = nullptr;
  size_t pos_ = 0;                 // offset of the next record inside the current chunk
  size_t in_place_end_ = 0;        // see set_in_place_end()
  uint64_t next_chunk_start_ = 0;  // after seal(): where the next chunk goes (0 = none pending)
  uint64_t chunk_start_ = 0;       // file offset of the current chunk
  size_t chunk_len_ = 0;           // its size
  format::ChunkGeometry geometry_{};
  int error_ = 0;
  int dir_fd_ = -1;     // the directory it lives in; owned by process_log.cpp
  size_t kept_ = 0;     // keep_for_final()
  bool final_ = false;  // append_final() is appending
  bool full_ = false;   // the file could not grow; only the final record may still come
  size_t prefaulted_ = 0;     // chunk offset up to which pages are prefaulted (or asked for)
  PageRequest pages_;         // the window after prefaulted_ that the thread was asked for
  size_t requested_end_ = 0;  // where that window ends
  size_t name_at_ = 0;        // where the file's name starts in path_ (an offset: copies move)
  char path_[PATH_MAX] = {};

 public:
  // The bytes at the start of a LogFile that hold what every event reads.
  static constexpr size_t kEventFieldsBytes = 32;
};

}  // namespace gmemhook

// Chunked MAP_SHARED writer for the log format in include/gmemhook/format.h. Only system calls:
// it runs inside hooks and in fork children, where malloc and locks are off limits.
#include "interposer/log/log_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <type_traits>

#include "gmemhook/framing.h"
#include "interposer/base/config.h"
#include "interposer/base/event_time.h"
#include "interposer/base/text.h"

namespace gmemhook {

using format::RecordType;

namespace {
// GMEMHOOK_TEST_DISK_FULL_AFTER (config.h): counts chunk mappings process-wide.
std::atomic<long> g_chunks_mapped{0};
bool test_disk_full() {
  if (g_config.test_disk_full_after < 0) return false;
  return g_chunks_mapped.fetch_add(1, std::memory_order_relaxed) >= g_config.test_disk_full_after;
}

// Whether a file may grow to `end` bytes under the process's file size limit (ulimit -f). Growing
// past it, fallocate fails with EFBIG and the kernel also sends SIGXFSZ, whose default action
// kills the traced program: the hook must find out first. Read per chunk, since the program may
// change its limit (a system call, next to the four a chunk already costs).
bool within_file_size_limit(uint64_t end) {
  rlimit limit{};
  return getrlimit(RLIMIT_FSIZE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY ||
         end <= limit.rlim_cur;
}
}  // namespace

bool LogFile::create(int dir_fd, const char* dir, const char* name, format::FileKind kind,
                     uint64_t tid, Chunks chunks, uint64_t start_monotonic_ns) {
  static_assert(std::is_standard_layout_v<LogFile>);
  static_assert(offsetof(LogFile, next_chunk_start_) + sizeof next_chunk_start_ <=
                    kEventFieldsBytes &&
                offsetof(LogFile, chunk_) < kEventFieldsBytes &&
                offsetof(LogFile, pos_) < kEventFieldsBytes &&
                offsetof(LogFile, in_place_end_) < kEventFieldsBytes);
  FixedString<PATH_MAX> p;
  p.append(dir).append("/").append(name);
  if (p.truncated()) {
    error_ = ENAMETOOLONG;
    return false;
  }
  std::memcpy(path_, p.c_str(), p.size() + 1);
  name_at_ = p.size() - std::strlen(name);
  dir_fd_ = dir_fd;
  geometry_ = {chunks.first, chunks.max};

  int fd = openat(dir_fd_, path_ + name_at_, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    error_ = errno;
    return false;
  }
  ::close(fd);
  const size_t first_len = geometry_.end_of(0);
  uint8_t* first = map_chunk(0, first_len);
  if (!first) {
    unlinkat(dir_fd_, path_ + name_at_, 0);  // an empty file would only read as a thread that recorded nothing
    return false;
  }
  use_chunk(first, 0, first_len);

  timespec rt{};
  clock_gettime(CLOCK_REALTIME, &rt);
  const uint64_t realtime_ns = static_cast<uint64_t>(rt.tv_sec) * 1000000000ull + rt.tv_nsec;
  pos_ = format::put_file_header(chunk_, {.kind = static_cast<uint16_t>(kind),
                                          .chunk_size = chunks.first,
                                          .tid = tid,
                                          .start_monotonic_ns = start_monotonic_ns,
                                          .start_realtime_ns = realtime_ns,
                                          .pid = static_cast<uint32_t>(getpid()),
                                          .max_chunk_size = chunks.max,
                                          .time_step_ns = event_time_step_ns()});
  return true;
}

int LogFile::reopen() const { return openat(dir_fd_, path_ + name_at_, O_RDWR | O_NOFOLLOW | O_CLOEXEC); }

uint8_t* LogFile::map_chunk(uint64_t start, size_t len) {
  int fd = reopen();
  if (fd < 0) {
    error_ = errno;
    return nullptr;
  }
  off_t offset = static_cast<off_t>(start);
  // Reserve real blocks before touching the mapping: writing into a hole on a full disk would
  // raise SIGBUS in the traced program.
  int err = test_disk_full()                       ? ENOSPC
            : !within_file_size_limit(start + len) ? EFBIG
                                                   : posix_fallocate(fd, offset, static_cast<off_t>(len));
  void* m = MAP_FAILED;
  if (err == 0) {
    m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
    if (m == MAP_FAILED) err = errno;
  }
  ::close(fd);
  if (m == MAP_FAILED) {
    error_ = err;
    return nullptr;
  }
  // The first write into a new chunk faulted in one page and read ahead the next read_ahead_kb
  // of the file (8 MiB on the EPYC VM's disk: the whole chunk), zeroing each new page-cache
  // page on the traced thread: ~0.5 ms a 1 MiB chunk. Without read-ahead each page is made
  // when first touched, which the pages thread does ahead of the writer.
  if (len > kFirstPages && page_thread_usable()) madvise(m, len, MADV_RANDOM);
  return static_cast<uint8_t*>(m);
}

void LogFile::use_chunk(uint8_t* m, uint64_t start, size_t len) {
  chunk_ = m;
  chunk_start_ = start;
  chunk_len_ = len;
  pos_ = 0;
  prefaulted_ = 0;
  set_in_place_end();
}

void LogFile::set_in_place_end() {
  // The furthest an event writes: its header, kMaxEventPayload bytes (zeros past a shorter
  // payload), and reserve()'s room for a ChunkEnd after it.
  constexpr size_t kEvent = format::kSmallHeaderSize + format::kMaxEventPayload;
  const size_t room = chunk_ ? ordinary_end() : 0;
  const size_t end = prefaulted_ < room ? prefaulted_ : room;
  in_place_end_ =
      end > kEvent + format::kSmallHeaderSize ? end - kEvent - format::kSmallHeaderSize + 1 : 0;
}

__attribute__((noinline)) bool LogFile::prefault_ahead() {
  if (!chunk_ || full_) return false;
  // The window the thread was asked for is the writer's now: done, or still under way (the
  // thread is late: written anyway, a page faulted in while it is being populated is safe), or
  // cancelled (never begun: prefaulted below). A writer that went on past a late window has
  // prefaulted beyond it already.
  if (pages_.held() && finish_page_request(pages_, false) != PageRequestState::Cancelled &&
      requested_end_ > prefaulted_)
    prefaulted_ = requested_end_;
  set_in_place_end();
  if (pos_ < in_place_end_) {
    request_pages(prefaulted_);
    return true;
  }
  if (prefaulted_ >= chunk_len_) return false;
  // From where the writer is (a large record may have gone past what was prefaulted), on a
  // boundary of kFirstPages: a multiple of the page size, as madvise needs. The thread is asked
  // for the rest of the window first, so that it works while this thread does the first pages.
  const size_t writer_at = pos_ & ~(kFirstPages - 1);
  const size_t from = writer_at > prefaulted_ ? writer_at : prefaulted_;
  const size_t first_end = chunk_len_ - from > kFirstPages ? from + kFirstPages : chunk_len_;
  request_pages(first_end);
  const size_t window_end = (from & ~(kPrefault - 1)) + kPrefault;
  prefaulted_ = pages_.held() ? first_end : window_end < chunk_len_ ? window_end : chunk_len_;
  // Errors are ignored: the pages are then faulted in when written.
  madvise(chunk_ + from, prefaulted_ - from, MADV_POPULATE_WRITE);
  set_in_place_end();
  return pos_ < in_place_end_;
}

void LogFile::request_pages(size_t from) {
  if (pages_.held() || from >= chunk_len_) return;
  const size_t window_end = (from & ~(kThreadWindow - 1)) + kThreadWindow;
  const size_t to = window_end < chunk_len_ ? window_end : chunk_len_;
  pages_ = post_page_request(chunk_ + from, to - from);
  requested_end_ = to;
}

void LogFile::drop_page_request() {
  if (pages_.held()) finish_page_request(pages_, true);
}

void LogFile::unmap_chunk() {
  drop_page_request();
  uint8_t* old = chunk_;
  chunk_ = nullptr;
  set_in_place_end();
  munmap(old, chunk_len_);
}

void LogFile::seal_at(size_t at) {
  format::seal_chunk(chunk_, at);
  unmap_chunk();
}

// Out of line and cold: it runs once per chunk, append() once per event.
__attribute__((noinline, cold)) bool LogFile::next_chunk(size_t need) {
  const size_t room = need + format::kSmallHeaderSize + format::kSealSize;
  if (room > geometry_.max) return false;  // callers split large data
  // Chunks grow: a record too big for the next one ends that one too, unused, until one fits.
  do {
    // Sealed before the file grows: killed in between, the file ends in a sealed chunk (a chunk
    // without a seal that a later one follows reads as damaged).
    if (chunk_) format::end_chunk(chunk_, pos_, chunk_len_);  // else seal() has ended it already
    const uint64_t start = chunk_start_ + chunk_len_;
    const size_t len = geometry_.end_of(start) - start;
    uint8_t* next = map_chunk(start, len);
    if (!next && chunk_ && kept_ != 0) {
      // A file that keeps room for its final record keeps its sealed chunk mapped: the final
      // record replaces the ChunkEnd, and seal() seals the chunk again after it.
      full_ = true;
      set_in_place_end();
      return false;
    }
    if (chunk_) unmap_chunk();
    next_chunk_start_ = 0;
    if (!next) return false;
    use_chunk(next, start, len);
  } while (room > chunk_len_);
  return true;
}

uint8_t* LogFile::reserve(RecordType type, size_t n) {
  if (!chunk_ && !next_chunk_start_) return nullptr;
  bool big = format::is_big(static_cast<uint8_t>(type));
  if ((!big && n > format::kMaxSmallPayload) || n > format::kMaxBigRecord) return nullptr;
  size_t need = (big ? format::kBigHeaderSize : format::kSmallHeaderSize) + n;
  // Keep room for a ChunkEnd record so a reader always finds an explicit end of chunk, and for
  // the seal after it; and, but for the final record, the room kept for that.
  const size_t end = final_ ? record_area() : ordinary_end();
  if ((!chunk_ || pos_ + need + format::kSmallHeaderSize > end) && (full_ || !next_chunk(need)))
    return nullptr;
  return chunk_ + pos_ + (need - n);  // just after the header
}

void LogFile::commit(RecordType type, uint8_t* payload, size_t n) {
  const auto t = static_cast<uint8_t>(type);
  pos_ += format::put_record_header(payload - format::record_header_size(t), t,
                                    static_cast<uint32_t>(n)) +
          n;
}

bool LogFile::append(RecordType type, const void* payload, size_t n) {
  uint8_t* at = reserve(type, n);
  if (!at) return false;
  std::memcpy(at, payload, n);
  commit(type, at, n);
  return true;
}

void LogFile::close() {
  drop_page_request();
  if (chunk_) munmap(chunk_, chunk_len_);
  chunk_ = nullptr;
  set_in_place_end();
  next_chunk_start_ = 0;
}

void LogFile::seal() {
  if (!chunk_) return;
  format::end_chunk(chunk_, pos_, chunk_len_);
  next_chunk_start_ = chunk_start_ + chunk_len_;
  unmap_chunk();
}

void LogFile::finish() {
  if (!chunk_) {
    next_chunk_start_ = 0;  // sealed already (or dead)
    return;
  }
  // The seal goes right after the records, at a multiple of 8 (format.h, "Chunk seals").
  size_t at = format::cut_seal_offset(pos_);
  bool cut = record_area() - at > geometry_.first;
  // A file still in its first chunks keeps its few unused KiB: cutting costs three system calls
  // (and a discard on some file systems), which for a thread that lived for one allocation was
  // a good part of what recording it cost.
  if (cut) {
    drop_page_request();  // the pages past the cut would be asked for beyond the file's end
    int fd = reopen();
    // Cut first, seal after: killed in between, the file ends in zeros, an unsealed chunk.
    cut = fd >= 0 && ftruncate(fd, static_cast<off_t>(chunk_start_ + at + format::kSealSize)) == 0;
    if (fd >= 0) ::close(fd);
  }
  // Not cut (or the cut failed): the file keeps its unused tail, zeros that read as its end.
  seal_at(cut ? at : record_area());
  next_chunk_start_ = 0;
}

void write_stderr(const char* s, size_t n) {
  int saved = errno;
  while (n > 0) {
    ssize_t w = ::write(2, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    s += w;
    n -= static_cast<size_t>(w);
  }
  errno = saved;
}

}  // namespace gmemhook

// Read-only mapping of a log file (or a borrowed buffer) for the record cursor.
#include "analyzer/log/log_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "analyzer/log/read_error.h"

namespace gmemhook::analysis {

LogBytes LogBytes::map(const std::filesystem::path& path, std::string name) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw ReadError(std::move(name), std::nullopt,
                    std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw ReadError(std::move(name), std::nullopt, "expected a regular file");
  }
  size_t size = static_cast<size_t>(st.st_size);
  // mmap refuses length 0; an empty file is a valid (empty) log as far as mapping goes.
  if (size == 0) {
    ::close(fd);
    return LogBytes(nullptr, 0, false, std::move(name));
  }
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);
  if (p == MAP_FAILED)
    throw ReadError(std::move(name), std::nullopt,
                    std::string("cannot map: ") + std::strerror(err));
  // The cursor reads each file front to back once per pass.
  ::madvise(p, size, MADV_SEQUENTIAL);
  return LogBytes(static_cast<const uint8_t*>(p), size, true, std::move(name));
}

LogBytes LogBytes::borrow(std::span<const uint8_t> bytes, std::string name) {
  return LogBytes(bytes.data(), bytes.size(), false, std::move(name));
}

LogBytes::LogBytes(LogBytes&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, false)),
      released_(std::exchange(other.released_, 0)),
      name_(std::move(other.name_)) {}

LogBytes& LogBytes::operator=(LogBytes&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, false);
    released_ = std::exchange(other.released_, 0);
    name_ = std::move(other.name_);
  }
  return *this;
}

LogBytes::~LogBytes() { release(); }

void LogBytes::release_before(uint64_t offset) {
  // Batches of 4 MiB keep the madvise calls rare (one per ~300k events); the mapping starts
  // page-aligned, and a batch is a multiple of any page size.
  constexpr uint64_t kBatch = 4u << 20;
  if (!mapped_ || offset < released_ + kBatch) return;
  uint64_t end = offset / kBatch * kBatch;
  ::madvise(const_cast<uint8_t*>(data_) + released_, end - released_, MADV_DONTNEED);
  released_ = end;
}

void LogBytes::release() {
  if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);
  mapped_ = false;
  released_ = 0;
  data_ = nullptr;
  size_ = 0;
}

}  // namespace gmemhook::analysis

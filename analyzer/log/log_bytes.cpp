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

bool LogBytes::map_file(const std::filesystem::path& path, const uint8_t** data, size_t* size,
                        std::string* error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = std::string("cannot open: ") + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    *error = "expected a regular file";
    return false;
  }
  *size = static_cast<size_t>(st.st_size);
  *data = nullptr;
  // mmap refuses length 0; an empty file is a valid (empty) log as far as mapping goes.
  if (*size == 0) {
    ::close(fd);
    return true;
  }
  // MAP_SHARED, read-only: the same pages the writer's MAP_SHARED chunks store into, so records
  // committed after the mapping was made are seen too (gmemhook top follows a running job).
  void* p = ::mmap(nullptr, *size, PROT_READ, MAP_SHARED, fd, 0);
  int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    *error = std::string("cannot map: ") + std::strerror(err);
    return false;
  }
  // The cursor reads each file front to back once per pass.
  ::madvise(p, *size, MADV_SEQUENTIAL);
  *data = static_cast<const uint8_t*>(p);
  return true;
}

LogBytes LogBytes::map(const std::filesystem::path& path, std::string name) {
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::string error;
  if (!map_file(path, &data, &size, &error)) throw ReadError(std::move(name), std::nullopt, error);
  LogBytes bytes(data, size, data != nullptr, std::move(name));
  bytes.path_ = path;
  return bytes;
}

bool LogBytes::refresh() {
  if (path_.empty()) return false;
  struct stat st;
  if (::stat(path_.c_str(), &st) != 0 || static_cast<size_t>(st.st_size) <= size_) return false;
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::string error;
  if (!map_file(path_, &data, &size, &error) || size <= size_) {
    if (data) ::munmap(const_cast<uint8_t*>(data), size);
    return false;
  }
  // Pages before released_ are not resident in the new mapping either: no madvise needed.
  const uint64_t released = released_;
  release();
  data_ = data;
  size_ = size;
  mapped_ = true;
  released_ = released;
  return true;
}

LogBytes LogBytes::borrow(std::span<const uint8_t> bytes, std::string name) {
  return LogBytes(bytes.data(), bytes.size(), false, std::move(name));
}

LogBytes::LogBytes(LogBytes&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, false)),
      released_(std::exchange(other.released_, 0)),
      name_(std::move(other.name_)),
      path_(std::move(other.path_)) {}

LogBytes& LogBytes::operator=(LogBytes&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, false);
    released_ = std::exchange(other.released_, 0);
    name_ = std::move(other.name_);
    path_ = std::move(other.path_);
  }
  return *this;
}

LogBytes::~LogBytes() { release(); }

void LogBytes::release_up_to(uint64_t offset) {
  uint64_t end = offset / kReleaseBatch * kReleaseBatch;
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

// The bytes of one log file, either mapped from disk or borrowed from memory (tests, the fuzzer).
// Mapping keeps the reader's memory use independent of the log's size: pages come and go from
// the page cache as the cursor walks through them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace gmemhook::analysis {

class LogBytes {
 public:
  // Maps `path` read-only; throws ReadError when it cannot be opened. `name` is what error
  // messages call the file.
  static LogBytes map(const std::filesystem::path& path, std::string name);
  // For a file still being written (gmemhook top): maps it again when it has grown since, so
  // the records appended meanwhile become readable. Offsets stay valid. Returns true when it
  // grew; false for borrowed memory, a file that did not grow or one that cannot be read now.
  bool refresh();
  // Refers to memory the caller keeps alive for as long as this object is used.
  static LogBytes borrow(std::span<const uint8_t> bytes, std::string name);

  LogBytes(LogBytes&& other) noexcept;
  LogBytes& operator=(LogBytes&& other) noexcept;
  LogBytes(const LogBytes&) = delete;
  LogBytes& operator=(const LogBytes&) = delete;
  ~LogBytes();

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  // Tells the kernel the pages before `offset` were consumed, so a pass over a log of many GiB
  // does not hold all of it resident. Reading them again later still works (they fault back in
  // from the file). No effect on borrowed memory.
  void release_before(uint64_t offset) {
    if (mapped_ && offset >= released_ + kReleaseBatch) release_up_to(offset);
  }
  // A new pass starts at the beginning: release_before counts from 0 again.
  void restart() { released_ = 0; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  LogBytes(const uint8_t* data, size_t size, bool mapped, std::string name)
      : data_(data), size_(size), mapped_(mapped), name_(std::move(name)) {}
  static bool map_file(const std::filesystem::path& path, const uint8_t** data, size_t* size,
                       std::string* error);
  void release();
  // Batches of 4 MiB keep the madvise calls rare (one per ~300k events); the mapping starts
  // page-aligned, and a batch is a multiple of any page size.
  static constexpr uint64_t kReleaseBatch = 4u << 20;
  void release_up_to(uint64_t offset);

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;    // whether data_ is an mmap this object must unmap
  uint64_t released_ = 0;  // bytes from the start already handed back by release_before
  std::string name_;
  std::filesystem::path path_;  // of a mapped file (refresh() maps it again); empty if borrowed
};

}  // namespace gmemhook::analysis

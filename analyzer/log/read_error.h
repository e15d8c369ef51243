// What the reader reports when a log cannot be trusted (ReadError) or was cut short (ReadWarning).
// Both name the file and the byte offset so a user can look at the exact spot with a hex dump.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace gmemhook::analysis {

// A log is unreadable: missing, written by another format version, or damaged. The analyzer
// stops at the first one (exit status 2) rather than guessing what damaged bytes meant.
class ReadError : public std::runtime_error {
 public:
  ReadError(std::string file, std::optional<uint64_t> offset, std::string expected);

  const std::string& file() const { return file_; }
  const std::optional<uint64_t>& offset() const { return offset_; }
  const std::string& expected() const { return expected_; }

 private:
  std::string file_;
  std::optional<uint64_t> offset_;
  std::string expected_;
};

// A process's log holds nothing: the process was killed while starting, after making its
// directory and before its first record was committed. A report over a whole run skips such a
// process (and says so) rather than refusing the run; named alone, it is an error like any other.
class NothingRecordedError : public ReadError {
 public:
  using ReadError::ReadError;
};

// Something the user should know about that does not stop the analysis, e.g. a file that ends
// inside a record because the process was killed while the page was half written.
struct ReadWarning {
  std::string file;
  uint64_t offset = 0;
  std::string message;

  std::string to_string() const;
};

}  // namespace gmemhook::analysis

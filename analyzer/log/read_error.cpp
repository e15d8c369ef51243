// Message formatting for ReadError and ReadWarning: "<file>: offset <n>: <what>".
#include "analyzer/log/read_error.h"

namespace gmemhook::analysis {

namespace {
std::string compose(const std::string& file, const std::optional<uint64_t>& offset,
                    const std::string& expected) {
  std::string s = file;
  if (offset) s += ": offset " + std::to_string(*offset);
  s += ": " + expected;
  return s;
}
}  // namespace

ReadError::ReadError(std::string file, std::optional<uint64_t> offset, std::string expected)
    : std::runtime_error(compose(file, offset, expected)),
      file_(std::move(file)),
      offset_(offset),
      expected_(std::move(expected)) {}

std::string ReadWarning::to_string() const { return compose(file, offset, message); }

}  // namespace gmemhook::analysis

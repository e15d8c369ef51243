// Pickle protocol 2 opcodes (Python's Lib/pickletools.py documents each; see pickle_writer.h).
#include "analyzer/output/pickle_writer.h"

#include <cstring>

#include "analyzer/output/utf8.h"

namespace gmemhook::analysis {

namespace {
// The opcodes used, by their pickletools names.
constexpr uint8_t kProto = 0x80, kStop = '.', kMark = '(', kEmptyDict = '}', kSetItems = 'u',
                  kEmptyList = ']', kAppends = 'e', kTuple = 't', kNone = 'N', kNewTrue = 0x88,
                  kNewFalse = 0x89, kBinInt1 = 'K', kBinInt2 = 'M', kBinInt = 'J', kLong1 = 0x8a,
                  kBinFloat = 'G', kBinUnicode = 'X', kLongBinPut = 'r', kLongBinGet = 'j';
}  // namespace

PickleWriter::PickleWriter(std::string& out) : out_(out) {
  opcode(kProto);
  opcode(2);
}

void PickleWriter::little_endian(uint64_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) out_ += static_cast<char>((v >> (8 * i)) & 0xff);
}

// Dicts and lists are built empty and filled by one SETITEMS / APPENDS over everything pushed
// since the MARK: streaming, with no count to know in advance.
void PickleWriter::begin_dict() {
  opcode(kEmptyDict);
  opcode(kMark);
}
void PickleWriter::end_dict() { opcode(kSetItems); }
void PickleWriter::begin_list() {
  opcode(kEmptyList);
  opcode(kMark);
}
void PickleWriter::end_list() { opcode(kAppends); }
void PickleWriter::begin_tuple() { opcode(kMark); }
void PickleWriter::end_tuple() { opcode(kTuple); }

void PickleWriter::value(std::string_view s) {
  opcode(kBinUnicode);
  if (is_utf8(s)) {
    little_endian(s.size(), 4);
    out_.append(s.data(), s.size());
    return;
  }
  // Python decodes BINUNICODE as UTF-8 with "surrogatepass": a byte that is not UTF-8 (a Latin-1
  // path) would fail the whole load. It goes as the lone surrogate U+DC80..U+DCFF instead, as
  // "surrogateescape" makes it, so s.encode("utf-8", "surrogateescape") gives the bytes back.
  std::string text;
  for (size_t i = 0; i < s.size();) {
    char32_t code = 0;
    const size_t n = utf8_sequence(s.substr(i), code);
    if (n) {
      text.append(s.substr(i, n));
      i += n;
      continue;
    }
    const char32_t surrogate = 0xdc00 + static_cast<unsigned char>(s[i++]);
    text += static_cast<char>(0xe0 | surrogate >> 12);
    text += static_cast<char>(0x80 | (surrogate >> 6 & 0x3f));
    text += static_cast<char>(0x80 | (surrogate & 0x3f));
  }
  little_endian(text.size(), 4);
  out_ += text;
}

void PickleWriter::value(int64_t v) {
  if (v >= 0 && v < 0x100) {
    opcode(kBinInt1);
    little_endian(static_cast<uint64_t>(v), 1);
  } else if (v >= 0 && v < 0x10000) {
    opcode(kBinInt2);
    little_endian(static_cast<uint64_t>(v), 2);
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    opcode(kBinInt);  // signed 32-bit
    little_endian(static_cast<uint32_t>(static_cast<int32_t>(v)), 4);
  } else {
    uint8_t bytes[8];
    for (size_t i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i));
    size_t n = 8;  // the shortest two's complement that keeps the sign
    while (n > 1 && ((bytes[n - 1] == 0 && !(bytes[n - 2] & 0x80)) ||
                     (bytes[n - 1] == 0xff && (bytes[n - 2] & 0x80))))
      --n;
    long1(bytes, n);
  }
}

void PickleWriter::value(uint64_t v) {
  if (v <= static_cast<uint64_t>(INT64_MAX)) return value(static_cast<int64_t>(v));
  uint8_t bytes[9];
  for (size_t i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(v >> (8 * i));
  bytes[8] = 0;  // a zero byte on top keeps it positive (addresses above 2^63)
  long1(bytes, 9);
}

void PickleWriter::long1(const uint8_t* twos_complement, size_t bytes) {
  opcode(kLong1);
  out_ += static_cast<char>(bytes);
  out_.append(reinterpret_cast<const char*>(twos_complement), bytes);
}

void PickleWriter::value(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  opcode(kBinFloat);  // big-endian IEEE 754
  for (int i = 7; i >= 0; --i) out_ += static_cast<char>((bits >> (8 * i)) & 0xff);
}

void PickleWriter::put(uint32_t index) {
  opcode(kLongBinPut);
  little_endian(index, 4);
}
void PickleWriter::get(uint32_t index) {
  opcode(kLongBinGet);
  little_endian(index, 4);
}

void PickleWriter::value(bool v) { opcode(v ? kNewTrue : kNewFalse); }
void PickleWriter::none() { opcode(kNone); }
void PickleWriter::finish() { opcode(kStop); }

}  // namespace gmemhook::analysis

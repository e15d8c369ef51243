// Line-table decoders, one per encoding (see python_lines.h). Both walk the table from the start,
// carrying the current line, until they reach the range that holds the offset: tables are short
// (a few bytes per line of source) and reports ask once per distinct frame.
#include "analyzer/symbols/python_lines.h"

namespace gmemhook::analysis {

namespace {

// A line as the decoders carry it: may go negative on damaged tables, -1 = "no line".
using Line = int64_t;

std::optional<uint32_t> as_result(Line line) {
  if (line < 0 || line > INT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(line);
}

// 3.10 (PEP 626): each pair covers `byte delta` bytes of bytecode. Pairs with a zero byte delta
// only carry line deltas too large for one signed byte.
std::optional<uint32_t> line_310(std::string_view table, uint32_t first_line, uint32_t offset) {
  Line line = first_line;
  uint64_t start = 0;
  for (size_t i = 0; i + 1 < table.size(); i += 2) {
    auto bytes = static_cast<uint8_t>(table[i]);
    auto delta = static_cast<int8_t>(table[i + 1]);
    Line range_line = -1;
    if (delta != -128) {
      line += delta;
      range_line = line;
    }
    uint64_t end = start + bytes;
    if (offset >= start && offset < end) return as_result(range_line);
    start = end;
  }
  return std::nullopt;
}

// Reader of the 3.11+ location table's own varints: 6 bits per byte, 0x40 = more follow.
class LocationReader {
 public:
  explicit LocationReader(std::string_view t) : t_(t) {}
  bool at_end() const { return pos_ >= t_.size(); }
  bool byte(uint8_t* b) {
    if (pos_ >= t_.size()) return false;
    *b = static_cast<uint8_t>(t_[pos_++]);
    return true;
  }
  bool skip(size_t n) {
    if (t_.size() - pos_ < n) return false;
    pos_ += n;
    return true;
  }
  bool varint(uint64_t* v) {
    uint8_t b;
    if (!byte(&b)) return false;
    *v = b & 63;
    for (unsigned shift = 6; b & 64; shift += 6) {
      if (shift > 60 || !byte(&b)) return false;
      *v |= static_cast<uint64_t>(b & 63) << shift;
    }
    return true;
  }
  bool svarint(int64_t* v) {
    uint64_t u;
    if (!varint(&u)) return false;
    *v = (u & 1) ? -static_cast<int64_t>(u >> 1) : static_cast<int64_t>(u >> 1);
    return true;
  }

 private:
  std::string_view t_;
  size_t pos_ = 0;
};

// 3.11, 3.12, 3.13 (Objects/locations.md): every entry covers 1..8 code units of 2 bytes.
std::optional<uint32_t> line_311(std::string_view table, uint32_t first_line, uint32_t offset) {
  LocationReader in(table);
  Line line = first_line;
  uint64_t start = 0;
  while (!in.at_end()) {
    uint8_t head;
    in.byte(&head);
    if (!(head & 0x80)) return std::nullopt;  // every entry starts with its high bit set
    unsigned code = (head >> 3) & 15;
    uint64_t end = start + ((head & 7) + 1) * 2;
    Line range_line = line;
    if (code == 15) {  // no location
      range_line = -1;
    } else if (code == 14) {  // long form: line delta, end line delta, column + 1, end column + 1
      int64_t delta;
      uint64_t ignored;
      if (!in.svarint(&delta) || !in.varint(&ignored) || !in.varint(&ignored) ||
          !in.varint(&ignored))
        return std::nullopt;
      range_line = line += delta;
    } else if (code == 13) {  // no columns: line delta only
      int64_t delta;
      if (!in.svarint(&delta)) return std::nullopt;
      range_line = line += delta;
    } else if (code >= 10) {  // one line form: line delta code - 10, two column bytes
      if (!in.skip(2)) return std::nullopt;
      range_line = line += code - 10;
    } else {  // short form: same line, one column byte
      if (!in.skip(1)) return std::nullopt;
    }
    if (offset >= start && offset < end) return as_result(range_line);
    start = end;
  }
  return std::nullopt;
}

}  // namespace

bool python_lines_supported(uint16_t py_version) {
  return py_version >= 0x030a && py_version <= 0x030d;
}

std::optional<uint32_t> python_line(uint16_t py_version, std::string_view line_table,
                                    uint32_t first_line, uint32_t offset) {
  if (py_version == 0x030a) return line_310(line_table, first_line, offset);
  if (python_lines_supported(py_version)) return line_311(line_table, first_line, offset);
  return std::nullopt;
}

}  // namespace gmemhook::analysis

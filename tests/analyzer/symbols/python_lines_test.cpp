// Line tables of real code objects (python_line_vectors.inc, written by each interpreter with
// make_python_line_vectors.py): every instruction offset must decode to the line the interpreter
// itself gives, and damaged tables must give no line rather than a wrong one or a crash.
#include "analyzer/symbols/python_lines.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace gmemhook::analysis {
namespace {

struct LineRange {
  uint32_t start, end;
  int64_t line;  // -1: the interpreter reports no line
};

struct LineVector {
  uint16_t version;
  const char* name;
  uint32_t first_line;
  uint32_t code_bytes;
  const char* table_hex;
  std::vector<LineRange> ranges;
};

const std::vector<LineVector>& vectors() {
  static const std::vector<LineVector> v = {
#include "python_line_vectors.inc"
  };
  return v;
}

std::string unhex(const char* hex) {
  std::string out;
  for (const char* p = hex; p[0] && p[1]; p += 2)
    out += static_cast<char>(std::stoi(std::string(p, 2), nullptr, 16));
  return out;
}

TEST(PythonLines, EveryVersionHasVectors) {
  std::set<uint16_t> versions;
  for (const LineVector& v : vectors()) versions.insert(v.version);
  EXPECT_EQ(versions, (std::set<uint16_t>{0x030a, 0x030b, 0x030c, 0x030d}));
}

TEST(PythonLines, EveryInstructionGetsTheInterpretersLine) {
  size_t checked = 0;
  for (const LineVector& v : vectors()) {
    SCOPED_TRACE(std::to_string(v.version >> 8) + "." + std::to_string(v.version & 0xff) + " " +
                 v.name);
    std::string table = unhex(v.table_hex);
    ASSERT_TRUE(python_lines_supported(v.version));
    uint32_t covered = 0;
    for (const LineRange& r : v.ranges) {
      for (uint32_t off = r.start; off < r.end; off += 2, ++checked) {
        auto line = python_line(v.version, table, v.first_line, off);
        if (r.line < 0)
          EXPECT_FALSE(line.has_value()) << "offset " << off;
        else
          EXPECT_EQ(line, std::optional<uint32_t>(static_cast<uint32_t>(r.line)))
              << "offset " << off;
      }
      covered = std::max(covered, r.end);
    }
    EXPECT_EQ(covered, v.code_bytes);
    // Past the bytecode there is no line.
    EXPECT_FALSE(python_line(v.version, table, v.first_line, covered).has_value());
    EXPECT_FALSE(python_line(v.version, table, v.first_line, 1u << 30).has_value());
  }
  EXPECT_GT(checked, 1000u);
}

TEST(PythonLines, TheVectorsCoverEachEncodingsCorners) {
  bool far_310 = false, no_line_311 = false, long_form_311 = false;
  for (const LineVector& v : vectors()) {
    std::string t = unhex(v.table_hex);
    for (const LineRange& r : v.ranges)
      if (v.version == 0x030a && r.line > 40000) far_310 = true;
    if (v.version >= 0x030b)
      for (unsigned char c : t) {
        if ((c & 0xf8) == 0xf8) no_line_311 = true;    // code 15
        if ((c & 0xf8) == 0xf0) long_form_311 = true;  // code 14
      }
  }
  EXPECT_TRUE(far_310) << "3.10 line deltas split over several entries";
  EXPECT_TRUE(no_line_311) << "3.11+ entries without a location";
  EXPECT_TRUE(long_form_311) << "3.11+ long-form entries";
}

TEST(PythonLines, HandWrittenTables) {
  // 3.10: 6 bytes on line 10 (+0), 4 bytes with no line, 0 bytes carrying +200 split over two
  // entries, then 2 bytes on line 210.
  std::string t310 = std::string("\x06\x00\x04\x80\x00\x7f\x02\x49", 8);
  EXPECT_EQ(python_line(0x030a, t310, 10, 0), 10u);
  EXPECT_EQ(python_line(0x030a, t310, 10, 4), 10u);
  EXPECT_FALSE(python_line(0x030a, t310, 10, 6).has_value());
  EXPECT_EQ(python_line(0x030a, t310, 10, 10), 210u);
  EXPECT_FALSE(python_line(0x030a, t310, 10, 12).has_value());
  // 3.11+: one-line form +1 (2 units), no-location (1 unit), no-columns -1 (1 unit), short form.
  std::string t311 = std::string("\xd9\x00\x04\xf8\xe8\x03\x80\x00", 8);
  for (uint16_t v : {0x030b, 0x030c, 0x030d}) {
    EXPECT_EQ(python_line(v, t311, 5, 0), 6u);
    EXPECT_EQ(python_line(v, t311, 5, 2), 6u);
    EXPECT_FALSE(python_line(v, t311, 5, 4).has_value());
    EXPECT_EQ(python_line(v, t311, 5, 6), 5u);
    EXPECT_EQ(python_line(v, t311, 5, 8), 5u);
    EXPECT_FALSE(python_line(v, t311, 5, 10).has_value());
  }
}

TEST(PythonLines, DamagedOrForeignTablesGiveNoLine) {
  // Unsupported versions.
  EXPECT_FALSE(python_lines_supported(0x0309));
  EXPECT_FALSE(python_line(0x0309, "\x02\x01", 1, 0).has_value());
  EXPECT_FALSE(python_line(0x030e, "\x80\x00", 1, 0).has_value());
  // 3.11+: an entry that does not start with its high bit, truncated varints and columns.
  EXPECT_FALSE(python_line(0x030b, std::string("\x01\x02", 2), 1, 0).has_value());
  EXPECT_FALSE(python_line(0x030b, std::string("\xe8\x41", 2), 1, 0).has_value());
  EXPECT_FALSE(python_line(0x030b, std::string("\xf0\x02\x00", 3), 1, 0).has_value());
  EXPECT_FALSE(python_line(0x030b, std::string("\xd0\x01", 2), 1, 0).has_value());
  // A varint that never ends.
  EXPECT_FALSE(
      python_line(0x030c, std::string(1, '\xe8') + std::string(40, '\x7f'), 1, 0).has_value());
  // Lines driven below zero.
  EXPECT_FALSE(python_line(0x030a, std::string("\x02\x80\x02\xf0", 4), 3, 2).has_value());
  EXPECT_FALSE(python_line(0x030b, std::string("\xe8\x0b", 2), 3, 0).has_value());
  // Empty tables.
  EXPECT_FALSE(python_line(0x030a, "", 1, 0).has_value());
  EXPECT_FALSE(python_line(0x030d, "", 1, 0).has_value());
}

}  // namespace
}  // namespace gmemhook::analysis

// The pickle writer (output/pickle_writer.h): exact opcodes for each kind of value, and whole
// pickles read back by Python's own pickle module, which is what PyTorch's viewer uses.
#include "analyzer/output/pickle_writer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace gmemhook::analysis {
namespace {

// The bytes between the protocol header and STOP.
std::string body(const std::string& pickle) { return pickle.substr(2, pickle.size() - 3); }

template <typename Fill>
std::string pickled(Fill fill) {
  std::string out;
  PickleWriter p(out);
  fill(p);
  p.finish();
  return out;
}

TEST(PickleWriter, HeaderAndStop) {
  const std::string s = pickled([](PickleWriter& p) { p.none(); });
  EXPECT_EQ(s, std::string("\x80\x02N.", 4));
}

TEST(PickleWriter, IntegersTakeTheShortestOpcode) {
  EXPECT_EQ(body(pickled([](PickleWriter& p) { p.value(uint64_t{7}); })), "K\x07");
  EXPECT_EQ(body(pickled([](PickleWriter& p) { p.value(uint64_t{0x1234}); })), "M\x34\x12");
  EXPECT_EQ(body(pickled([](PickleWriter& p) { p.value(int64_t{-1}); })), "J\xff\xff\xff\xff");
  // 2^32 needs LONG1: 5 bytes, little-endian, the top byte keeping it positive.
  EXPECT_EQ(body(pickled([](PickleWriter& p) { p.value(uint64_t{1} << 32); })),
            std::string("\x8a\x05\x00\x00\x00\x00\x01", 7));
  // 2^63 + 1 (above int64): 9 bytes with a zero on top.
  EXPECT_EQ(body(pickled([](PickleWriter& p) { p.value((uint64_t{1} << 63) + 1); })),
            std::string("\x8a\x09\x01\x00\x00\x00\x00\x00\x00\x80\x00", 11));
}

TEST(PickleWriter, StringsAreUtf8WithALength) {
  EXPECT_EQ(body(pickled([](PickleWriter& p) { p.value("ab"); })),
            std::string("X\x02\x00\x00\x00" "ab", 7));
}

// Python reads what the writer wrote as `x`, and prints `expression` of it.
std::string python_says(const std::string& pickle, const std::string& expression) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("gmemhook_pickle_" + std::to_string(::getpid()) + ".pickle");
  std::FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(pickle.data(), 1, pickle.size(), f);
  std::fclose(f);
  const std::string cmd =
      "python3 -c 'import pickle,sys; x = pickle.load(open(sys.argv[1], \"rb\")); print(" +
      expression + ")' " + path.string();
  std::FILE* py = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, py)) > 0) out.append(buf, n);
  pclose(py);
  std::filesystem::remove(path);
  return out;
}

// ... and prints it back as Python sees it.
std::string python_repr(const std::string& pickle) { return python_says(pickle, "repr(x)"); }

TEST(PickleWriter, PythonReadsASnapshotShapedPickle) {
  const std::string s = pickled([](PickleWriter& p) {
    p.begin_dict();
    p.value("segments");
    p.begin_list();
    p.begin_dict();
    p.field("address", (uint64_t{1} << 47) + 512);
    p.field("size", int64_t{-300000});
    p.field("ok", true);
    p.field("ratio", 0.5);
    p.value("pool");
    p.begin_tuple();
    p.value(uint64_t{0});
    p.value(uint64_t{1});
    p.end_tuple();
    p.end_dict();
    p.end_list();
    p.value("frames");
    p.begin_list();
    p.value("f\xc3\xa9");  // UTF-8 é
    p.end_list();
    p.put(0);
    p.value("again");
    p.get(0);  // the same list, by reference
    p.value("empty");
    p.begin_list();
    p.end_list();
    p.end_dict();
  });
  EXPECT_EQ(python_repr(s),
            "{'segments': [{'address': 140737488355840, 'size': -300000, 'ok': True, "
            "'ratio': 0.5, 'pool': (0, 1)}], 'frames': ['f\xc3\xa9'], 'again': ['f\xc3\xa9'], "
            "'empty': []}\n");
}

TEST(PickleWriter, PythonReadsEveryIntegerWidth) {
  const std::string s = pickled([](PickleWriter& p) {
    p.begin_list();
    for (int64_t v : {int64_t{0}, int64_t{255}, int64_t{256}, int64_t{65535}, int64_t{65536},
                      int64_t{-129}, int64_t{INT32_MAX}, int64_t{INT32_MAX} + 1,
                      int64_t{INT32_MIN} - 1, INT64_MIN, INT64_MAX})
      p.value(v);
    p.value(UINT64_MAX);
    p.end_list();
  });
  EXPECT_EQ(python_repr(s),
            "[0, 255, 256, 65535, 65536, -129, 2147483647, 2147483648, -2147483649, "
            "-9223372036854775808, 9223372036854775807, 18446744073709551615]\n");
}

// A name that is not UTF-8 (a Latin-1 path, a cut symbol) must not fail the whole load: each such
// byte comes back as Python's surrogateescape would give it, so encoding with that handler
// restores the exact bytes.
TEST(PickleWriter, PythonReadsBytesThatAreNotUtf8) {
  const std::string name = "caf\xe9 \xff\xc3 ok \xc3\xa9 \xed\xa0\x80";
  std::string hex;
  for (unsigned char c : name) hex += {"0123456789abcdef"[c >> 4], "0123456789abcdef"[c & 15]};
  EXPECT_EQ(python_says(pickled([&](PickleWriter& p) { p.value(name); }),
                        "x.encode(\"utf-8\", \"surrogateescape\").hex()"),
            hex + "\n");
}

}  // namespace
}  // namespace gmemhook::analysis

// codec.h's encoders against bytes worked out by hand from format.h's layouts, so a change to the
// bytes on disk cannot pass unnoticed, and each decoder reading those bytes back.
#include "gmemhook/codec.h"

#include <gtest/gtest.h>

#include <array>
#include <string_view>
#include <vector>

#include "log_builder.h"

namespace gmemhook {
namespace {

using format::DecodeError;
using test_logs::Bytes;
using test_logs::encoded;

// The bytes of a literal, embedded zeros included, without its terminator.
template <size_t N>
Bytes bytes(const char (&s)[N]) {
  return Bytes(s, s + N - 1);
}

TEST(Codec, Stack) {
  const std::vector<uint64_t> frames = {0x1000, 0x0ff0};
  const std::vector<uint64_t> python = {format::py_frame_word(2, 7)};
  Bytes b = encoded(format::StackPayload{1, frames, python});
  // id, count, zigzag deltas 0x1000 and -16, pycount, code_id, where.
  EXPECT_EQ(b, bytes("\x01\x02\x80\x40\x1f\x01\x02\x07"));

  std::array<uint64_t, format::kMaxFrames> frame_room;
  std::array<uint64_t, format::kMaxPyFrames> py_room;
  format::StackPayload s;
  DecodeError err;
  ASSERT_TRUE(format::decode(b.data(), b.size(), &s, frame_room, py_room, &err));
  EXPECT_EQ(s.id, 1u);
  EXPECT_EQ(std::vector<uint64_t>(s.frames.begin(), s.frames.end()), frames);
  EXPECT_EQ(std::vector<uint64_t>(s.python.begin(), s.python.end()), python);
}

TEST(Codec, PyCode) {
  format::PyCodePayload c{1, 0x030c, "a.py", "f", "C.f", 300, "\x01\x02"};
  Bytes b = encoded(c);
  EXPECT_EQ(b, bytes("\x01\x8c\x06\x04"
                     "a.py\x01"
                     "f\x03"
                     "C.f\xac\x02\x02\x01\x02"));

  format::PyCodePayload d;
  DecodeError err;
  ASSERT_TRUE(format::decode(b.data(), b.size(), &d, &err));
  EXPECT_EQ(d.id, 1u);
  EXPECT_EQ(d.py_version, 0x030c);
  EXPECT_EQ(d.filename, "a.py");
  EXPECT_EQ(d.name, "f");
  EXPECT_EQ(d.qualname, "C.f");
  EXPECT_EQ(d.first_line, 300u);
  EXPECT_EQ(d.line_table, "\x01\x02");
}

TEST(Codec, ProcessInfo) {
  const std::string_view argv[] = {"x", "-v"};
  Bytes b = encoded(format::ProcessInfoPayload{300, 1, "/x", argv, "0", "", "2", "1.0", 65536});
  EXPECT_EQ(b, bytes("\xac\x02\x01\x02/x\x02\x01x\x02-v\x01"
                     "0\x00\x01"
                     "2\x03"
                     "1.0\x80\x80\x04"));

  std::vector<std::string_view> argv_room(format::kMaxArgs);
  format::ProcessInfoPayload i;
  DecodeError err;
  ASSERT_TRUE(format::decode(b.data(), b.size(), &i, argv_room, &err));
  EXPECT_EQ(i.pid, 300u);
  EXPECT_EQ(i.ppid, 1u);
  EXPECT_EQ(i.exe, "/x");
  ASSERT_EQ(i.argv.size(), 2u);
  EXPECT_EQ(i.argv[1], "-v");
  EXPECT_EQ(i.rank, "0");
  EXPECT_EQ(i.local_rank, "");
  EXPECT_EQ(i.world_size, "2");
  EXPECT_EQ(i.library_version, "1.0");
  EXPECT_EQ(i.chunk_size_hint, 65536u);
}

TEST(Codec, ModulesBeginAndModule) {
  Bytes begin = encoded(format::ModulesBeginPayload{5, 2});
  EXPECT_EQ(begin, bytes("\x05\x02"));

  const format::Segment segments[] = {{0, 0x1000, 5}};
  Bytes b = encoded(format::ModulePayload{"/lib.so", "\xab\xcd", 0x7f00, segments});
  EXPECT_EQ(b, bytes("\x07/lib.so\x02\xab\xcd\x80\xfe\x01\x01\x00\x80\x20\x05"));

  std::array<format::Segment, format::kMaxSegments> segment_room;
  format::ModulePayload m;
  DecodeError err;
  ASSERT_TRUE(format::decode(b.data(), b.size(), &m, segment_room, &err));
  EXPECT_EQ(m.path, "/lib.so");
  EXPECT_EQ(m.build_id, "\xab\xcd");
  EXPECT_EQ(m.load_bias, 0x7f00u);
  ASSERT_EQ(m.segments.size(), 1u);
  EXPECT_EQ(m.segments[0].memsz, 0x1000u);
  EXPECT_EQ(m.segments[0].flags, 5u);
}

TEST(Codec, NoteAndEnd) {
  Bytes note = encoded(format::NotePayload{"hi"});
  EXPECT_EQ(note, bytes("\x02hi"));

  Bytes end = encoded(format::EndPayload{format::EndHow::UnderscoreExit, -1, 10, 128, true});
  EXPECT_EQ(end, bytes("\x02\x01\x0a\x80\x01\x01\x00\x00\x00"));  // zigzag(-1) = 1

  format::EndPayload e;
  DecodeError err;
  ASSERT_TRUE(format::decode(end.data(), end.size(), &e, &err));
  EXPECT_EQ(e.how, format::EndHow::UnderscoreExit);
  EXPECT_EQ(e.status, -1);
  EXPECT_EQ(e.last_seq, 10u);
  EXPECT_EQ(e.time_delta_ns, 128u);
  EXPECT_TRUE(e.cuda_used);
}

// Versions 1 and 2 wrote End without the tail of what was not recorded; version 3 carries it.
TEST(Codec, EndOfEarlierVersionsAndTheNotRecordedTail) {
  Bytes v2 = bytes("\x01\x00\x07\x05\x01");
  format::EndPayload e;
  DecodeError err;
  ASSERT_TRUE(format::decode(v2.data(), v2.size(), &e, &err));
  EXPECT_EQ(e.last_seq, 7u);
  EXPECT_EQ(e.not_recorded, 0u);

  format::EndPayload lost{format::EndHow::Exec, 0, 100, 5, true, 60, 41, 28};
  Bytes v3 = encoded(lost);
  ASSERT_TRUE(format::decode(v3.data(), v3.size(), &e, &err));
  EXPECT_EQ(e.how, format::EndHow::Exec);
  EXPECT_EQ(e.not_recorded, 60u);
  EXPECT_EQ(e.first_lost_seq, 41u);
  EXPECT_EQ(e.write_error, 28u);
}

TEST(Codec, NvmlSample) {
  format::NvmlSamplePayload in{format::NvmlReason::Peak, 42, 1000, 1, true, 300, 4096, 1024};
  Bytes b = encoded(in);
  EXPECT_EQ(b, bytes("\x02\x04\x01\x2a\xe8\x07\xac\x02\x80\x20\x80\x08"));
  format::NvmlSamplePayload out;
  DecodeError err;
  ASSERT_TRUE(format::decode(b.data(), b.size(), &out, &err));
  EXPECT_EQ(out.reason, format::NvmlReason::Peak);
  EXPECT_EQ(out.seq, 42u);
  EXPECT_EQ(out.time_delta_ns, 1000u);
  EXPECT_EQ(out.device, 1);
  EXPECT_TRUE(out.listed);
  EXPECT_EQ(out.process_used, 300u);
  EXPECT_EQ(out.total, 4096u);
  EXPECT_EQ(out.used, 1024u);

  b[1] = 6;  // no such reason
  EXPECT_FALSE(format::decode(b.data(), b.size(), &out, &err));
  EXPECT_EQ(err.kind, DecodeError::Kind::Unexpected);
}

// The first bad field is the one reported, even though decoding reads on to the end.
TEST(Codec, DecodeReportsTheFirstBadField) {
  Bytes b = encoded(format::EndPayload{format::EndHow::Exit, 0, 0, 0, false});
  b[0] = 9;
  b.push_back(0);
  format::EndPayload e;
  DecodeError err;
  EXPECT_FALSE(format::decode(b.data(), b.size(), &e, &err));
  EXPECT_EQ(err.kind, DecodeError::Kind::Unexpected);
  EXPECT_STREQ(err.field, "how = 1 (exit), 2 (_exit) or 3 (exec)");
  EXPECT_EQ(err.value, 9u);
}

// Version 6: chunks double from the first size up to the largest, then stay at that size.
TEST(ChunkGeometry, GrowsByDoublingThenStaysAtTheLargest) {
  format::ChunkGeometry g{4096, 16384};
  EXPECT_EQ(g.start_of(0), 0u);
  EXPECT_EQ(g.end_of(4095), 4096u);
  EXPECT_EQ(g.start_of(4096), 4096u);
  EXPECT_EQ(g.end_of(4096), 8192u);
  EXPECT_EQ(g.start_of(12000), 8192u);
  EXPECT_EQ(g.end_of(12000), 16384u);
  EXPECT_EQ(g.end_of(16384), 32768u);
  EXPECT_EQ(g.start_of(40000), 32768u);
  EXPECT_EQ(g.end_of(40000), 49152u);
  format::ChunkGeometry fixed{4096, 4096};
  EXPECT_EQ(fixed.start_of(10000), 8192u);
  EXPECT_EQ(fixed.end_of(10000), 12288u);
}

}  // namespace
}  // namespace gmemhook

// The reader's one-load decoding (format.h's word_varint and word_varint_pext, codec.h's
// decode_usual_event_v8) against the byte-by-byte decoders it stands in for: on sound and damaged
// bytes alike, with anything after the payload, both must accept the same, reject the same and
// give the same numbers. The pext tests run where the CPU has a fast pext (the reader uses it
// only there).
#include <gtest/gtest.h>

#include <bitset>
#include <cstring>
#include <random>
#include <vector>

#include "analyzer/log/cpu_features.h"
#include "gmemhook/codec.h"

namespace gmemhook {
namespace {

// Room for the longest payload, then the 64 bytes the one-load decoder may read past it.
constexpr size_t kRoom = format::kMaxEventPayload + 80;

TEST(WordDecode, VarintsAsTheByteLoopReadsThem) {
  std::mt19937_64 rng(14);
  for (int i = 0; i < 200000; ++i) {
    uint8_t buf[32];
    for (uint8_t& b : buf) b = static_cast<uint8_t>(rng());  // what follows: anything
    size_t len;
    if (i % 4 == 0) {
      len = 1 + rng() % 12;  // bytes as damage leaves them: continuation bits anywhere
    } else {
      const unsigned bits = 1 + static_cast<unsigned>(rng() % 64);
      const uint64_t v = bits == 64 ? rng() : rng() & ((uint64_t{1} << bits) - 1);
      len = format::put_varint(buf, v);
    }
    for (size_t cut = 0; cut <= len + 1; ++cut) {
      for (size_t readable : {cut, cut + 7, size_t{32}}) {
        uint64_t want = 0, got = 0;
        const size_t n_want = format::get_varint(buf, buf + cut, &want);
        const size_t n_got = format::get_varint_from_word(buf, buf + cut, buf + readable, &got);
        ASSERT_EQ(n_got, n_want) << i << " cut " << cut << " readable " << readable;
        if (n_want) {
          ASSERT_EQ(got, want) << i;
        }
      }
    }
  }
}

// Every word a varint can start with, as damage or chance leaves it: both one-load decoders
// give the same length and, when they take it, the same number.
TEST(WordDecode, PextAsTheShifts) {
  if (!analysis::pext_is_fast()) GTEST_SKIP() << "no fast pext on this CPU";
  std::mt19937_64 rng(3);
  for (int i = 0; i < 1000000; ++i) {
    uint64_t w = rng();
    // Continuation bits cleared at random, so every length from 1 to 8 (and none) comes up.
    w &= ~(rng() & rng() & 0x8080808080808080ull);
    if (i % 3 == 0) w |= 0x8080808080808080ull >> (8 * (rng() % 8));
    uint8_t bytes[8];
    std::memcpy(bytes, &w, sizeof w);
    uint64_t shifts = 0, pext = 0;
    const size_t n_shifts = format::word_varint(bytes, &shifts);
    const size_t n_pext = format::word_varint_pext(bytes, &pext);
    ASSERT_EQ(n_pext, n_shifts) << std::hex << w;
    if (n_shifts) {
      ASSERT_EQ(pext, shifts) << std::hex << w;
    }
  }
}

void expect_same(const format::Event& a, const format::Event& b, int i) {
  EXPECT_EQ(a.api, b.api) << i;
  EXPECT_EQ(a.seq, b.seq) << i;
  EXPECT_EQ(a.time_ns, b.time_ns) << i;
  EXPECT_EQ(a.result, b.result) << i;
  EXPECT_EQ(a.stack_id, b.stack_id) << i;
  EXPECT_EQ(a.f.mask, b.f.mask) << i;
  EXPECT_EQ(a.f.address, b.f.address) << i;
  EXPECT_EQ(a.f.size, b.f.size) << i;
  EXPECT_EQ(a.f.stream, b.f.stream) << i;
  EXPECT_EQ(a.f.pool, b.f.pool) << i;
  EXPECT_EQ(a.f.handle, b.f.handle) << i;
  EXPECT_EQ(a.f.offset, b.f.offset) << i;
  EXPECT_EQ(a.f.device, b.f.device) << i;
  EXPECT_EQ(a.f.memory, b.f.memory) << i;
  EXPECT_EQ(a.f.allocated, b.f.allocated) << i;
  EXPECT_EQ(a.f.reserved, b.f.reserved) << i;
  EXPECT_EQ(a.f.graph, b.f.graph) << i;
  EXPECT_EQ(a.f.flags, b.f.flags) << i;
}

void expect_same(const format::EventDeltas& a, const format::EventDeltas& b, int i) {
  EXPECT_EQ(a.last_seq, b.last_seq) << i;
  EXPECT_EQ(a.last_time_ns, b.last_time_ns) << i;
  EXPECT_EQ(a.last_address, b.last_address) << i;
  EXPECT_EQ(a.last_allocated, b.last_allocated) << i;
  EXPECT_EQ(a.last_reserved, b.last_reserved) << i;
  EXPECT_EQ(a.last_stream, b.last_stream) << i;
  EXPECT_EQ(a.last_device, b.last_device) << i;
  EXPECT_EQ(0, std::memcmp(a.api_fields, b.api_fields, sizeof a.api_fields)) << i;
}

// Whether decode_usual_event_v8 hands an event of this type and api fields to a shape's decoder.
bool is_usual(uint8_t type, uint16_t api_fields) {
  return format::is_event_type(type, format::kFormatVersion) &&
         !(type & format::kEventHeadBits & ~(format::kSeqGap | format::kHasStackId)) &&
         !(api_fields & ~(format::kHasAddress | format::kHasSize | format::kHasStream |
                          format::kHasDevice | format::kIsFree));
}

// The usual decoder's shape (format::UsualShape) of an event it takes: which parts it stores.
unsigned usual_shape(uint8_t type, uint16_t api_fields) {
  return (type & format::kSeqGap ? format::kShapeSeqGap : 0u) |
         (type & format::kHasStackId ? format::kShapeStackId : 0u) |
         (api_fields & format::kHasAddress ? format::kShapeAddress : 0u) |
         (api_fields & format::kHasSize ? format::kShapeSize : 0u) |
         (api_fields & format::kHasStream ? format::kShapeStream : 0u);
}

// Mostly the events the one-load path takes (allocations and frees with address, size, stream,
// device; seq gaps; stack ids), with some it must hand on, then damage of every kind: flipped
// bits, cut or lengthened payloads, a changed head. Every shape of the one-load path (each has
// a decoder of its own) is met, sound and damaged.
template <bool kPext>
void events_as_the_byte_decoder_reads_them() {
  std::mt19937_64 rng(8);
  format::EventDeltas writer, plain, word;
  uint64_t seq = 0, time = 5000000000007ull;
  writer.last_time_ns = plain.last_time_ns = word.last_time_ns = time;
  int taken = 0, damaged = 0;
  std::bitset<format::kUsualShapes> shapes_taken, shapes_damaged;
  for (int i = 0; i < 200000; ++i) {
    format::Event ev;
    ev.api = static_cast<uint8_t>(1 + rng() % 5);
    seq += rng() % 3 ? 1 + rng() % 20 : 1;
    time += rng() % 50 ? rng() % 5000 : rng() % (1ull << 40);
    ev.seq = seq;
    ev.time_ns = time;
    ev.result = rng() % 50 == 0 ? 2 : 0;
    ev.stack_id = rng() % 2 ? static_cast<uint32_t>(rng() % (rng() % 10 ? 300 : 1u << 31)) : 0;
    format::EventFields& f = ev.f;
    const uint64_t shape = rng() % 4;
    uint64_t number = rng() % (1ull << (8 + rng() % 40));
    if (shape == 1) number <<= 12;
    if (shape == 2) number |= 1ull << 63;  // PlainNumbers
    if (rng() % 4) f.set_address(number);
    if (rng() % 2) f.set_size(rng() % (1ull << (rng() % 60)));
    if (rng() % 3 == 0) f.set_stream(0x1000 + rng() % 8);
    if (rng() % 3) f.set_device(rng() % 20 ? static_cast<int32_t>(ev.api % 2) : 7);
    if (rng() % 30 == 0) f.set_free();
    if (rng() % 40 == 0) f.set_pool(rng());
    if (rng() % 40 == 0) f.set_memory(format::MemoryType::Managed);
    if (rng() % 40 == 0) f.set_totals(rng(), rng());

    uint8_t encoded[format::kMaxEventPayload];
    const format::EncodedEvent e = format::encode_event(encoded, ev, writer);
    uint8_t type = static_cast<uint8_t>(e.type);
    size_t n = e.size;
    // The payload at the start of a room whose rest is garbage: the one-load path reads it.
    uint8_t room[kRoom];
    for (uint8_t& b : room) b = static_cast<uint8_t>(rng());
    std::memcpy(room, encoded, n);
    const bool damage = rng() % 10 == 0;
    if (damage) {
      ++damaged;
      switch (rng() % 4) {
        case 0:
          room[rng() % n] ^= static_cast<uint8_t>(1u << (rng() % 8));
          break;
        case 1:
          n = rng() % n;
          break;
        case 2:
          n = std::min(format::kMaxEventPayload, n + 1 + rng() % 3);
          break;
        default:
          type ^= static_cast<uint8_t>(1u << (rng() % 5));
          break;
      }
    }
    format::Event want, got;
    {  // Which shape's decoder the one-load path took (sound) or was handed (damaged).
      const uint16_t fields = word.api_fields[room[0]];
      format::EventDeltas probe = word;
      format::Event ignored;
      if (damage && n >= 2 && is_usual(type, fields)) shapes_damaged.set(usual_shape(type, fields));
      if (!damage && format::decode_usual_event_v8<kPext>(type & format::kEventHeadBits, room, n,
                                                          &ignored, probe))
        shapes_taken.set(usual_shape(type, fields));
    }
    const bool ok_want = format::decode_event(type, room, n, &want, plain);
    const bool ok_got = format::decode_event<kPext>(type, room, n, &got, word, kRoom);
    ASSERT_EQ(ok_got, ok_want) << i;
    expect_same(word, plain, i);
    if (ok_want) {
      expect_same(got, want, i);
      ++taken;
    }
    if (damage || !ok_want || ::testing::Test::HasFailure()) {
      // A reader stops at damage: start both again from the writer's state.
      plain = word = writer;
      if (::testing::Test::HasFailure()) return;
    }
  }
  EXPECT_GT(taken, 160000);
  EXPECT_GT(damaged, 10000);
  EXPECT_TRUE(shapes_taken.all()) << shapes_taken;
  EXPECT_TRUE(shapes_damaged.all()) << shapes_damaged;
}

// A usual-shaped event whose size takes 9 bytes (the general encoder's, as the usual one refuses
// it): the one-load decoder reads parts of at most 8 bytes and must hand it on, not take the
// first 8 bytes as a part (the pext path tests all parts' stop bits once, at the end).
template <bool kPext>
void nine_byte_part_goes_to_the_general_decoder() {
  format::EventDeltas writer, plain, word;
  uint8_t room[kRoom] = {};
  for (int i = 0; i < 2; ++i) {
    format::Event ev;
    ev.api = 1;  // any api: the usual path is chosen by its fields
    ev.seq = 1 + i;
    ev.time_ns = 1000 * (1 + i);
    ev.f.set_address(0x7f0000000000 + 0x100000 * i);
    ev.f.set_size(i == 0 ? 512 : (uint64_t{1} << 58) + 1);  // scaled: over 2^56, 9 bytes
    const format::EncodedEvent e = format::encode_event(room, ev, writer);
    const uint8_t type = static_cast<uint8_t>(e.type);
    if (i == 1) {
      ASSERT_EQ(room[e.size - 1] & 0x80, 0);
      ASSERT_EQ(room[e.size - 9] & 0x80, 0x80) << "the size's 9 bytes end the payload";
      format::EventDeltas probe = word;
      format::UsualEvent ignored;
      EXPECT_FALSE(format::decode_usual_event_v8<kPext>(type & format::kEventHeadBits, room, e.size,
                                                        &ignored, probe));
    }
    format::Event want, got;
    ASSERT_TRUE(format::decode_event(type, room, e.size, &want, plain));
    ASSERT_TRUE(format::decode_event<kPext>(type, room, e.size, &got, word, kRoom));
    expect_same(got, want, i);
    EXPECT_EQ(got.f.size, ev.f.size);
  }
}

TEST(WordDecode, NineBytePartGoesToTheGeneralDecoder) {
  nine_byte_part_goes_to_the_general_decoder<false>();
}

TEST(WordDecode, PextNineBytePartGoesToTheGeneralDecoder) {
  if (!analysis::pext_is_fast()) GTEST_SKIP() << "no fast pext on this CPU";
  nine_byte_part_goes_to_the_general_decoder<true>();
}

// Payloads of 0 and 1 bytes (the api alone): the usual decoder has no test of the size of its
// own, its shapes read the time past them and refuse a payload that ends before their last part.
TEST(WordDecode, UsualDecoderRefusesPayloadsWithoutATime) {
  for (const bool pext : {false, true}) {
    if (pext && !analysis::pext_is_fast()) continue;
    format::EventDeltas d;
    d.api_fields[1] = format::kHasAddress;
    for (size_t n : {size_t{0}, size_t{1}}) {
      uint8_t room[kRoom] = {1, 0x05, 0x40};  // api 1, then a time and an address past the end
      format::UsualEvent ev;
      const format::EventDeltas before = d;
      const bool taken = pext ? format::decode_usual_event_v8<true>(0, room, n, &ev, d)
                              : format::decode_usual_event_v8<false>(0, room, n, &ev, d);
      EXPECT_FALSE(taken) << n;
      expect_same(d, before, static_cast<int>(n));
    }
  }
}

TEST(WordDecode, EventsAsTheByteDecoderReadsThem) {
  events_as_the_byte_decoder_reads_them<false>();
}

TEST(WordDecode, PextEventsAsTheByteDecoderReadsThem) {
  if (!analysis::pext_is_fast()) GTEST_SKIP() << "no fast pext on this CPU";
  events_as_the_byte_decoder_reads_them<true>();
}

}  // namespace
}  // namespace gmemhook

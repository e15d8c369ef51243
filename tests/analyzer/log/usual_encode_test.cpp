// The writer's one-store encoding (format.h's put_word_varint, codec.h's encode_usual_event)
// against the byte-by-byte encoder it stands in for: on any event both must write the same
// bytes and leave the same delta state, so the log format cannot change under the recorder.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <tuple>

#include "gmemhook/codec.h"

namespace gmemhook {
namespace {

TEST(UsualEncode, WordVarintsAsTheByteLoopWritesThem) {
  std::mt19937_64 rng(56);
  for (int i = 0; i < 200000; ++i) {
    const unsigned bits = static_cast<unsigned>(rng() % 57);  // 0 to 56 significant bits
    const uint64_t v = bits == 0 ? 0 : rng() & ((uint64_t{1} << bits) - 1);
    uint8_t want[16], got[16];
    std::memset(want, 0xaa, sizeof want);
    std::memset(got, 0xaa, sizeof got);
    const size_t n = format::put_varint(want, v);
    ASSERT_EQ(format::put_word_varint(got, v), n) << v;
    ASSERT_EQ(std::memcmp(got, want, n), 0) << v;
    for (size_t k = n; k < 8; ++k)  // zeros after, or nothing
      ASSERT_EQ(got[k], n == 1 ? 0xaa : 0) << v << " byte " << k;
    for (size_t k = 8; k < sizeof got; ++k) ASSERT_EQ(got[k], 0xaa) << v;  // nothing more
  }
}

TEST(UsualEncode, ScalesAsScaleClass) {
  std::mt19937_64 rng(8);
  for (int i = 0; i < 100000; ++i) {
    const uint64_t v = i == 0 ? 0 : rng() << (rng() % 64);
    const unsigned c = format::scale_class(v);
    ASSERT_EQ(format::scale_by_zeros(v), format::kScaleShift[c] << 2 | c) << v;
  }
}

// What a writer's deltas hold, as one comparable value.
auto deltas_state(const format::EventDeltas& d) {
  return std::tuple(d.last_seq, d.last_time_ns, d.last_address, d.last_allocated, d.last_reserved,
                    d.last_stream, d.last_device,
                    std::string(reinterpret_cast<const char*>(d.api_fields), sizeof d.api_fields));
}

// Events as a recorder meets them — a few apis in turn, mostly sound and repeating, with every
// kind of exception mixed in — each encoded by encode_event (the usual path where it applies)
// and by encode_event_to alone, each writer with its own deltas.
TEST(UsualEncode, EventsAsTheGeneralEncoderWritesThem) {
  std::mt19937_64 rng(14);
  format::EventDeltas fast, general;
  fast.last_time_ns = general.last_time_ns = 1000000;
  uint64_t seq = 0, time_ns = 1000000, address = 0x7f0000000000;
  int usual = 0;
  constexpr int kEvents = 300000;
  for (int i = 0; i < kEvents; ++i) {
    format::EventCore ev;
    ev.api = static_cast<uint8_t>(1 + rng() % 4);
    const uint64_t r = rng() % 100;
    seq += r < 80 ? 1 : r < 95 ? 1 + rng() % 300 : r < 97 ? 0 : rng() >> (rng() % 64);
    ev.seq = seq;
    const uint64_t dt = rng() % 100 < 90 ? rng() % 4000 : rng() >> (rng() % 64);
    time_ns = rng() % 200 == 0 ? time_ns - rng() % 100000 : time_ns + dt;  // backwards: wraps
    ev.time_ns = time_ns;
    ev.result = rng() % 50 == 0 ? static_cast<uint32_t>(1 + rng() % 1000) : 0;
    ev.stack_id = rng() % 4 == 0 ? 0 : static_cast<uint32_t>(rng() >> (32 + rng() % 32));
    format::EventFields f;
    // The same fields per api most of the time, as wrappers set them.
    const bool odd = rng() % 20 == 0;
    if (ev.api != 4 || odd) {
      const uint64_t a = rng() % 10;
      address = a < 6   ? address + (rng() % 64) * 256
                : a < 8 ? rng() >> (rng() % 64)
                : a < 9 ? address - (rng() % 1000) * 4096
                        : uint64_t{1} << 63 | rng();  // too far to scale: PlainNumbers
      f.set_address(address);
    }
    if (ev.api == 1 || ev.api == 3 || odd) {
      const uint64_t s = rng() % 10;
      f.set_size(s < 7   ? (1 + rng() % 64) << (rng() % 24)
                 : s < 9 ? rng() >> (rng() % 64)
                         : rng() | uint64_t{1} << 62);
    }
    if (ev.api == 3) f.set_stream(rng() % 10 ? 0x5000 + rng() % 4 : rng());
    if (ev.api == 1 || ev.api == 3) f.set_device(rng() % 30 ? 0 : static_cast<int32_t>(rng() % 3));
    if (ev.api == 2 && rng() % 2) f.set_free();
    if (odd && rng() % 2) f.set_pool(rng());
    if (rng() % 100 == 0) f.set_totals(rng() % 1000, rng() % 1000);
    if (rng() % 200 == 0) f.set_memory(format::MemoryType::Managed);

    uint8_t out[format::kMaxEventPayload], want[format::kMaxEventPayload];
    std::memset(out, 0xaa, sizeof out);
    // The usual path alone first: when it declines it must leave bytes and deltas untouched.
    format::EventDeltas before = fast;
    format::EncodedEvent got;
    if (format::encode_usual_event(out, ev, f, fast, &got)) {
      ++usual;
      for (size_t k = got.size; k < got.size + 7 && k < sizeof out; ++k)
        ASSERT_TRUE(out[k] == 0 || out[k] == 0xaa) << i << " byte " << k;
    } else {
      for (uint8_t b : out) ASSERT_EQ(b, 0xaa) << i;
      ASSERT_EQ(deltas_state(fast), deltas_state(before)) << i;
      got = format::encode_event(out, ev, f, fast);
    }
    format::PayloadWriter w(want);
    const uint8_t head = format::encode_event_to(w, ev, f, general);
    ASSERT_EQ(static_cast<int>(got.type), format::kEventTypeBase | head) << i;
    ASSERT_EQ(got.size, w.size()) << i;
    ASSERT_EQ(std::memcmp(out, want, got.size), 0) << i;
    ASSERT_EQ(deltas_state(fast), deltas_state(general)) << i;
  }
  // Both paths well exercised.
  EXPECT_GT(usual, kEvents / 4);
  EXPECT_LT(usual, kEvents * 3 / 4);
}

}  // namespace
}  // namespace gmemhook

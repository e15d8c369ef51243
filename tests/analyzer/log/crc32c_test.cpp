// The chunk seals' CRC32C (crc32c.h): its three-stream form, joined by shifts in GF(2), gives what
// one stream and the byte table give, on every length, alignment and content.
#include "gmemhook/crc32c.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace gmemhook::format {
namespace {

namespace detail = crc32c_detail;

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> b(n);
  for (auto& v : b) v = static_cast<uint8_t>(rng());
  return b;
}

TEST(Crc32c, KnownValues) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);  // the check value of CRC-32C
  EXPECT_EQ(crc32c("", 0), 0u);
  const std::vector<uint8_t> zeros(32, 0), ones(32, 0xff);
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);  // RFC 3720, B.4
  EXPECT_EQ(crc32c(ones.data(), ones.size()), 0x62A8AB43u);
}

// The compile-time multiply mod P: x^0 is its unit, x^31 times x is x^32 mod P, and it is
// commutative and distributes over xor.
TEST(Crc32c, MultiplyModP) {
  constexpr uint32_t kOne = 0x80000000u;  // x^0
  EXPECT_EQ(detail::multiply(kOne, 0x12345678u), 0x12345678u);
  EXPECT_EQ(detail::multiply(0x12345678u, kOne), 0x12345678u);
  EXPECT_EQ(detail::times_x(1u), 0x82F63B78u);  // x^32 mod P
  std::mt19937 rng(3);
  for (int i = 0; i < 200; ++i) {
    const uint32_t a = rng(), b = rng(), c = rng();
    EXPECT_EQ(detail::multiply(a, b), detail::multiply(b, a));
    EXPECT_EQ(detail::multiply(a, b ^ c), detail::multiply(a, b) ^ detail::multiply(a, c));
  }
}

#if defined(__x86_64__)
bool has_three_streams() { return detail::hardware_level() == 2; }

// Shifting a register over n zero bytes: one multiply by join_factor(n), against running the
// crc32 instruction over the zeros.
TEST(Crc32c, JoinFactorShiftsOverZeroBytes) {
  if (!has_three_streams()) GTEST_SKIP() << "no SSE4.2 and pclmul here";
  const std::vector<uint8_t> zeros(1 << 16, 0);
  std::mt19937 rng(5);
  for (size_t n = 8; n <= zeros.size(); n += 8 * (1 + n / 512)) {
    const uint32_t crc = rng();
    EXPECT_EQ(detail::multiply_x33(crc, detail::join_factor(n)),
              detail::one_stream(crc, zeros.data(), n))
        << n << " bytes";
  }
}

// Every length up to 4096 at every alignment of 8: three streams (called whatever the length,
// below the size crc32c() would use them from too), one stream and the byte table agree.
TEST(Crc32c, ThreeStreamsEqualOneOnEveryLengthAndAlignment) {
  if (!has_three_streams()) GTEST_SKIP() << "no SSE4.2 and pclmul here";
  const std::vector<uint8_t> bytes = random_bytes(4096 + 8, 1);
  for (size_t n = 0; n <= 4096; ++n) {
    for (size_t align = 0; align < 8; ++align) {
      const uint8_t* p = bytes.data() + align;
      const uint32_t table = detail::software(~0u, p, n);
      ASSERT_EQ(detail::one_stream(~0u, p, n), table) << n << " bytes at +" << align;
      ASSERT_EQ(detail::three_streams(~0u, p, n), table) << n << " bytes at +" << align;
      ASSERT_EQ(crc32c(p, n), ~table) << n << " bytes at +" << align;
    }
  }
}

// Chunk-sized random buffers (a chunk is up to a MiB), with odd lengths and starts, and a start
// value other than ~0.
TEST(Crc32c, ThreeStreamsEqualOneOnRandomBuffers) {
  if (!has_three_streams()) GTEST_SKIP() << "no SSE4.2 and pclmul here";
  std::mt19937_64 rng(7);
  for (int round = 0; round < 40; ++round) {
    const size_t n = rng() % (1 << 20) + 1;
    const size_t align = rng() % 16;
    const std::vector<uint8_t> bytes = random_bytes(n + align, rng());
    const uint8_t* p = bytes.data() + align;
    const uint32_t start = round % 2 ? ~0u : static_cast<uint32_t>(rng());
    const uint32_t one = detail::one_stream(start, p, n);
    EXPECT_EQ(detail::three_streams(start, p, n), one) << n << " bytes at +" << align;
    if (round < 4) {
      EXPECT_EQ(detail::software(start, p, n), one);
    }
  }
}
#endif

}  // namespace
}  // namespace gmemhook::format

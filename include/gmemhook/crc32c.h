// CRC32C (Castagnoli), the checksum that seals each chunk of a log (format.h, "Chunk seals").
// One definition for both sides: the hook computes it when a chunk is finished, the reader when
// it enters a sealed chunk. Malloc-free and lock-free (the hook runs it in fork children and at
// exit); SSE4.2's crc32 instruction when the CPU has it, a byte table otherwise.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace gmemhook::format {

namespace crc32c_detail {

// Reflected polynomial 0x1EDC6F41.
struct Table {
  uint32_t v[256];
  constexpr Table() : v{} {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      v[i] = c;
    }
  }
};
inline constexpr Table kTable{};

inline uint32_t software(uint32_t crc, const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) crc = kTable.v[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
// One dependent crc32 per 8 bytes: about 8 bytes per 3 cycles, ~100 µs for a 1 MiB chunk, paid
// once per chunk (a chunk holds tens of thousands of events).
__attribute__((target("sse4.2"))) inline uint32_t hardware(uint32_t crc, const uint8_t* p,
                                                           size_t n) {
  uint64_t c = crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t w;
    std::memcpy(&w, p, sizeof w);
    c = __builtin_ia32_crc32di(c, w);
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  for (; n > 0; --n, ++p) c32 = __builtin_ia32_crc32qi(c32, *p);
  return c32;
}

// cpuid once; __builtin_cpu_supports needs libgcc's initialiser, which a preloaded library
// cannot count on having run.
inline bool has_sse42() {
  static std::atomic<int> known{-1};
  int k = known.load(std::memory_order_relaxed);
  if (k < 0) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    k = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2) ? 1 : 0;
    known.store(k, std::memory_order_relaxed);
  }
  return k == 1;
}
#endif

}  // namespace crc32c_detail

// CRC32C of n bytes at p (initial value ~0, final xor ~0, as iSCSI and ext4 use it).
inline uint32_t crc32c(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
#if defined(__x86_64__)
  if (crc32c_detail::has_sse42()) return ~crc32c_detail::hardware(~0u, p, n);
#endif
  return ~crc32c_detail::software(~0u, p, n);
}

}  // namespace gmemhook::format

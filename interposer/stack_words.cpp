// The AVX2 check of stack words and the CPU test that guards it (see stack_words.h).
#include "stack_words.h"

#include <cpuid.h>
#include <immintrin.h>

#include <atomic>

namespace gmemhook {

namespace {
// 0: not asked yet, 1: no, 2: yes. Constant-initialized: safe before any constructor has run.
std::atomic<int> g_avx2{0};

bool ask_cpu() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  // AVX2 instructions fault unless the kernel saves the YMM registers (XCR0 bits 1 and 2).
  if (!(c & bit_OSXSAVE) || !(c & bit_AVX)) return false;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & 6) != 6) return false;
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  __cpuid_count(7, 0, a, b, c, d);
  return (b & bit_AVX2) != 0;
}
}  // namespace

bool cpu_runs_avx2() {
  int known = g_avx2.load(std::memory_order_relaxed);
  if (known == 0) {
    known = ask_cpu() ? 2 : 1;
    g_avx2.store(known, std::memory_order_relaxed);
  }
  return known == 2;
}

// Two twos of adjacent words an operand: the second two joins the first in the upper half
// (vinserti128 from memory), against four saved values in one aligned load. No lambdas: GCC does
// not compile them for the enclosing function's target.
__attribute__((target("avx2"))) uint64_t stack_words_differ_avx2(const uint64_t* at,
                                                                 const uint64_t* value, int paired,
                                                                 int n) {
#define GMEMHOOK_FOUR_DIFFER(i)                                                             \
  _mm256_xor_si256(                                                                         \
      _mm256_inserti128_si256(                                                              \
          _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(at[i]))), \
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(at[(i) + 2])), 1),               \
      _mm256_load_si256(reinterpret_cast<const __m256i*>(value + (i))))
  __m256i a = _mm256_setzero_si256(), b = _mm256_setzero_si256();
  int i = 0;
  for (; i + 7 < paired; i += 8) {
    a = _mm256_or_si256(a, GMEMHOOK_FOUR_DIFFER(i));
    b = _mm256_or_si256(b, GMEMHOOK_FOUR_DIFFER(i + 4));
  }
  if (i + 3 < paired) {
    a = _mm256_or_si256(a, GMEMHOOK_FOUR_DIFFER(i));
    i += 4;
  }
#undef GMEMHOOK_FOUR_DIFFER
  a = _mm256_or_si256(a, b);
  __m128i c = _mm_or_si128(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
  if (i < paired) {  // one two left
    const __m128i now = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at[i]));
    c = _mm_or_si128(
        c, _mm_xor_si128(now, _mm_load_si128(reinterpret_cast<const __m128i*>(value + i))));
    i += 2;
  }
  uint64_t differ =
      static_cast<uint64_t>(_mm_cvtsi128_si64(c)) | static_cast<uint64_t>(_mm_extract_epi64(c, 1));
  for (; i < n; ++i) differ |= *reinterpret_cast<const uint64_t*>(at[i]) ^ value[i];
  return differ;
}

}  // namespace gmemhook

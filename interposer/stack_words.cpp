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

// Two twos an operand: the second joins the first in the upper half (vinserti128 from memory),
// against four saved values in one aligned load. No lambdas: GCC does not compile them for the
// enclosing function's target.
__attribute__((target("avx2"), pure)) uint64_t stack_words_differ_avx2(const uint64_t* at,
                                                                       const uint64_t* value,
                                                                       int pairs, int singles) {
#define GMEMHOOK_FOUR_DIFFER(k)                                                             \
  _mm256_xor_si256(                                                                         \
      _mm256_inserti128_si256(                                                              \
          _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(at[k]))), \
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(at[(k) + 1])), 1),               \
      _mm256_load_si256(reinterpret_cast<const __m256i*>(value + 2 * (k))))
  // Accumulated as or(new, old): with old first GCC 12 adds a register move per operand.
  __m256i a = _mm256_setzero_si256(), b = _mm256_setzero_si256();
  int k = 0;
  for (; k + 7 < pairs; k += 8) {
    a = _mm256_or_si256(GMEMHOOK_FOUR_DIFFER(k), a);
    b = _mm256_or_si256(GMEMHOOK_FOUR_DIFFER(k + 2), b);
    a = _mm256_or_si256(GMEMHOOK_FOUR_DIFFER(k + 4), a);
    b = _mm256_or_si256(GMEMHOOK_FOUR_DIFFER(k + 6), b);
  }
  if (k + 3 < pairs) {
    a = _mm256_or_si256(GMEMHOOK_FOUR_DIFFER(k), a);
    b = _mm256_or_si256(GMEMHOOK_FOUR_DIFFER(k + 2), b);
    k += 4;
  }
  if (k + 1 < pairs) {
    a = _mm256_or_si256(GMEMHOOK_FOUR_DIFFER(k), a);
    k += 2;
  }
#undef GMEMHOOK_FOUR_DIFFER
  a = _mm256_or_si256(a, b);
  __m128i c = _mm_or_si128(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
  if (k < pairs) {  // one two left
    const __m128i now = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at[k]));
    c = _mm_or_si128(
        c, _mm_xor_si128(now, _mm_load_si128(reinterpret_cast<const __m128i*>(value + 2 * k))));
  }
  uint64_t differ =
      static_cast<uint64_t>(_mm_cvtsi128_si64(c)) | static_cast<uint64_t>(_mm_extract_epi64(c, 1));
  const uint64_t* single_at = at + pairs;
  const uint64_t* single_value = value + 2 * pairs;
  for (int j = 0; j < singles; ++j)
    differ |= *reinterpret_cast<const uint64_t*>(single_at[j]) ^ single_value[j];
  return differ;
}

}  // namespace gmemhook

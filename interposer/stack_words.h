// Whether words of the thread's stack still hold what a walk read there: the check behind every
// recent walk reused (fast_unwinder.h), with SSE2 everywhere and AVX2 where the CPU has it.
#pragma once

#include <emmintrin.h>

#include <cstdint>

namespace gmemhook {

// Whether this CPU and the kernel run AVX2 code (CPUID and XGETBV, asked once per process). The
// hook runs on any x86-64: AVX2 code runs only where this says yes.
bool cpu_runs_avx2();

// The bits in which the `n` words at addresses at[i] differ from value[i] now: 0 when every one
// is unchanged. The first `paired` (even) come in twos at adjacent addresses (at[i + 1] ==
// at[i] + 8, i even): each two is read with one 16-byte load. `value` is 32-byte aligned. Every
// at[i] must be readable.
uint64_t stack_words_differ_avx2(const uint64_t* at, const uint64_t* value, int paired, int n);

// The same with SSE2 only. Inline: the usual check's one caller is on every event's path.
inline uint64_t stack_words_differ_sse2(const uint64_t* at, const uint64_t* value, int paired,
                                        int n) {
  const auto pair_differs = [at, value](int i) {
    const __m128i now = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at[i]));
    return _mm_xor_si128(now, _mm_load_si128(reinterpret_cast<const __m128i*>(value + i)));
  };
  // Independent loads, eight an iteration, two accumulators.
  __m128i a = _mm_setzero_si128(), b = _mm_setzero_si128();
  int i = 0;
  for (; i + 7 < paired; i += 8) {
    a = _mm_or_si128(a, _mm_or_si128(pair_differs(i), pair_differs(i + 2)));
    b = _mm_or_si128(b, _mm_or_si128(pair_differs(i + 4), pair_differs(i + 6)));
  }
  for (; i < paired; i += 2) a = _mm_or_si128(a, pair_differs(i));
  a = _mm_or_si128(a, b);
  uint64_t differ = static_cast<uint64_t>(_mm_cvtsi128_si64(a)) |
                    static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(a, a)));
  for (; i < n; ++i) differ |= *reinterpret_cast<const uint64_t*>(at[i]) ^ value[i];
  return differ;
}

}  // namespace gmemhook

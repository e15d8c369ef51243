// Whether words of the thread's stack still hold what a walk read there: the check behind every
// recent walk reused (fast_unwinder.h), with SSE2 everywhere and AVX2 where the CPU has it.
#pragma once

#include <emmintrin.h>

#include <cstdint>

namespace gmemhook {

// Whether this CPU and the kernel run AVX2 code (CPUID and XGETBV, asked once per process). The
// hook runs on any x86-64: AVX2 code runs only where this says yes.
bool cpu_runs_avx2();

// The words a check reads: first `pairs` twos of adjacent words (a frame pointer's saved rbp and
// the return address above it), the k-th two at at[k] and at[k] + 8, holding value[2k] and
// value[2k + 1]; then `singles` lone words, the j-th at at[pairs + j], holding
// value[2 * pairs + j]. A two is read with one 16-byte load, and its one address is all it
// keeps (the table a check reads is half as long as one address per word). `value` is 32-byte
// aligned. Every address must be readable.

// The bits in which those words differ from their values now: 0 when every one is unchanged.
// Inline: the walk compiled for SSE2 (fast_unwinder.cpp) makes no call in its usual case.
inline uint64_t stack_words_differ_sse2(const uint64_t* at, const uint64_t* value, int pairs,
                                        int singles) {
  const auto pair_differs = [at, value](int k) {
    const __m128i now = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at[k]));
    return _mm_xor_si128(now, _mm_load_si128(reinterpret_cast<const __m128i*>(value + 2 * k)));
  };
  // Independent loads, four twos an iteration, two accumulators.
  __m128i a = _mm_setzero_si128(), b = _mm_setzero_si128();
  int k = 0;
  for (; k + 3 < pairs; k += 4) {
    a = _mm_or_si128(a, _mm_or_si128(pair_differs(k), pair_differs(k + 1)));
    b = _mm_or_si128(b, _mm_or_si128(pair_differs(k + 2), pair_differs(k + 3)));
  }
  for (; k < pairs; ++k) a = _mm_or_si128(a, pair_differs(k));
  a = _mm_or_si128(a, b);
  uint64_t differ = static_cast<uint64_t>(_mm_cvtsi128_si64(a)) |
                    static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(a, a)));
  const uint64_t* single_at = at + pairs;
  const uint64_t* single_value = value + 2 * pairs;
  for (int j = 0; j < singles; ++j)
    differ |= *reinterpret_cast<const uint64_t*>(single_at[j]) ^ single_value[j];
  return differ;
}

// The same with AVX2 (stack_words.cpp): two twos an operand. Run only where cpu_runs_avx2(). A
// call, not inline: a function that holds 256-bit values may realign its stack, and the walk's
// own frame must keep the layout its first frame is read from (fast_unwinder.cpp).
// Pure (reads memory, writes none): the walk keeps what it loaded before the call.
__attribute__((target("avx2"), pure)) uint64_t stack_words_differ_avx2(const uint64_t* at,
                                                                       const uint64_t* value,
                                                                       int pairs, int singles);

}  // namespace gmemhook

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
// the return address above it), the k-th two at base + at[k] and 8 bytes above, holding value[2k]
// and value[2k + 1]; then `singles` lone words, the j-th at base + at[pairs + j], holding
// value[2 * pairs + j]. A two is read with one 16-byte load, and its one place is all it keeps;
// a place is 4 bytes, the distance from `base` (the walk's own frame: every word a walk reads
// lies above it, within its stack). So the table a check reads is 12 bytes a lone word, 20 a
// two, not 16 and 24 as with whole addresses: a recent walk of libtorch's 27 frames without
// frame pointers is ~28 lone words, and on a hit every line of its table is read. `value` is
// 16-byte aligned. Every address must be readable.

// The bits in which those words differ from their values now: 0 when every one is unchanged.
// Inline: the walk compiled for SSE2 (fast_unwinder.cpp) makes no call in its usual case.
__attribute__((always_inline)) inline uint64_t stack_words_differ_sse2(uint64_t base,
                                                                       const uint32_t* at,
                                                                       const uint64_t* value,
                                                                       int pairs, int singles) {
  const auto pair_differs = [base, at, value](int k) {
    const __m128i now = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + at[k]));
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
  const uint32_t* single_at = at + pairs;
  const uint64_t* single_value = value + 2 * pairs;
  for (int j = 0; j < singles; ++j)
    differ |= *reinterpret_cast<const uint64_t*>(base + single_at[j]) ^ single_value[j];
  return differ;
}

// Two twos of stack words against their four saved values, accumulated: the words' places at
// AT_LO and AT_HI past %1 (4 bytes each, from the base in %7), the values at VALUE past %2,
// through ymmTMP into ymmACC (the operands of stack_words_differ_avx2's assembly).
#define GMEMHOOK_TWO_TWOS(AT_LO, AT_HI, VALUE, TMP, ACC) \
  "mov " AT_LO                                           \
  "(%1), %k3\n\t"                                        \
  "mov " AT_HI                                           \
  "(%1), %k4\n\t"                                        \
  "vmovdqu (%7,%3), %%xmm" TMP                           \
  "\n\t"                                                 \
  "vinserti128 $1, (%7,%4), %%ymm" TMP ", %%ymm" TMP     \
  "\n\t"                                                 \
  "vpxor " VALUE "(%2), %%ymm" TMP ", %%ymm" TMP         \
  "\n\t"                                                 \
  "vpor %%ymm" TMP ", %%ymm" ACC ", %%ymm" ACC "\n\t"

// Two lone stack words, into xmmTMP (the caller compares and ORs it in): their places at AT_LO
// and AT_HI past %1 (from the base in %7).
#define GMEMHOOK_TWO_SINGLES(AT_LO, AT_HI, TMP) \
  "mov " AT_LO                                  \
  "(%1), %k3\n\t"                               \
  "mov " AT_HI                                  \
  "(%1), %k4\n\t"                               \
  "vmovq (%7,%3), %%xmm" TMP                    \
  "\n\t"                                        \
  "vpinsrq $1, (%7,%4), %%xmm" TMP ", %%xmm" TMP "\n\t"

// stack_words_differ_sse2 with AVX2: two twos an operand (the second joins the first in the upper
// half with vinserti128 from memory), against four saved values; lone words four to an operand
// (most frames of code built without frame pointers, libtorch's among them, are lone words:
// a scalar loop was seven instructions a word). Run only where cpu_runs_avx2().
// Inline assembly, not intrinsics: a function compiled for AVX2 may realign its stack, and the
// walk's own frame must keep the layout its first frame is read from (fast_unwinder.cpp); the
// assembly needs no 32-byte stack slot, so the walk inlines it (always: as a call it spilled
// what the walk holds around it) and makes no call. It ends with vzeroupper: the walk around it
// is SSE code. It names "memory": it reads words no operand names (callgrind saw no cost in
// that).
__attribute__((always_inline)) inline uint64_t stack_words_differ_avx2(uint64_t base,
                                                                       const uint32_t* at,
                                                                       const uint64_t* value,
                                                                       int pairs, int singles) {
  const uint32_t* const at_end = at + pairs;
  const uint32_t* const singles_end = at_end + singles;
  const uint32_t* a = at;
  const uint64_t* v = value;
  uint64_t differ, t0, t1;
  // %0 differ, %1 a, %2 v, %3 t0, %4 t1, %5 at_end, %6 singles_end, %7 base. The twos by loads:
  // eight, four, two, one; then the lone words (which follow the twos in both tables, so a and v
  // go on): eight (a frame of libtorch's is a lone word: ~28 of them a capture), four, two,
  // one. A place is loaded into a 32-bit register (which clears the upper half) and added to the
  // base in the address. A 128-bit result is ORed in as its 256-bit register (whose upper half
  // its VEX instruction cleared): a 128-bit vpor would clear the accumulator's upper half.
  __asm__(
      "vpxor %%xmm0, %%xmm0, %%xmm0\n\t"
      "vpxor %%xmm1, %%xmm1, %%xmm1\n\t"
      "lea 32(%1), %3\n\t"  // eight twos fit while a + 8 <= at_end
      "cmp %5, %3\n\t"
      "ja 2f\n"
      "1:\n\t"
      GMEMHOOK_TWO_TWOS("0", "4", "0", "2", "0")
      GMEMHOOK_TWO_TWOS("8", "12", "32", "3", "1")
      GMEMHOOK_TWO_TWOS("16", "20", "64", "2", "0")
      GMEMHOOK_TWO_TWOS("24", "28", "96", "3", "1")
      "add $32, %1\n\t"
      "sub $-128, %2\n\t"
      "lea 32(%1), %3\n\t"
      "cmp %5, %3\n\t"
      "jbe 1b\n"
      "2:\n\t"
      "lea 16(%1), %3\n\t"  // four twos
      "cmp %5, %3\n\t"
      "ja 3f\n\t"
      GMEMHOOK_TWO_TWOS("0", "4", "0", "2", "0")
      GMEMHOOK_TWO_TWOS("8", "12", "32", "3", "1")
      "add $16, %1\n\t"
      "add $64, %2\n"
      "3:\n\t"
      "lea 8(%1), %3\n\t"  // two twos
      "cmp %5, %3\n\t"
      "ja 4f\n\t"
      GMEMHOOK_TWO_TWOS("0", "4", "0", "2", "0")
      "add $8, %1\n\t"
      "add $32, %2\n"
      "4:\n\t"
      "cmp %5, %1\n\t"  // one two
      "jae 5f\n\t"
      "mov (%1), %k3\n\t"
      "vmovdqu (%7,%3), %%xmm2\n\t"
      "vpxor (%2), %%xmm2, %%xmm2\n\t"
      "vpor %%ymm2, %%ymm0, %%ymm0\n\t"
      "add $4, %1\n\t"
      "add $16, %2\n"
      "5:\n\t"
      "lea 32(%1), %3\n\t"  // eight lone words fit while a + 8 <= singles_end
      "cmp %6, %3\n\t"
      "ja 6f\n"
      "10:\n\t"
      GMEMHOOK_TWO_SINGLES("0", "4", "2")
      GMEMHOOK_TWO_SINGLES("8", "12", "3")
      "vinserti128 $1, %%xmm3, %%ymm2, %%ymm2\n\t"
      "vpxor (%2), %%ymm2, %%ymm2\n\t"
      "vpor %%ymm2, %%ymm1, %%ymm1\n\t"
      GMEMHOOK_TWO_SINGLES("16", "20", "4")
      GMEMHOOK_TWO_SINGLES("24", "28", "5")
      "vinserti128 $1, %%xmm5, %%ymm4, %%ymm4\n\t"
      "vpxor 32(%2), %%ymm4, %%ymm4\n\t"
      "vpor %%ymm4, %%ymm0, %%ymm0\n\t"
      "add $32, %1\n\t"
      "add $64, %2\n\t"
      "lea 32(%1), %3\n\t"
      "cmp %6, %3\n\t"
      "jbe 10b\n"
      "6:\n\t"
      "lea 16(%1), %3\n\t"  // four lone words
      "cmp %6, %3\n\t"
      "ja 7f\n\t"
      GMEMHOOK_TWO_SINGLES("0", "4", "2")
      GMEMHOOK_TWO_SINGLES("8", "12", "3")
      "vinserti128 $1, %%xmm3, %%ymm2, %%ymm2\n\t"
      "vpxor (%2), %%ymm2, %%ymm2\n\t"
      "vpor %%ymm2, %%ymm1, %%ymm1\n\t"
      "add $16, %1\n\t"
      "add $32, %2\n"
      "7:\n\t"
      "lea 8(%1), %3\n\t"  // two lone words
      "cmp %6, %3\n\t"
      "ja 8f\n\t"
      GMEMHOOK_TWO_SINGLES("0", "4", "2")
      "vpxor (%2), %%xmm2, %%xmm2\n\t"
      "vpor %%ymm2, %%ymm0, %%ymm0\n\t"
      "add $8, %1\n\t"
      "add $16, %2\n"
      "8:\n\t"
      "vpor %%ymm1, %%ymm0, %%ymm0\n\t"
      "vextracti128 $1, %%ymm0, %%xmm1\n\t"
      "vpor %%xmm1, %%xmm0, %%xmm0\n\t"
      "vmovq %%xmm0, %0\n\t"
      "vpextrq $1, %%xmm0, %3\n\t"
      "or %3, %0\n\t"
      "cmp %6, %1\n\t"  // one lone word
      "jae 9f\n\t"
      "mov (%1), %k3\n\t"
      "mov (%7,%3), %3\n\t"
      "xor (%2), %3\n\t"
      "or %3, %0\n"
      "9:\n\t"
      "vzeroupper"
      : "=&r"(differ), "+&r"(a), "+&r"(v), "=&r"(t0), "=&r"(t1)
      : "r"(at_end), "r"(singles_end), "r"(base)
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "cc", "memory");
  return differ;
}
#undef GMEMHOOK_TWO_SINGLES
#undef GMEMHOOK_TWO_TWOS

}  // namespace gmemhook

// The CPU test that guards the AVX2 check of stack words (stack_words.h).
#include "interposer/capture/stack_words.h"

#include <cpuid.h>

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

}  // namespace gmemhook

// Prints how fast this core runs now, as seen by this thread's CPU time:
//   clock_probe         the clock in GHz: a chain of dependent 64-bit multiplies, each waiting
//                       the 3 cycles of imul's latency on every x86-64 core of the last decade;
//   clock_probe --adds  dependent register adds per ns: the same chain of adds by an immediate,
//                       which newer Intel cores fold at rename (two or more a cycle), and which
//                       an SMT sibling's work slows where a multiply's latency does not.
// scripts/host-bench.sh and scripts/ab-summary.sh run it before each timed round: the GPU
// machine's host runs one build ~1.5x slower at times, and the two readings tell a
// lower clock from a shared core. The fastest of 5 blocks of ~60 ms.
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static double thread_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// Eight dependent multiplies by one (an opaque register: nothing to fold), 24 cycles.
static uint64_t multiplies(uint64_t x, uint64_t one) {
  __asm__ volatile(
      "imul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0\n\t"
      "imul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0"
      : "+r"(x)
      : "r"(one));
  return x;
}

// Eight dependent adds of an immediate.
static uint64_t adds(uint64_t x, uint64_t one) {
  (void)one;
  __asm__ volatile(
      "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
      "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
      : "+r"(x));
  return x;
}

int main(int argc, char** argv) {
  const int by_adds = argc > 1 && strcmp(argv[1], "--adds") == 0;
  uint64_t (*chain)(uint64_t, uint64_t) = by_adds ? adds : multiplies;
  // Per iteration: 24 cycles of multiplies, or 8 adds (one cycle each where nothing folds).
  const double per_iteration = by_adds ? 8 : 24;
  const int iterations = by_adds ? 8 * 1000 * 1000 : 2 * 1000 * 1000;
  volatile uint64_t one_source = 1;  // read at run time: the compiler cannot know it is 1
  const uint64_t one = one_source;
  double best = 0;
  for (int block = 0; block < 5; ++block) {
    uint64_t x = 1;
    const double start = thread_seconds();
    for (int i = 0; i < iterations; ++i) x = chain(x, one);
    const double rate = iterations * per_iteration / (thread_seconds() - start) * 1e-9;
    if (rate > best) best = rate;
    if (x == 0) return 1;  // the chain ran (and x is used)
  }
  printf("%.2f\n", best);
  return 0;
}

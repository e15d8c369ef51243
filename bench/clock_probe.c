// Prints the clock this core runs at now, in GHz, as seen by this thread's CPU time: a chain of
// dependent register adds, one cycle each on any x86-64 core, so cycles / CPU seconds is the clock.
// scripts/host-bench.sh runs it next to each timed command: the GPU machine's host runs the
// same build ~1.4x slower at times (2026-12-02), and this says whether that is the clock.
// Usage: clock_probe  (prints e.g. "2.95"; the fastest of 5 blocks of 32 M cycles, ~60 ms)
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static double thread_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void) {
  enum { kIterations = 4 * 1000 * 1000, kAddsPerIteration = 8, kBlocks = 5 };
  double best = 0;
  for (int block = 0; block < kBlocks; ++block) {
    uint64_t x = 0;
    const double start = thread_seconds();
    for (int i = 0; i < kIterations; ++i)
      // Eight adds, each waiting for the one before: the loop's own counter runs beside them.
      __asm__ volatile(
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
          : "+r"(x));
    const double seconds = thread_seconds() - start;
    const double ghz = (double)kIterations * kAddsPerIteration / seconds * 1e-9;
    if (ghz > best) best = ghz;
    if (x != (uint64_t)kIterations * kAddsPerIteration) return 1;  // the adds ran
  }
  printf("%.2f\n", best);
  return 0;
}

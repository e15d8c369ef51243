/* For bench/callgrind_hook_bench.sh: a CLOCK_MONOTONIC that moves 40 ns a reading, preloaded
   under the hook (which reads clock_gettime with GMEMHOOK_TSC=0). Under callgrind the real clock
   runs slowly and unevenly, so an event's time delta took one byte in one run and several in the
   next: two runs of one build differed by ±20 instructions a pair, more than most changes. With
   this clock every run of a build counts the same. Coarse event times call the vDSO's
   clock_gettime straight (interposer/base/vdso_clock.h), but valgrind hides the vDSO, so under
   callgrind they come here too. */
#include <time.h>

static unsigned long long g_now_ns = 1000000000ull;

int clock_gettime(clockid_t id, struct timespec* ts) {
  (void)id;
  g_now_ns += 40;
  ts->tv_sec = (time_t)(g_now_ns / 1000000000ull);
  ts->tv_nsec = (long)(g_now_ns % 1000000000ull);
  return 0;
}

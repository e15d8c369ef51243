// The kernel's own clock_gettime, found in its vDSO, so that an event's coarse time is one call
// into the vDSO instead of a call into glibc's wrapper, which checks the clock id and converts
// the result before and after the same vDSO call.
#pragma once

#include <time.h>

#include <cstdint>

namespace gmemhook {

using ClockRead = int (*)(clockid_t, timespec*);

// The vDSO image's `__vdso_clock_gettime`, looked up in its dynamic symbol table from the image's
// ELF header at `image` (getauxval(AT_SYSINFO_EHDR) by default); nullptr where there is no vDSO
// (valgrind hides it), no DT_HASH table or no such function: the caller keeps glibc's
// clock_gettime then. Reads the mapped image only: no allocation, no lock, no system call.
ClockRead find_vdso_clock_gettime(uintptr_t image);
ClockRead find_vdso_clock_gettime();

}  // namespace gmemhook

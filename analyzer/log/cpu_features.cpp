// cpuid, read once (see cpu_features.h).
#include "analyzer/log/cpu_features.h"

#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace gmemhook::analysis {

namespace {

bool ask_cpu() {
  if (const char* v = std::getenv("GMEMHOOK_READER_PEXT"); v && std::strcmp(v, "0") == 0)
    return false;
#if defined(__x86_64__)
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx) || eax < 7) return false;
  char vendor[13] = {};
  std::memcpy(vendor, &ebx, 4);
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) || !(ebx & bit_BMI2) || !(ebx & bit_BMI))
    return false;  // BMI1 too: the usual decoder's tzcnt (format.h, word_varint_pext_stop)
  if (std::strcmp(vendor, "AuthenticAMD") == 0 || std::strcmp(vendor, "HygonGenuine") == 0) {
    __get_cpuid(1, &eax, &ebx, &ecx, &edx);
    unsigned family = (eax >> 8) & 0xf;
    if (family == 0xf) family += (eax >> 20) & 0xff;
    return family >= 0x19;  // Zen 3 on; 0x17 is Zen 1 and 2, 0x18 Hygon
  }
  return true;
#else
  return false;
#endif
}

}  // namespace

bool pext_is_fast() {
  static const bool fast = ask_cpu();
  return fast;
}

}  // namespace gmemhook::analysis

// Which of the CPU's optional instructions the reader may use: decided once per process from
// cpuid, so the analyzer runs on any x86-64 and takes the faster path where there is one.
#pragma once

namespace gmemhook::analysis {

// BMI2's `pext` is there and fast (and BMI1's tzcnt, which such CPUs all have): Intel since
// Haswell, AMD since Zen 3. Zen 1 and 2 (and
// Hygon's Zen-1 parts) have it in microcode, one per tens of cycles: slower than the shifts it
// would replace, so they are told no. GMEMHOOK_READER_PEXT=0 says no anywhere (to compare).
bool pext_is_fast();

}  // namespace gmemhook::analysis

// Snapshots of the loaded objects (path, build-id, load bias, PT_LOAD segments) so the analyzer
// can symbolize stacks offline, on another machine with the same binaries.
#pragma once

#include <cstdint>

namespace gmemhook {

class LogFile;

// dl_iterate_phdr's counters of objects ever loaded/unloaded: unchanged counters mean an
// unchanged set of objects.
struct LoadCounters {
  uint64_t adds = 0, subs = 0;
  bool operator==(const LoadCounters&) const = default;
};
LoadCounters current_load_counters();

// Writes ModulesBegin + one Module record per loaded object into `file`.
// `exe_path` names the main program (dl_iterate_phdr reports it with an empty name).
void write_module_snapshot(LogFile& file, uint64_t seq, const char* exe_path);

}  // namespace gmemhook

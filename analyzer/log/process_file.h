// Reads process.gmh: the process header, module snapshots, notes and the End record. The file is
// small (it grows only when objects are loaded), so it is read whole into a ProcessFile.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/log/log_bytes.h"
#include "analyzer/log/read_error.h"
#include "analyzer/log/record_cursor.h"
#include "analyzer/log/records.h"
#include "gmemhook/format.h"

namespace gmemhook::analysis {

// The loaded objects at one point in time; the next snapshot replaces it from `seq` on.
struct ModuleSnapshot {
  uint64_t seq = 0;
  uint64_t offset = 0;    // of its ModulesBegin record
  uint64_t declared = 0;  // modules the ModulesBegin record announced
  std::vector<Module> modules;

  // False when the file ended before all announced Module records were committed.
  bool complete() const { return modules.size() == declared; }
};

struct ProcessFile {
  format::FileHeader header{};
  ProcessInfo info;
  std::vector<ModuleSnapshot> snapshots;
  std::vector<Note> notes;
  std::vector<NvmlSample> nvml_samples;   // in file order (version 5; none before)
  std::optional<EndRecord> end;           // absent: the process was killed or crashed
  uint64_t end_offset = 0;                // of the End record, when there is one
  std::vector<ChunkDamage> damaged;       // chunks not read, their seal did not match
  std::optional<UnsealedChunk> unsealed;  // the last chunk, read without a check
  StreamEnd stream_end = StreamEnd::NotYet;
  uint64_t data_end = 0;  // where the committed data stops
};

// Throws ReadError when the file is missing its header or ProcessInfo, or is damaged; appends
// to `warnings` what was cut short (a truncated tail, an unfinished module snapshot).
ProcessFile read_process_file(const LogBytes& file, std::vector<ReadWarning>& warnings);

}  // namespace gmemhook::analysis

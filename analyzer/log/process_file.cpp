// Decodes process.gmh record by record, enforcing which records may appear where.
#include "analyzer/log/process_file.h"

namespace gmemhook::analysis {

using format::RecordType;

namespace {

// `open_from`: snapshots before it were cut by a damaged chunk and take no more modules.
void check_previous_snapshot_complete(const ProcessFile& p, const LogBytes& file, const Record& r,
                                      size_t open_from) {
  if (p.snapshots.size() <= open_from || p.snapshots.back().complete()) return;
  const ModuleSnapshot& s = p.snapshots.back();
  throw ReadError(file.name(), r.offset,
                  "expected module record " + std::to_string(s.modules.size() + 1) + " of " +
                      std::to_string(s.declared) + " (announced at offset " +
                      std::to_string(s.offset) + "), found " + a_record(r.type));
}

}  // namespace

ProcessFile read_process_file(const LogBytes& file, std::vector<ReadWarning>& warnings) {
  ProcessFile p;
  auto header = read_file_header(file, format::FileKind::Process);
  if (!header)
    throw NothingRecordedError(
        file.name(), 0,
        "expected a file header, the file holds no data (the process was probably "
        "killed while starting)");
  p.header = *header;

  RecordCursor cursor(file, p.header);
  Record r;
  if (!cursor.next(&r)) {
    if (cursor.end() == StreamEnd::DamagedChunk)  // the process itself is unknown: nothing to use
      throw ReadError(file.name(), cursor.damage().warning.offset, cursor.damage().warning.message);
    throw NothingRecordedError(file.name(), cursor.offset(),
                               "expected a process-info record, found no committed data (the "
                               "process was probably killed while starting)");
  }
  if (r.type != static_cast<uint8_t>(RecordType::ProcessInfo))
    throw ReadError(file.name(), r.offset,
                    "expected a process-info record first, found " + a_record(r.type));
  p.info = decode_process_info(r, file.name());

  // After a damaged chunk (each record here stands alone, so the rest of the file reads as
  // written): a snapshot it cut takes no more modules, whose ModulesBegin it may have held, and
  // modules with no snapshot of their own are skipped up to the next ModulesBegin.
  size_t open_from = 0;
  uint64_t orphan_modules = 0;
  for (;; cursor.skip_damaged_chunk()) {
    while (cursor.next(&r)) {
      switch (static_cast<RecordType>(r.type)) {
        case RecordType::ModulesBegin: {
          check_previous_snapshot_complete(p, file, r, open_from);
          ModulesBegin b = decode_modules_begin(r, file.name());
          p.snapshots.push_back(ModuleSnapshot{b.seq, r.offset, b.count, {}});
          break;
        }
        case RecordType::Module: {
          if (!p.damaged.empty() && p.snapshots.size() <= open_from) {
            ++orphan_modules;
            break;
          }
          if (p.snapshots.empty() || p.snapshots.back().complete())
            throw ReadError(file.name(), r.offset,
                            "expected a modules-begin record before this module record");
          p.snapshots.back().modules.push_back(decode_module(r, file.name()));
          break;
        }
        case RecordType::Note:
          check_previous_snapshot_complete(p, file, r, open_from);
          p.notes.push_back(decode_note(r, file.name()));
          break;
        case RecordType::NvmlSample:
          check_previous_snapshot_complete(p, file, r, open_from);
          p.nvml_samples.push_back(decode_nvml_sample(r, file.name()));
          break;
        case RecordType::End:
          // No check that the snapshot before it is complete: when process.gmh cannot grow (disk
          // full, a file-size limit) the writer stops its records wherever the chunk ran out,
          // inside a module snapshot too, and still writes the End record in the room it kept for
          // it. The cut snapshot is said below ("only N were committed"), the rest is read.
          // Several End records can only come from a writer bug; the last one is the latest state.
          p.end = decode_end(r, file.name());
          p.end_offset = r.offset;
          break;
        default:
          throw ReadError(
              file.name(), r.offset,
              "expected a process-file record (modules, note, nvml sample, end), found " +
                  a_record(r.type));
      }
    }
    if (cursor.end() != StreamEnd::DamagedChunk) break;
    p.damaged.push_back(cursor.damage());
    warnings.push_back(cursor.damage().warning);
    open_from = p.snapshots.size();
  }
  p.stream_end = cursor.end();
  p.data_end = cursor.offset();
  p.unsealed = cursor.unsealed_chunk();

  if (orphan_modules)
    warnings.push_back({file.name(), p.damaged.front().warning.offset,
                        std::to_string(orphan_modules) +
                            " module records after a damaged chunk belong to a module snapshot "
                            "it interrupted; skipped"});
  if (p.stream_end == StreamEnd::TruncatedTail)
    warnings.push_back(
        {file.name(), p.data_end,
         "file ends inside a record (truncated tail); the records before it are used"});
  if (!p.snapshots.empty() && !p.snapshots.back().complete()) {
    const ModuleSnapshot& s = p.snapshots.back();
    warnings.push_back(
        {file.name(), s.offset,
         "module snapshot announced " + std::to_string(s.declared) + " modules, only " +
             std::to_string(s.modules.size()) +
             (p.snapshots.size() <= open_from ? " were read (the rest were in a damaged chunk)"
                                              : " were committed")});
  }
  return p;
}

}  // namespace gmemhook::analysis

// Reads one traced process: process.gmh up front, then its thread files' events merged into one
// stream in sequence order. This is the entry point every report builds on.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "analyzer/log/event_visitor.h"
#include "analyzer/log/log_bytes.h"
#include "analyzer/log/process_file.h"
#include "analyzer/log/read_error.h"
#include "analyzer/log/records.h"
#include "analyzer/log/run_dir.h"
#include "analyzer/log/thread_file_reader.h"
#include "gmemhook/codec.h"

namespace gmemhook::analysis {

class ProcessReader {
 public:
  // Opens <dir>/process.gmh and every <dir>/thread.<tid>.gmh. Throws ReadError.
  static ProcessReader open(const std::filesystem::path& dir);
  // The same from bytes already in memory (tests, the fuzzer); threads in the order given.
  static ProcessReader from_logs(LogBytes process, std::vector<LogBytes> threads);

  ProcessReader(ProcessReader&&) = default;
  ProcessReader& operator=(ProcessReader&&) = default;

  const ProcessFile& process() const { return process_; }
  const ProcessInfo& info() const { return process_.info; }
  const std::vector<ModuleSnapshot>& module_snapshots() const { return process_.snapshots; }
  const std::vector<Note>& notes() const { return process_.notes; }
  // What NVML (nvidia-smi's library) said while the process ran; never allocations.
  const std::vector<NvmlSample>& nvml_samples() const { return process_.nvml_samples; }
  const std::optional<EndRecord>& end() const { return process_.end; }
  // CLOCK_MONOTONIC when the process file was created: the zero of a report's time axis.
  uint64_t start_ns() const { return process_.header.start_monotonic_ns; }
  // The step of the events' times (format.h: the kernel's tick with coarse times), 1 where each
  // event has its own time or the log does not say.
  uint64_t time_step_ns() const { return std::max<uint64_t>(1, process_.header.time_step_ns); }
  const std::string& process_file_name() const { return process_name_; }

  size_t thread_count() const { return threads_.size(); }
  const ThreadFileReader& thread(size_t index) const { return *threads_[index]; }
  // Frames of stack `stack_id` in thread file `thread_index` (read during a pass).
  std::span<const uint64_t> stack(size_t thread_index, uint32_t stack_id) const;

  // One pass over all events of all thread files in increasing seq order (a k-way merge; each
  // file is read incrementally). Can be repeated. Throws ReadError on damage, including the same
  // seq in two files.
  void read_events(EventVisitor& v);
  void for_each_event(const std::function<void(const format::Event&, const ThreadFileReader&)>& fn);

  // After a pass: events delivered and the highest seq seen (0 when none).
  uint64_t events_read() const { return events_read_; }
  uint64_t last_seq() const { return last_seq_; }
  // After a pass: the seq of the last event before the first missing sequence number (every
  // event takes one, so a hole is an event that was never written), or nullopt when none is.
  std::optional<uint64_t> first_gap_after() const { return first_gap_after_; }
  // After a pass: chunks whose seal did not match (format.h, "Chunk seals"), process file
  // included, and the bytes they held; none was read.
  uint64_t damaged_chunks() const { return damaged_chunks_; }
  uint64_t damaged_bytes() const { return damaged_bytes_; }
  // After a pass: events found after a damaged chunk of their thread file, counted but not read
  // (ThreadFileReader::undecoded_events says why).
  uint64_t undecoded_events() const { return undecoded_events_; }

  // After a pass: the chunks read without a seal check, process file first, each named by its
  // file (at most one a file: its last chunk). Not damage: a thread writing to its log when the
  // process ended, or a process killed, leaves its last chunk so (format.h, "Chunk seals").
  struct Unsealed {
    std::string file;
    UnsealedChunk chunk;
  };
  std::vector<Unsealed> unsealed_chunks() const;

  // What was cut short but still used: truncated tails, unfinished snapshots, empty thread
  // files. Pass-time warnings are refreshed by each pass.
  std::vector<ReadWarning> warnings() const;

 private:
  ProcessReader() = default;
  void add_thread(LogBytes file);
  template <class Heads>
  void merge_with(EventVisitor& v);
  // Heads: MergeScan up to its 16 files, MergeHeads beyond.
  template <bool kPext, bool kAnnounce, class Heads>
  void merge_events(EventVisitor& v);

  std::string process_name_;
  ProcessFile process_;
  std::vector<std::unique_ptr<ThreadFileReader>> threads_;
  std::vector<ReadWarning> open_warnings_;
  std::vector<ReadWarning> pass_warnings_;
  uint64_t events_read_ = 0;
  uint64_t last_seq_ = 0;
  std::optional<uint64_t> first_gap_after_;
  uint64_t damaged_chunks_ = 0;
  uint64_t damaged_bytes_ = 0;
  uint64_t undecoded_events_ = 0;
};

// "process 48213 ended abruptly after record 17 (killed or crashed)" when the process file has
// no End record; nullopt when it has one. Meaningful after a pass.
std::optional<std::string> abrupt_end_message(const ProcessReader& r);

// Events the log lacks: sequence numbers handed out (up to the End record's, or the last event's
// when there is none) that no thread file holds, and what the recorder itself counted as not
// written. A killed process may leave one event per thread half-written: those are not counted.
// Meaningful after a pass.
struct MissingEvents {
  uint64_t count = 0;           // at least this many
  uint64_t after_seq = 0;       // the last event recorded before the first missing one
  int write_error = 0;          // errno the recorder reported, 0 when unknown
  uint64_t damaged_chunks = 0;  // chunks not read because their checksum failed
  uint64_t damaged_bytes = 0;   // what those chunks held, in bytes
  uint64_t undecoded = 0;       // events after them, counted but not decoded (not in `count`)
};
std::optional<MissingEvents> missing_events(const ProcessReader& r);
// "log incomplete: ≥ 1234 events not recorded after event 95182 (the recorder could not write:
// No space left on device)", "log incomplete: 1 damaged chunk not read (4096 bytes, see the
// warnings); 1880 events after it not decoded (...); ≥ 120 events missing after event 95182",
// or nullopt for a complete log.
std::optional<std::string> incomplete_log_message(const ProcessReader& r);

}  // namespace gmemhook::analysis

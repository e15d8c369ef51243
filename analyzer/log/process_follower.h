// Reads one traced process while it is still running (gmemhook top): each call picks up what was
// committed since the last one — new thread files, records appended to known ones — and hands the
// new events on in sequence order. Files are never read again from the start: each thread file
// keeps its cursor and its decoding state between calls.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <vector>

#include "analyzer/log/event_visitor.h"
#include "analyzer/log/log_bytes.h"
#include "analyzer/log/process_file.h"
#include "analyzer/log/thread_file_reader.h"

namespace gmemhook::analysis {

class ProcessFollower {
 public:
  explicit ProcessFollower(std::filesystem::path dir);

  // Looks for what was written since the last call: the process file (module snapshots, the End
  // record) and thread files not seen yet. False while the process file holds no process-info
  // record yet (the process is starting). Throws ReadError when the process file is damaged.
  bool refresh();
  bool ready() const { return ready_; }

  // Hands `v` the events committed since the last call, in increasing seq. An event whose seq
  // is not the next one may still be preceded by one another thread has taken but not written
  // yet, so it waits — until `gap_wait_ns` (CLOCK_MONOTONIC) passed since the gap was first met,
  // or at once when `writer_done` (the process ended: no missing event can still come). Returns
  // the number of events delivered. Throws ReadError on damage.
  uint64_t read_new_events(EventVisitor& v, uint64_t now_ns, uint64_t gap_wait_ns,
                           bool writer_done);
  // Whether the last read_new_events() stopped at a gap it is still waiting on.
  bool waiting_at_gap() const { return gap_since_ns_ != 0; }

  const std::filesystem::path& dir() const { return dir_; }
  const ProcessFile& process() const { return process_; }
  size_t thread_count() const { return threads_.size(); }
  // Thread files in the order they were found: the index stays the same for the whole follow.
  const ThreadFileReader& thread(size_t index) const { return *threads_[index]; }
  uint64_t events_read() const { return events_read_; }
  uint64_t last_seq() const { return last_seq_; }
  // Events that arrived after a later one had been delivered (a gap waited out, then filled).
  uint64_t late_events() const { return late_events_; }

 private:
  void find_new_threads();

  std::filesystem::path dir_;
  bool ready_ = false;
  std::optional<LogBytes> process_bytes_;
  ProcessFile process_;
  std::vector<std::unique_ptr<ThreadFileReader>> threads_;
  std::set<std::string> known_files_;  // thread files opened (file names)
  // Threads whose current() is read but not delivered, by (seq, index); the others are at the
  // end of their committed data and are looked at again on the next call.
  using Head = std::pair<uint64_t, size_t>;
  std::priority_queue<Head, std::vector<Head>, std::greater<>> heads_;
  std::vector<bool> has_head_;
  uint64_t events_read_ = 0, last_seq_ = 0, late_events_ = 0;
  uint64_t gap_since_ns_ = 0;  // when the gap after last_seq_ was first met (0: none)
};

}  // namespace gmemhook::analysis

// One thread file (thread.<tid>.gmh) read incrementally: the merge in ProcessReader pulls one
// event at a time, so memory grows with the file's stacks, never with its event count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "analyzer/event_visitor.h"
#include "analyzer/log_bytes.h"
#include "analyzer/read_error.h"
#include "analyzer/record_cursor.h"
#include "analyzer/records.h"
#include "analyzer/stack_table.h"
#include "gmemhook/codec.h"

namespace gmemhook::analysis {

class ThreadLog {
 public:
  // Checks the header; the log is positioned before its first record. Throws ReadError.
  ThreadLog(LogBytes file, const format::FileHeader& header, size_t index);
  ThreadLog(const ThreadLog&) = delete;
  ThreadLog& operator=(const ThreadLog&) = delete;

  const std::string& name() const { return file_.name(); }
  const format::FileHeader& header() const { return header_; }
  uint64_t tid() const { return header_.tid; }
  // Position among the process's thread files (sorted by tid): a stable key for analyses that
  // remember (thread, stack id) pairs.
  size_t index() const { return index_; }

  // Stacks and notes read so far. After a full pass these are all of the file's.
  const StackTable& stacks() const { return stacks_; }
  std::span<const uint64_t> stack(uint32_t id) const { return stacks_.frames(id); }
  const std::vector<Note>& notes() const { return notes_; }

  uint64_t events_read() const { return events_read_; }
  uint64_t last_seq() const { return deltas_.last_seq; }
  // How the stream ended, once advance() returned false.
  StreamEnd stream_end() const { return cursor_.end(); }
  uint64_t data_end() const { return cursor_.offset(); }

  // Driving a pass (ProcessReader does this): rewind(), then advance() until it returns false.
  void rewind();
  // Reads up to and including the next event; false at the end of committed data. Stacks and
  // notes met on the way are stored and queued for deliver_pending(). Throws ReadError on damage.
  bool advance();
  const format::Event& current() const { return current_; }
  uint64_t current_offset() const { return current_offset_; }
  // Hands the stacks and notes queued since the last call to `v`, in file order.
  void deliver_pending(EventVisitor& v);

 private:
  struct Pending {
    bool is_stack;
    uint32_t index;  // stack id, or index into notes_
  };
  [[noreturn]] void damage(uint64_t offset, const std::string& expected) const;
  void read_event(const Record& r);
  void read_stack(const Record& r);

  LogBytes file_;
  format::FileHeader header_;
  size_t index_;
  RecordCursor cursor_;
  format::EventDeltas deltas_;
  format::Event current_;
  uint64_t current_offset_ = 0;
  uint64_t events_read_ = 0;
  StackTable stacks_;
  std::vector<Note> notes_;
  std::vector<Pending> pending_;
  std::vector<uint64_t> frame_scratch_;
};

}  // namespace gmemhook::analysis

// One thread file (thread.<tid>.gmh) read incrementally: the merge in ProcessReader pulls one
// event at a time, so memory grows with the file's stacks, never with its event count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "analyzer/log/event_visitor.h"
#include "analyzer/log/log_bytes.h"
#include "analyzer/log/read_error.h"
#include "analyzer/log/record_cursor.h"
#include "analyzer/log/records.h"
#include "analyzer/log/thread_file_stacks.h"
#include "gmemhook/codec.h"

namespace gmemhook::analysis {

// A usual event as ThreadFileReader holds it (format::UsualEvent and the file's running values):
// what the replay of an allocation or a free needs, read without filling an Event. Valid until the
// reader's next advance().
class UsualEventRef {
 public:
  UsualEventRef(const format::UsualEvent& u, const format::EventDeltas& d) : u_(u), d_(d) {}
  uint8_t api() const { return u_.api; }
  uint64_t seq() const { return d_.last_seq; }
  uint64_t time_ns() const { return d_.last_time_ns; }
  uint32_t stack_id() const { return u_.stack_id; }
  bool has(format::EventField f) const { return u_.mask & f; }
  // As in the Event: 0 (device -1) where the event has none.
  uint64_t address() const { return has(format::kHasAddress) ? d_.last_address : 0; }
  uint64_t size() const { return u_.size; }
  uint64_t stream() const { return has(format::kHasStream) ? d_.last_stream : 0; }
  int32_t device() const { return has(format::kHasDevice) ? d_.last_device : -1; }

 private:
  const format::UsualEvent& u_;
  const format::EventDeltas& d_;
};

class ThreadFileReader {
 public:
  // Checks the header; the log is positioned before its first record. Throws ReadError.
  ThreadFileReader(LogBytes file, const format::FileHeader& header, size_t index);
  ThreadFileReader(const ThreadFileReader&) = delete;
  ThreadFileReader& operator=(const ThreadFileReader&) = delete;

  const std::string& name() const { return file_.name(); }
  const format::FileHeader& header() const { return header_; }
  uint64_t tid() const { return header_.tid; }
  // Position among the process's thread files (sorted by tid): a stable key for analyses that
  // remember (thread, stack id) pairs.
  size_t index() const { return index_; }

  // Stacks, code objects and notes read so far. After a full pass these are all of the file's.
  const ThreadFileStacks& stacks() const { return stacks_; }
  std::span<const uint64_t> stack(uint32_t id) const { return stacks_.frames(id); }
  // Python frames of stack `stack_id`, innermost first; their code ids resolve with py_code().
  std::span<const PyFrameRef> python_frames(uint32_t stack_id) const {
    return stacks_.python_frames(stack_id);
  }
  // The PyCode record `code_id` of this file, or nullptr when there is none (yet).
  const PyCode* py_code(uint32_t code_id) const {
    return code_id >= 1 && code_id <= py_codes_.size() ? &py_codes_[code_id - 1] : nullptr;
  }
  size_t py_code_count() const { return py_codes_.size(); }
  const std::vector<Note>& notes() const { return notes_; }

  uint64_t events_read() const { return events_read_; }
  uint64_t last_seq() const { return deltas_.last_seq; }
  // How the stream ended, once advance() returned false.
  StreamEnd stream_end() const { return cursor_.end(); }
  uint64_t data_end() const { return cursor_.offset(); }
  // Chunks whose seal did not match (format.h, "Chunk seals"), in file order; read so far in
  // this pass.
  const std::vector<ChunkDamage>& damaged_chunks() const { return damaged_; }
  // Events after the first damaged chunk: framed and counted, never decoded. Format 8 stores each
  // event as differences from the file's earlier ones (seq, time, address, stream, allocator
  // totals, device, each api's fields), and nothing after a chunk boundary restates them: what
  // the lost chunk held would be needed to know any of their numbers.
  uint64_t undecoded_events() const { return undecoded_; }
  // The file's last chunk when it had no seal and records were read from it (its thread was still
  // running when the process ended, or the process was killed).
  std::optional<UnsealedChunk> unsealed_chunk() const { return cursor_.unsealed_chunk(); }

  // Driving a pass (ProcessReader does this): rewind(), then advance() until it returns false.
  void rewind();
  // Reads up to and including the next event; false at the end of committed data. Stacks, code
  // objects and notes met on the way are stored and queued for deliver_pending(). Throws
  // ReadError on damage. kPext decodes with BMI2's pext: only where pext_is_fast()
  // (cpu_features.h); the events are the same either way.
  template <bool kPext = false>
  bool advance() {
    // The usual record, an event in a chunk already checked: framed and read in one call.
    if (damaged_.empty() && read_next_event<kPext>()) return true;
    return advance_through_records();
  }
  // The event the last true advance() read. For a usual event (current_is_usual()) the whole
  // Event is filled on the first call only: usual() has its numbers without it.
  const format::Event& current() const {
    if (usual_unfilled_) fill_current();
    return current_;
  }
  uint64_t current_seq() const { return deltas_.last_seq; }
  // Whether the current event is a usual one (format::UsualEvent: an allocation or a free of the
  // shapes nearly every event has), whose numbers usual() reads where the decoder left them.
  bool current_is_usual() const { return usual_is_current_; }
  UsualEventRef usual() const { return UsualEventRef(usual_, deltas_); }
  // What EventVisitor::upcoming wants of the current event, usual or not.
  uint64_t current_address() const {
    if (usual_is_current_) return usual().address();
    return current_.f.has(format::kHasAddress) ? current_.f.address : 0;
  }
  uint32_t current_stack_id() const {
    return usual_is_current_ ? usual_.stack_id : current_.stack_id;
  }
  uint64_t current_offset() const { return current_offset_; }
  // Hands the stacks, code objects and notes queued since the last call to `v`, in file order.
  void deliver_pending(EventVisitor& v) {
    if (!pending_.empty()) deliver_queued(v);
  }

  // Following a file still being written (gmemhook top): set_live() once, before reading; then,
  // whenever advance() returned false, follow() maps what the writer appended since and lets the
  // next advance() go on from where the last one stopped (never from the start).
  void set_live() { cursor_.set_live(true); }
  void follow();

 private:
  struct Pending {
    enum Kind : uint8_t { Stack, PyCode, Note } kind;
    uint32_t index;  // stack id, code id, or index into notes_
  };
  [[noreturn]] void damage(uint64_t offset, const std::string& expected) const;
  void read_note(const Record& r);
  [[noreturn]] void unexpected_record(const Record& r) const;
  void check_event_size(const Record& r) const {
    if (r.payload.size() < kMinEventPayload || r.payload.size() > format::kMaxEventPayload)
      bad_event_size(r);
  }
  [[noreturn]] void bad_event_size(const Record& r) const;
  // The smallest event is the api and the time (version 8; before: four more varints and the
  // field mask).
  static constexpr size_t kMinEventPayload = 2;
  // kFramedInline: `r` is a record RecordCursor::next_event framed (see read_next_event).
  template <bool kPext, bool kFramedInline = false>
  void read_event(const Record& r);
  // advance()'s usual way: the record RecordCursor::next_event frames (an event in a chunk already
  // checked), read as read_event reads it; false, with nothing moved, for any other. One call
  // with the framing inside: the Record stays in registers instead of being stored by the framing
  // and loaded back by read_event.
  template <bool kPext>
  bool read_next_event();
  // advance() for every other record, and the end of the stream.
  bool advance_through_records();
  void deliver_queued(EventVisitor& v);
  void read_stack(const Record& r);
  void read_py_code(const Record& r);
  // From a damaged chunk on: skips it (and any later damaged one) and reads the rest of the file
  // as far as it can be read without the lost records (see undecoded_events).
  void read_after_damage();
  // One record of the rest: counts an event, keeps a note. False at the end of the stream.
  bool skip_record_after_damage();

  LogBytes file_;
  format::FileHeader header_;
  size_t index_;
  RecordCursor cursor_;
  format::EventDeltas deltas_;
  // Each event is decoded into current_ itself: a local Event would be zeroed for every event
  // (128 bytes, a `rep stos`, a tenth of `gmemhook summary`'s time), and a copy costs half that.
  // A usual event is decoded into usual_ (and deltas_) instead, and current_ filled from them
  // only when asked for (mutable: current() is const for its readers).
  mutable format::Event current_;
  format::UsualEvent usual_;
  bool usual_is_current_ = false;
  mutable bool usual_unfilled_ = false;  // current_ does not hold the usual current event yet
  void fill_current() const {
    format::expand_usual_event(usual_, deltas_, &current_);
    usual_unfilled_ = false;
  }
  uint64_t current_offset_ = 0;
  uint64_t events_read_ = 0;
  ThreadFileStacks stacks_;
  std::vector<PyCode> py_codes_;  // id i at [i - 1]
  std::vector<Note> notes_;
  std::vector<Pending> pending_;
  std::vector<ChunkDamage> damaged_;
  uint64_t undecoded_ = 0;
  std::vector<uint64_t> frame_scratch_;
  std::vector<PyFrameRef> py_frame_scratch_;
};

}  // namespace gmemhook::analysis

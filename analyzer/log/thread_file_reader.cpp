// Incremental decoding of one thread file: events, interned stacks, Python code objects and notes.
#include "analyzer/log/thread_file_reader.h"

#include "analyzer/log/records.h"

namespace gmemhook::analysis {

using format::RecordType;

ThreadFileReader::ThreadFileReader(LogBytes file, const format::FileHeader& header, size_t index)
    : file_(std::move(file)), header_(header), index_(index), cursor_(file_, header) {
  rewind();
}

void ThreadFileReader::rewind() {
  file_.restart();
  cursor_.rewind();
  deltas_ = format::EventDeltas{};
  deltas_.last_time_ns = header_.start_monotonic_ns;
  deltas_.version = header_.version;
  current_ = format::Event{};
  usual_is_current_ = usual_unfilled_ = false;
  current_offset_ = 0;
  events_read_ = 0;
  stacks_.clear();
  py_codes_.clear();
  notes_.clear();
  pending_.clear();
  damaged_.clear();
  undecoded_ = 0;
}

void ThreadFileReader::follow() {
  file_.refresh();
  cursor_.resume();
}

void ThreadFileReader::damage(uint64_t offset, const std::string& expected) const {
  throw ReadError(file_.name(), offset, expected);
}

bool ThreadFileReader::advance_through_records() {
  if (!damaged_.empty()) {  // followed live (gmemhook top): what was appended since
    read_after_damage();
    return false;
  }
  Record r;
  while (cursor_.next(&r)) {
    if (format::is_event_type(r.type, header_.version)) {
      read_event<false>(r);
      file_.release_before(r.offset);
      return true;
    }
    switch (static_cast<RecordType>(r.type)) {
      case RecordType::Stack:
        read_stack(r);
        break;
      case RecordType::PyCode:
        read_py_code(r);
        break;
      case RecordType::Note:
        read_note(r);
        break;
      default:
        unexpected_record(r);
    }
  }
  if (cursor_.end() == StreamEnd::DamagedChunk) read_after_damage();
  return false;
}

void ThreadFileReader::read_after_damage() {
  for (;;) {
    if (cursor_.end() == StreamEnd::DamagedChunk) {
      damaged_.push_back(cursor_.damage());
      cursor_.skip_damaged_chunk();
    }
    try {
      if (!skip_record_after_damage()) return;
    } catch (const ReadError& e) {
      // Past one damaged chunk a later one may be garbled too (an unsealed tail cannot say so
      // by its seal): the same kind of loss, not a reason to refuse the whole process.
      cursor_.declare_damaged(e);
    }
  }
}

bool ThreadFileReader::skip_record_after_damage() {
  Record r;
  if (!cursor_.next(&r)) return cursor_.end() == StreamEnd::DamagedChunk;
  if (format::is_event_type(r.type, header_.version)) {
    check_event_size(r);
    ++undecoded_;
    return true;
  }
  switch (static_cast<RecordType>(r.type)) {
    case RecordType::Stack:
    case RecordType::PyCode:
      break;  // only events refer to them, and none can be decoded
    case RecordType::Note:
      read_note(r);
      break;
    default:
      unexpected_record(r);
  }
  return true;
}

void ThreadFileReader::read_note(const Record& r) {
  notes_.push_back(decode_note(r, file_.name()));
  pending_.push_back({Pending::Note, static_cast<uint32_t>(notes_.size() - 1)});
}

void ThreadFileReader::unexpected_record(const Record& r) const {
  damage(r.offset, "expected a thread-file record (event, stack, py-code, note), found " +
                       a_record(r.type));
}

void ThreadFileReader::bad_event_size(const Record& r) const {
  damage(r.offset, "event record: payload malformed (expected " + std::to_string(kMinEventPayload) +
                       ".." + std::to_string(format::kMaxEventPayload) + " bytes, got " +
                       std::to_string(r.payload.size()) + ")");
}

namespace {

// The usual version-8 event's decoder with everything it calls inlined, itself inlined into its
// one caller: GCC had kept decode_usual_event_v8 a call of its own (six saved registers and
// their restores an event).
template <bool kPext, bool kFramedInline>
[[gnu::flatten, gnu::always_inline]] inline bool decode_usual_event(const Record& r,
                                                                    format::UsualEvent* ev,
                                                                    format::EventDeltas& d,
                                                                    const LogBytes& file) {
  const uint8_t* p = r.payload.data();
  const size_t n = r.payload.size();
  // Its callers framed an event record of this file's version already (RecordCursor::next_event,
  // or advance_through_records' own test): is_event_type is not asked again.
  const uint8_t head = r.type & format::kEventHeadBits;
  if constexpr (kFramedInline) {
    // next_event frames only version-8 records with kMaxSmallPayload bytes of the file after
    // their header: the 64 the decoder may load past a payload are there for any it can take
    // (it takes at most 57 bytes).
    static_assert(format::kMaxSmallPayload - 64 >= 57);
    return n <= format::kMaxSmallPayload - 64 &&
           format::decode_usual_event_v8<kPext>(head, p, n, ev, d);
  } else {
    // The decoder may load past the payload up to the end of the file's bytes (never uses them).
    const size_t readable = static_cast<size_t>(file.bytes().data() + file.size() - p);
    return d.version >= format::kFirstHeadVersion && readable >= n + 64 &&
           format::decode_usual_event_v8<kPext>(head, p, n, ev, d);
  }
}

}  // namespace

// Flattened: decode_usual_event's own flatten no longer applies once it is inlined here, and
// the usual decoder would be a call of its own again (see there).
template <bool kPext, bool kFramedInline>
[[gnu::flatten]] void ThreadFileReader::read_event(const Record& r) {
  const uint64_t previous_seq = deltas_.last_seq;
  // Everything but the usual event's path is out of line (a lambda: the header stays as it is):
  // inlined, the general decoder and the messages' strings made this function save six
  // registers and keep a 248-byte frame for every event (~20 instructions an event).
  // Each takes what it needs as arguments: a lambda that captured locals by reference made
  // the hot path keep them in memory.
  // The Record by value: a reference would keep the hot path's Record in memory (stored zeroed
  // by the framing, then stored again) instead of registers.
  auto read_other_event = [this](Record r) __attribute__((noinline, cold)) {
    check_event_size(r);
    // decode_event tries the usual decoder first too: refused above, it is refused there alike
    // (it changes nothing when it refuses), so the two calls accept exactly what one would.
    // Decoded in place: damage throws, and the merge reads the event only after a true
    // advance().
    const size_t n = r.payload.size();
    const size_t readable =
        static_cast<size_t>(file_.bytes().data() + file_.size() - r.payload.data());
    if (!format::decode_event<kPext>(r.type, r.payload.data(), n, &current_, deltas_, readable))
      damage(r.offset, "event record: payload malformed (" + std::to_string(n) +
                           " bytes do not decode as an event)");
    usual_is_current_ = usual_unfilled_ = false;
    return current_.stack_id;
  };
  uint32_t stack_id;
  // The usual decoder takes only payloads of 2 to 57 bytes: check_event_size's limits hold for
  // every event it takes, and one it refuses is checked by read_other_event first, as before.
  if (decode_usual_event<kPext, kFramedInline>(r, &usual_, deltas_, file_)) [[likely]] {
    usual_is_current_ = usual_unfilled_ = true;
    stack_id = usual_.stack_id;
  } else {
    stack_id = read_other_event(r);
  }
  // decode_event rejects a zero delta; a delta that wraps past 2^64 is the remaining way for
  // seq to go backwards. (Both decoders leave the event's seq in deltas_.)
  auto seq_went_back = [this](uint64_t offset, uint64_t previous)
      __attribute__((noinline, cold, noreturn)) {
    damage(offset, "event record: expected seq > " + std::to_string(previous) + ", got " +
                       std::to_string(deltas_.last_seq));
  };
  if (deltas_.last_seq <= previous_seq) [[unlikely]]
    seq_went_back(r.offset, previous_seq);
  auto unknown_stack = [this](uint64_t offset, uint32_t id)
      __attribute__((noinline, cold, noreturn)) {
    damage(offset, "event record: expected a stack id recorded earlier in this file (1.." +
                       std::to_string(stacks_.size()) + " or 0), got " + std::to_string(id));
  };
  if (stack_id != 0 && !stacks_.contains(stack_id)) [[unlikely]]
    unknown_stack(r.offset, stack_id);
  current_offset_ = r.offset;
  ++events_read_;
}
template void ThreadFileReader::read_event<false>(const Record& r);

template <bool kPext>
[[gnu::flatten]] bool ThreadFileReader::read_next_event() {
  Record r;
  if (!cursor_.next_event(&r)) return false;
  read_event<kPext, true>(r);
  file_.release_before(r.offset);
  return true;
}
template bool ThreadFileReader::read_next_event<false>();
template bool ThreadFileReader::read_next_event<true>();

void ThreadFileReader::read_stack(const Record& r) {
  uint32_t id = decode_stack(r, file_.name(), frame_scratch_, py_frame_scratch_);
  if (id != stacks_.next_id())
    damage(r.offset, "stack record: expected id " + std::to_string(stacks_.next_id()) +
                         " (ids count up from 1 in order of first use), got " + std::to_string(id));
  for (const PyFrameRef& f : py_frame_scratch_)
    if (!py_code(f.code_id))
      damage(r.offset,
             "stack record: expected python frame code ids recorded earlier in this file (1.." +
                 std::to_string(py_codes_.size()) + "), got " + std::to_string(f.code_id));
  stacks_.add(frame_scratch_, py_frame_scratch_);
  pending_.push_back({Pending::Stack, id});
}

void ThreadFileReader::read_py_code(const Record& r) {
  PyCode code = decode_py_code(r, file_.name());
  if (code.id != py_codes_.size() + 1)
    damage(r.offset, "py-code record: expected id " + std::to_string(py_codes_.size() + 1) +
                         " (ids count up from 1 in order of first use), got " +
                         std::to_string(code.id));
  py_codes_.push_back(std::move(code));
  pending_.push_back({Pending::PyCode, static_cast<uint32_t>(py_codes_.size())});
}

// Here, beside the reader whose current() it reads (event_visitor.h only names the reader).
void EventVisitor::on_usual_event(const ThreadFileReader& thread) {
  on_event(thread.current(), thread);
}

void ThreadFileReader::deliver_queued(EventVisitor& v) {
  for (const Pending& p : pending_) {
    switch (p.kind) {
      case Pending::Stack:
        v.on_stack(p.index, stacks_.frames(p.index), *this);
        break;
      case Pending::PyCode:
        v.on_py_code(py_codes_[p.index - 1], *this);
        break;
      case Pending::Note:
        v.on_note(notes_[p.index], *this);
        break;
    }
  }
  pending_.clear();
}

}  // namespace gmemhook::analysis

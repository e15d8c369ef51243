// ProcessReader: opening a process's logs and merging its thread files by sequence number.
#include "analyzer/log/reader.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "analyzer/log/cpu_features.h"
#include "analyzer/log/merge_heads.h"
#include "analyzer/log/merge_scan.h"

namespace gmemhook::analysis {

ProcessReader ProcessReader::open(const std::filesystem::path& dir) {
  std::filesystem::path process_path = dir / format::kProcessFileName;
  std::vector<LogBytes> threads;
  for (const auto& path : find_thread_files(dir))
    threads.push_back(LogBytes::map(path, path.string()));
  return from_logs(LogBytes::map(process_path, process_path.string()), std::move(threads));
}

ProcessReader ProcessReader::from_logs(LogBytes process, std::vector<LogBytes> threads) {
  ProcessReader r;
  r.process_name_ = process.name();
  r.process_ = read_process_file(process, r.open_warnings_);
  for (LogBytes& t : threads) r.add_thread(std::move(t));
  return r;
}

void ProcessReader::add_thread(LogBytes file) {
  auto header = read_file_header(file, format::FileKind::Thread);
  if (!header) {
    // The thread was killed between creating its file and storing the header.
    open_warnings_.push_back({file.name(), 0, "thread file holds no data; skipped"});
    return;
  }
  if (header->pid != process_.header.pid)
    open_warnings_.push_back({file.name(), offsetof(format::FileHeader, pid),
                              "thread file says pid " + std::to_string(header->pid) +
                                  ", the process file says " +
                                  std::to_string(process_.header.pid)});
  threads_.push_back(std::make_unique<ThreadFileReader>(std::move(file), *header, threads_.size()));
}

std::span<const uint64_t> ProcessReader::stack(size_t thread_index, uint32_t stack_id) const {
  if (thread_index >= threads_.size()) return {};
  return threads_[thread_index]->stack(stack_id);
}

void ProcessReader::read_events(EventVisitor& v) {
  // One file: the heap never sifts, and its loop is the one measured on the hook loop's run.
  if (threads_.size() > 1 && threads_.size() <= MergeScan::kMaxFiles)
    merge_with<MergeScan>(v);
  else
    merge_with<MergeHeads>(v);
}

template <class Heads>
void ProcessReader::merge_with(EventVisitor& v) {
  // Chosen once for the whole pass: a test per varint, or a call through a pointer per event,
  // would cost part of what pext saves.
  const bool announce = v.wants_upcoming();
  if (pext_is_fast())
    announce ? merge_events<true, true, Heads>(v) : merge_events<true, false, Heads>(v);
  else
    announce ? merge_events<false, true, Heads>(v) : merge_events<false, false, Heads>(v);
}

template <bool kPext, bool kAnnounce, class Heads>
void ProcessReader::merge_events(EventVisitor& v) {
  events_read_ = 0;
  last_seq_ = 0;
  first_gap_after_.reset();
  pass_warnings_.clear();
  damaged_chunks_ = process_.damaged.size();
  damaged_bytes_ = 0;
  for (const ChunkDamage& d : process_.damaged) damaged_bytes_ += d.bytes;
  undecoded_events_ = 0;

  Heads heads;
  auto finish = [&](ThreadFileReader& t) {
    t.deliver_pending(v);  // stacks and notes after the file's last event
    for (const ChunkDamage& d : t.damaged_chunks()) {
      pass_warnings_.push_back(d.warning);
      ++damaged_chunks_;
      damaged_bytes_ += d.bytes;
    }
    if (const uint64_t n = t.undecoded_events()) {
      undecoded_events_ += n;
      pass_warnings_.push_back(
          {t.name(), t.damaged_chunks().front().warning.offset,
           std::to_string(n) + (n == 1 ? " event" : " events") +
               " after the damaged chunk not decoded: each is stored as differences from the "
               "file's earlier events (seq, time, address), and the lost chunk held some of "
               "them"});
    }
    if (t.stream_end() == StreamEnd::TruncatedTail)
      pass_warnings_.push_back({t.name(), t.data_end(),
                                "file ends inside a record (truncated tail); the events before "
                                "it are used"});
  };
  for (auto& t : threads_) {
    t->rewind();
    if (t->template advance<kPext>()) {
      heads.push({t->current_seq(), static_cast<uint32_t>(t->index())});
      if constexpr (kAnnounce) v.upcoming(*t);
    } else {
      finish(*t);
    }
  }

  const ThreadFileReader* previous = nullptr;
  while (!heads.empty()) {
    ThreadFileReader& t = *threads_[heads.top_file()];
    // While the top's file stays on top (all the time when it is the only file, as in most
    // processes), its events are read in the loop below: the heads are not asked for the file
    // again, nor the file's reader looked up.
    for (;;) {
      const uint64_t seq = t.current_seq();
      // Sequence numbers are handed out process-wide, so two files can never share one. (A
      // file's seqs start above 0, read_event makes sure, so before the first event this never
      // holds.)
      if (seq == last_seq_)
        throw ReadError(t.name(), t.current_offset(),
                        "event record: expected a sequence number no other thread file uses, "
                        "seq " +
                            std::to_string(seq) + " also appears in " + previous->name());
      if (seq != last_seq_ + 1 && !first_gap_after_) first_gap_after_ = last_seq_;
      t.deliver_pending(v);
      if (t.current_is_usual())
        v.on_usual_event(t);
      else
        v.on_event(t.current(), t);
      ++events_read_;
      last_seq_ = seq;
      previous = &t;
      if (!t.template advance<kPext>()) {
        finish(t);
        heads.pop_top(seq);
        break;
      }
      if (heads.replace_top(t.current_seq(), seq)) continue;
      // Another file's event comes first, so this one is delivered a few others later: time
      // enough for the visitor's loads to arrive. A file that stays on top has its event
      // delivered next, where the hint came too late to help and cost a call an event (all of
      // them in a process of one thread file).
      if constexpr (kAnnounce) v.upcoming(t);
      break;
    }
  }
}

void ProcessReader::for_each_event(
    const std::function<void(const format::Event&, const ThreadFileReader&)>& fn) {
  struct Adapter : EventVisitor {
    const std::function<void(const format::Event&, const ThreadFileReader&)>& fn;
    explicit Adapter(const std::function<void(const format::Event&, const ThreadFileReader&)>& f)
        : fn(f) {}
    void on_event(const format::Event& ev, const ThreadFileReader& t) override { fn(ev, t); }
    bool wants_upcoming() const override { return false; }
  } adapter(fn);
  read_events(adapter);
}

std::vector<ProcessReader::Unsealed> ProcessReader::unsealed_chunks() const {
  std::vector<Unsealed> all;
  if (process_.unsealed) all.push_back({process_name_, *process_.unsealed});
  for (const auto& t : threads_)
    if (auto c = t->unsealed_chunk()) all.push_back({t->name(), *c});
  return all;
}

std::vector<ReadWarning> ProcessReader::warnings() const {
  std::vector<ReadWarning> all = open_warnings_;
  all.insert(all.end(), pass_warnings_.begin(), pass_warnings_.end());
  return all;
}

std::optional<std::string> abrupt_end_message(const ProcessReader& r) {
  if (r.end()) return std::nullopt;
  std::string pid = std::to_string(r.info().pid);
  if (r.events_read() == 0)
    return "process " + pid + " ended abruptly before recording any event (killed or crashed)";
  return "process " + pid + " ended abruptly after record " + std::to_string(r.last_seq()) +
         " (killed or crashed)";
}

std::optional<MissingEvents> missing_events(const ProcessReader& r) {
  MissingEvents m;
  const auto& end = r.end();
  const uint64_t handed_out = end ? std::max(end->last_seq, r.last_seq()) : r.last_seq();
  uint64_t holes = handed_out > r.events_read() ? handed_out - r.events_read() : 0;
  // Without an End record the process was killed: each thread may have taken a seq and died
  // before committing its event. That is not a failure of the log.
  if (!end) holes = holes > r.thread_count() ? holes - r.thread_count() : 0;
  // Events found after a damaged chunk but not decoded hold some of the holes' numbers.
  holes = holes > r.undecoded_events() ? holes - r.undecoded_events() : 0;
  m.count = std::max<uint64_t>(holes, end ? end->not_recorded : 0);
  m.damaged_chunks = r.damaged_chunks();
  m.damaged_bytes = r.damaged_bytes();
  m.undecoded = r.undecoded_events();
  if (m.count == 0 && m.damaged_chunks == 0) return std::nullopt;
  m.after_seq = r.first_gap_after().value_or(r.last_seq());
  if (end && end->not_recorded && end->first_lost_seq)
    m.after_seq = std::min(m.after_seq, end->first_lost_seq - 1);
  if (end) m.write_error = static_cast<int>(end->write_error);
  return m;
}

std::optional<std::string> incomplete_log_message(const ProcessReader& r) {
  auto m = missing_events(r);
  if (!m) return std::nullopt;
  std::string text = "log incomplete: ";
  if (m->damaged_chunks) {
    // Checksums (format version 7) found damage: what it held is unknown, never guessed at.
    const bool one = m->damaged_chunks == 1;
    text += std::to_string(m->damaged_chunks) + " damaged chunk" + (one ? "" : "s") +
            " not read (" + std::to_string(m->damaged_bytes) + " bytes, see the warnings)";
    if (m->undecoded)
      text += "; " + std::to_string(m->undecoded) + " event" + (m->undecoded == 1 ? "" : "s") +
              " after " + (one ? "it" : "them") + " not decoded (stored as differences from " +
              (one ? "its" : "their") + " records)";
    if (m->count == 0) return text;
    text += "; ";
  }
  // Behind a damaged chunk events were written but cannot be read: "missing", not "not recorded".
  text += "\u2265 " + std::to_string(m->count) + " event" + (m->count == 1 ? "" : "s") +
          (m->damaged_chunks ? " missing" : " not recorded") + " after event " +
          std::to_string(m->after_seq);
  if (m->write_error) {
    const char* desc = strerrordesc_np(m->write_error);
    text += std::string(" (the recorder could not write: ") + (desc ? desc : "unknown error") + ")";
  }
  return text;
}

}  // namespace gmemhook::analysis

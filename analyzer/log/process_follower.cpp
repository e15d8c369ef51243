// ProcessFollower: the incremental, tolerant twin of ProcessReader for a process still writing.
#include "analyzer/log/process_follower.h"

#include <utility>

#include "analyzer/log/read_error.h"
#include "analyzer/log/record_cursor.h"
#include "analyzer/log/run_dir.h"
#include "gmemhook/format.h"

namespace gmemhook::analysis {

namespace {

// Whether the writer committed anything at `offset` (where the last read of the file stopped).
bool committed_at(const LogBytes& file, uint64_t offset) {
  auto bytes = file.bytes();
  return offset + 1 < bytes.size() && (bytes[offset] | bytes[offset + 1]) != 0;
}

}  // namespace

ProcessFollower::ProcessFollower(std::filesystem::path dir) : dir_(std::move(dir)) {}

bool ProcessFollower::refresh() {
  const std::filesystem::path path = dir_ / format::kProcessFileName;
  bool changed = false;
  if (!process_bytes_) {
    try {
      process_bytes_.emplace(LogBytes::map(path, path.string()));
    } catch (const ReadError&) {
      return false;  // not created yet
    }
    changed = true;
  } else {
    changed = process_bytes_->refresh() || committed_at(*process_bytes_, process_.data_end);
  }
  if (changed || !ready_) {
    std::vector<ReadWarning> warnings;
    try {
      process_ = read_process_file(*process_bytes_, warnings);
      ready_ = true;
    } catch (const ReadError&) {
      // Live, the file's tail may be a record half stored (a header byte still on its way) or a
      // header not written yet: keep what was read last time and look again on the next call.
      if (!ready_) return false;
    }
  }
  find_new_threads();
  return true;
}

void ProcessFollower::find_new_threads() {
  for (const auto& path : find_thread_files(dir_)) {
    const std::string name = path.filename().string();
    if (known_files_.count(name)) continue;
    std::optional<format::FileHeader> header;
    std::optional<LogBytes> bytes;
    try {
      bytes.emplace(LogBytes::map(path, path.string()));
      header = read_file_header(*bytes, format::FileKind::Thread);
    } catch (const ReadError&) {
      continue;  // the header is being stored right now: next call
    }
    if (!header) continue;  // created, header not stored yet
    known_files_.insert(name);
    auto log = std::make_unique<ThreadFileReader>(std::move(*bytes), *header, threads_.size());
    log->set_live();
    threads_.push_back(std::move(log));
    has_head_.push_back(false);
  }
}

uint64_t ProcessFollower::read_new_events(EventVisitor& v, uint64_t now_ns, uint64_t gap_wait_ns,
                                          bool writer_done) {
  for (size_t i = 0; i < threads_.size(); ++i) {
    if (has_head_[i]) continue;
    ThreadFileReader& t = *threads_[i];
    t.follow();
    if (t.advance()) {
      heads_.push({t.current().seq, i});
      has_head_[i] = true;
    }
  }

  uint64_t delivered = 0;
  ThreadFileReader* next = nullptr;  // a file whose next event is the very next seq: skip the heap
  while (next || !heads_.empty()) {
    ThreadFileReader* t = next;
    if (!t) {
      const uint64_t seq = heads_.top().first;
      if (seq > last_seq_ + 1 && !writer_done) {
        // Sequence numbers are taken before an event is stored: the missing ones may be on
        // their way from another thread. Wait for them, but not forever (lost events are holes
        // for good).
        if (gap_since_ns_ == 0) gap_since_ns_ = now_ns;
        if (now_ns - gap_since_ns_ < gap_wait_ns) break;
      }
      t = threads_[heads_.top().second].get();
      heads_.pop();
    }
    next = nullptr;
    has_head_[t->index()] = false;
    gap_since_ns_ = 0;
    const format::Event& ev = t->current();
    if (ev.seq <= last_seq_) ++late_events_;
    t->deliver_pending(v);
    v.on_event(ev, *t);
    ++events_read_;
    ++delivered;
    if (ev.seq > last_seq_) last_seq_ = ev.seq;
    if (!t->advance()) continue;
    has_head_[t->index()] = true;
    if (t->current().seq == last_seq_ + 1)
      next = t;  // most programs allocate from one thread
    else
      heads_.push({t->current().seq, t->index()});
  }
  return delivered;
}

}  // namespace gmemhook::analysis

// The stacked timeline's two passes (see site_timeline.h).
#include "analyzer/reports/site_timeline.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "analyzer/log/cuda_errors.h"
#include "analyzer/log/event_info.h"
#include "analyzer/model/block_layer.h"
#include "analyzer/model/peak_sites.h"
#include "analyzer/output/stack_text.h"
#include "analyzer/reports/allocated_layer.h"
#include "analyzer/reports/report_common.h"
#include "analyzer/reports/site_rows.h"

namespace gmemhook::analysis {

namespace {

// What a stack is grouped by: its line of user code, or the stack itself when it has none.
std::vector<std::string> row_keys(const FrameLookup& frames, uint32_t stacks) {
  std::vector<std::string> keys(stacks + 1);
  for (uint32_t id = 1; id <= stacks; ++id) {
    keys[id] = row_key(frames(id), GroupBy::Line);
    if (keys[id].empty()) keys[id] = "stack " + std::to_string(id);
  }
  return keys;
}

struct Candidate {
  uint32_t stack = 0;
  uint64_t bytes = 0;
  std::string kind;
};

// The rows of a track: the `limit` lines of user code holding the most at the peak or the end.
std::vector<std::string> pick_rows(const std::vector<Candidate>& at_peak,
                                   const std::vector<Candidate>& at_end,
                                   const std::vector<std::string>& keys, size_t limit,
                                   std::unordered_map<std::string, uint32_t>& first_stack) {
  std::unordered_map<std::string, std::pair<uint64_t, uint64_t>> held;  // peak, end
  std::vector<std::string> order;
  auto add = [&](const std::vector<Candidate>& list, bool end) {
    for (const Candidate& c : list) {
      const std::string& k = keys[c.stack];
      auto [it, added] = held.try_emplace(k, 0, 0);
      if (added) {
        order.push_back(k);
        first_stack[k] = c.stack;
      }
      (end ? it->second.second : it->second.first) += c.bytes;
    }
  };
  add(at_peak, false);
  add(at_end, true);
  std::stable_sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
    return std::max(held[a].first, held[a].second) > std::max(held[b].first, held[b].second);
  });
  if (order.size() > limit) order.resize(limit);
  return order;
}

// The second pass: bytes per row over time, sampled per bucket at its highest moment.
class Sampler final : public ReplayObserver {
 public:
  struct Track {
    SiteTrack* out = nullptr;
    std::unordered_map<std::string, uint16_t> slot_of_key;
    std::vector<int64_t> now;  // per slot (rows, then other)
    int64_t total = 0, reserved = 0;
    size_t bucket = 0;
    int64_t best = -1;          // the highest total of the current bucket
    bool recorded_now = false;  // best was recorded by the event being applied ...
    bool moved = false;         // ... and that event changed the track again since
  };

  Sampler(std::vector<Track>& tracks, const std::vector<std::string>& keys, uint64_t start_ns,
          uint64_t end_ns, size_t buckets)
      : ReplayObserver(kCalls | kSites),
        tracks_(tracks),
        keys_(keys),
        start_ns_(start_ns),
        span_ns_(std::max<uint64_t>(1, end_ns - std::min(end_ns, start_ns) + 1)),
        buckets_(buckets) {
    for (Track& t : tracks_) {
      begin_bucket(t, 0, start_ns_);
      // By their times until their events come (they do: the pass replays the same events).
      t.out->peak_bucket = bucket_of(start_ns_ + t.out->peak_time_ns);
      for (TimelineFailure& f : t.out->failures) f.bucket = bucket_of(start_ns_ + f.time_ns);
    }
  }

  void call(const Replay& r, const format::Event& ev, const format::ApiInfo& api) override {
    // Every applied event comes here first (the sampler watches every kind), so the one before
    // has made all its changes.
    event_done();
    time_ns_ = ev.time_ns;
    seq_ = ev.seq;
    if (ev.result != 0) return mark_failure();
    const format::EventKind kind = format::event_kind_of(api.kind, ev.f.mask);
    if (kind == format::EventKind::BlockAlloc) {
      Track* t = block_track(ev.f.device);
      if (!t) return;
      const uint16_t slot = slot_of(*t, r.event_stack());
      if (auto old = blocks_.find(ev.f.address); old != blocks_.end()) drop_block(old);
      blocks_[ev.f.address] = {ev.f.size, slot, t};
      change(*t, slot, static_cast<int64_t>(ev.f.size));
    } else if (kind == format::EventKind::BlockFree) {
      if (auto it = blocks_.find(ev.f.address); it != blocks_.end()) drop_block(it);
    }
  }

  void site_changed(const Replay& r, uint32_t site, int64_t bytes, int64_t) override {
    const Site& s = r.site(site);
    Track* t = series_track(r, s.series);
    if (!t) return;
    if (t->out->allocated_layer) {
      advance(*t);
      t->reserved += bytes;
      uint64_t& top = t->out->reserved[t->bucket];
      top = std::max<uint64_t>(top, static_cast<uint64_t>(std::max<int64_t>(0, t->reserved)));
      return;
    }
    change(*t, slot_of(*t, s.stack), bytes);
  }

  void finish(const Replay&) override {
    event_done();
    for (Track& t : tracks_)
      while (t.bucket + 1 < buckets_) next_bucket(t);
  }

 private:
  struct LiveBlock {
    uint64_t size;
    uint16_t slot;
    Track* track;
  };

  uint16_t slot_of(Track& t, uint32_t stack) const {
    if (stack < keys_.size())
      if (auto it = t.slot_of_key.find(keys_[stack]); it != t.slot_of_key.end()) return it->second;
    return static_cast<uint16_t>(t.now.size() - 1);  // other
  }

  Track* block_track(int32_t device) {
    for (Track& t : tracks_)
      if (t.out->allocated_layer && t.out->key.device == device) return &t;
    return nullptr;
  }

  Track* series_track(const Replay& r, uint16_t series) {
    if (series >= by_series_.size())
      by_series_.resize(series + 1, nullptr), known_.resize(series + 1);
    if (!known_[series]) {
      known_[series] = true;
      for (Track& t : tracks_)
        if (t.out->key == r.series()[series].key) by_series_[series] = &t;
    }
    return by_series_[series];
  }

  void drop_block(std::unordered_map<uint64_t, LiveBlock>::iterator it) {
    change(*it->second.track, it->second.slot, -static_cast<int64_t>(it->second.size));
    blocks_.erase(it);
  }

  size_t bucket_of(uint64_t time_ns) const {
    const uint64_t since = time_ns > start_ns_ ? time_ns - start_ns_ : 0;
    const auto b = static_cast<size_t>((static_cast<__uint128_t>(since) * buckets_) / span_ns_);
    return std::min(b, buckets_ - 1);
  }

  // A new bucket starts with the state the previous one ended in.
  void begin_bucket(Track& t, size_t b, uint64_t time_ns) {
    t.bucket = b;
    t.best = t.total;
    t.recorded_now = false;
    record(t, time_ns, done_seq_);
    t.out->reserved[b] = static_cast<uint64_t>(std::max<int64_t>(0, t.reserved));
  }
  void next_bucket(Track& t) {
    begin_bucket(t, t.bucket + 1, start_ns_ + (t.bucket + 1) * span_ns_ / buckets_);
  }
  void advance(Track& t) {
    const size_t b = bucket_of(time_ns_);
    while (t.bucket < b) next_bucket(t);
  }
  void record(Track& t, uint64_t time_ns, uint64_t after_seq) {
    SiteTrack& o = *t.out;
    for (size_t i = 0; i < t.now.size(); ++i)
      o.values[i][t.bucket] = static_cast<uint64_t>(std::max<int64_t>(0, t.now[i]));
    o.time_ns[t.bucket] = time_ns > start_ns_ ? time_ns - start_ns_ : 0;
    o.seq[t.bucket] = seq_;
    o.after_seq[t.bucket] = after_seq;
  }
  void change(Track& t, uint16_t slot, int64_t bytes) {
    advance(t);
    t.now[slot] += bytes;
    t.total += bytes;
    t.moved = t.recorded_now;
    if (t.total > t.best) {
      t.best = t.total;
      record(t, time_ns_, seq_);
      t.recorded_now = true;
      t.moved = false;
      // A moment inside an earlier event of this bucket, now replaced.
      std::vector<size_t>& inside = t.out->inside_event;
      if (!inside.empty() && inside.back() == t.bucket) inside.pop_back();
    }
    if (seq_ == t.out->peak_seq) t.out->peak_bucket = t.bucket;
  }
  // The event seq_ made all its changes. A bucket's highest moment recorded during it is the
  // state after it unless a later change of the same event moved the track again.
  void event_done() {
    done_seq_ = seq_;
    for (Track& t : tracks_) {
      if (t.recorded_now && t.moved) t.out->inside_event.push_back(t.bucket);
      t.recorded_now = false;
    }
  }
  // A failed call changes nothing, so it starts no bucket: it lies in the one its time falls in,
  // or the track's current one where an earlier event came with a later time (threads' clocks).
  void mark_failure() {
    for (Track& t : tracks_)
      for (TimelineFailure& f : t.out->failures)
        if (f.seq == seq_) f.bucket = std::max(t.bucket, bucket_of(time_ns_));
  }

  std::vector<Track>& tracks_;
  const std::vector<std::string>& keys_;
  uint64_t start_ns_, span_ns_;
  size_t buckets_;
  uint64_t time_ns_ = 0, seq_ = 0;
  uint64_t done_seq_ = 0;  // the last event whose changes are all made
  std::vector<Track*> by_series_;
  std::vector<bool> known_;
  std::unordered_map<uint64_t, LiveBlock> blocks_;
};

std::vector<Candidate> candidates(const std::vector<SiteGroup>& groups) {
  std::vector<Candidate> out;
  for (const SiteGroup& g : groups)
    if (g.kind == LiveKind::Allocation || g.kind == LiveKind::Physical)
      out.push_back({g.stack, g.bytes, site_api_name(g.api)});
  return out;
}

std::vector<Candidate> candidates(const std::vector<BlockGroup>& groups) {
  std::vector<Candidate> out;
  for (const BlockGroup& g : groups) out.push_back({g.stack, g.bytes, "PyTorch allocator"});
  return out;
}

}  // namespace

std::vector<SiteTrack> site_timeline(ProcessContext& process, const SiteTimelineOptions& options) {
  // Pass 1: the peak, the end and who held each.
  PeakSites peaks;
  BlockLayer blocks;
  // Let go of before pass 2: two live sets at once were 1.9 GB with ten million live.
  std::optional<Replay> first_pass(process.pass({&peaks, &blocks}));
  const Replay& first = *first_pass;
  const ProcessReader& reader = process.reader();
  const FrameLookup frames_of = process.frames();
  const std::vector<std::string> keys = row_keys(frames_of, first.stacks().size());
  const size_t n = std::max<size_t>(2, options.buckets);
  // The buckets run to the process's end (its End record; else its last event), as the summary's
  // timelines do: every timeline of a process spans the same time, and what was live at exit is
  // drawn up to the exit. Ended at its last event, GPT-2's pinned-memory panel stopped at 868 ms
  // and its device panel went on to NVML's sample at exit (2.43 s).
  uint64_t end_ns = first.last_time_ns();
  if (reader.end()) end_ns = std::max(end_ns, reader.start_ns() + reader.end()->time_delta_ns);

  std::vector<SiteTrack> tracks;
  std::vector<std::vector<std::string>> track_keys;  // per track, its rows' keys
  for (const Series* s : ordered_series(first)) {
    if (options.device && s->key.device != *options.device) continue;
    if (s->peak_seq == 0 && s->failed == 0) continue;
    SiteTrack t;
    t.key = s->key;
    std::vector<Candidate> at_peak, at_end;
    if (const BlockDevice* b = blocks_of(blocks, s->key)) {
      t.allocated_layer = true;
      at_peak = candidates(b->sites_at_peak);
      const int32_t device = s->key.device;
      at_end = candidates(blocks.groups_now(&device));
      t.peak_bytes = b->peak_bytes;
      t.peak_time_ns = since_start(reader, b->peak_time_ns);
      t.peak_seq = b->peak_seq;
      t.reserved_peak_bytes = s->peak_bytes;
      t.end_bytes = b->live_bytes;
    } else {
      at_peak = candidates(peaks.at_peak(s->key));
      const auto index = static_cast<uint16_t>(s - first.series().data());
      at_end = candidates(first.site_groups(index));
      t.peak_bytes = s->peak_bytes;
      t.peak_time_ns = since_start(reader, s->peak_time_ns);
      t.peak_seq = s->peak_seq;
      t.end_bytes = s->live_bytes;
    }
    std::unordered_map<std::string, uint32_t> first_stack;
    track_keys.push_back(pick_rows(at_peak, at_end, keys, options.rows, first_stack));
    for (const std::string& k : track_keys.back()) {
      const uint32_t stack = first_stack[k];
      const std::vector<Frame>& frames = frames_of(stack);
      std::string kind;
      for (const Candidate& c : at_peak)
        if (c.stack == stack) kind = c.kind;
      for (const Candidate& c : at_end)
        if (kind.empty() && c.stack == stack) kind = c.kind;
      t.rows.push_back({user_frame_text(frames), &frames, kind});
    }
    for (const Candidate& c : at_peak) t.peak_stacks.emplace_back(&frames_of(c.stack), c.bytes);
    for (const Failure& f : s->failures)
      t.failures.push_back({since_start(reader, f.time_ns), f.seq, f.bytes,
                            api_name(f.api) + ": " + cuda_error_text(f.api, f.result),
                            user_frame_text(frames_of(f.stack))});
    t.end_time_ns = since_start(reader, end_ns);
    t.time_ns.assign(n, 0);
    t.seq.assign(n, 0);
    t.after_seq.assign(n, 0);
    t.values.assign(t.rows.size() + 1, std::vector<uint64_t>(n, 0));
    t.reserved.assign(n, 0);
    tracks.push_back(std::move(t));
  }

  // Pass 2: sample the rows.
  first_pass.reset();
  std::vector<Sampler::Track> sampling(tracks.size());
  for (size_t i = 0; i < tracks.size(); ++i) {
    Sampler::Track& s = sampling[i];
    s.out = &tracks[i];
    s.now.assign(tracks[i].rows.size() + 1, 0);
    for (size_t r = 0; r < track_keys[i].size(); ++r)
      s.slot_of_key.emplace(track_keys[i][r], static_cast<uint16_t>(r));
  }
  Sampler sampler(sampling, keys, reader.start_ns(), end_ns, n);
  process.pass({&sampler});
  return tracks;
}

}  // namespace gmemhook::analysis

// `gmemhook html --format memory-viz`: one process of a run as a pickle in the format of PyTorch's
// memory snapshots (torch.cuda.memory._snapshot()), so PyTorch's own viewer opens it:
// `python -m torch.cuda._memory_viz trace_plot FILE -o out.html`, or pytorch.org/memory_viz. Any
// program gmemhook recorded works, not only PyTorch's caching allocator: CuPy, JAX, CUDA C++.
//
// The mapping: where PyTorch's blocks were recorded (model/block_layer.h), a block is an
// allocation ('alloc', 'free_requested', 'free_completed') and what the allocator got from CUDA a
// segment ('segment_alloc', 'segment_free'); elsewhere every device allocation is both a segment
// and the one allocation filling it. A failed device allocation is an 'oom'. 'segments' is the
// state at the end of the log, each segment tiled by its live blocks and 'inactive' gaps, as
// PyTorch's are. Its line in the table of whole-run formats is in html_report.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "analyzer/model/block_layer.h"
#include "analyzer/output/pickle_writer.h"
#include "analyzer/output/text_format.h"
#include "analyzer/reports/process_context.h"
#include "analyzer/reports/process_walk.h"
#include "analyzer/reports/whole_run_format.h"

namespace gmemhook::analysis {

namespace {

using format::EventKind;

// PyTorch's viewer slows to a crawl far below these; beyond them the trace, and the segments
// live at the end, are cut (and say so). Ten million live 1-byte allocations made a 3.4 GB
// pickle without the cut on segments.
constexpr size_t kMaxEntries = 1000000;
constexpr size_t kMaxSegments = 100000;  // the largest live at the end
constexpr size_t kMaxBlocks = 1000000;   // blocks tiling those segments
constexpr size_t kMaxFrames = 64;

struct Entry {
  const char* action;
  uint64_t address = 0, size = 0, time_us = 0;
  uint32_t stack = 0;
};

struct Range {
  uint64_t size = 0;
  int32_t device = 0;
  uint32_t stack = 0;
};

// A live allocation as a segment: device memory only (pinned host memory is no segment).
std::optional<Range> allocation_segment(const Replay& r, const LiveAllocation& a) {
  const SeriesKey& key = r.series()[a.series].key;
  if (key.memory != format::MemoryType::Device) return std::nullopt;
  return Range{a.size, key.device, r.site(a.site).stack};
}

Range mapping_segment(const Replay& r, const AddressRange& m) {
  return {m.size, r.series()[m.series].key.device, m.stack};
}

// The segment at `address` in `r`'s state: a live device allocation or a mapping.
std::optional<Range> segment_at(const Replay& r, uint64_t address) {
  if (const LiveAllocation* a = r.live().find(address)) return allocation_segment(r, *a);
  if (auto m = r.mappings().find(address); m != r.mappings().end())
    return mapping_segment(r, m->second);
  return std::nullopt;
}

struct LiveSegment {
  uint64_t address = 0;
  Range range;
};

// What the snapshot leaves out past its caps, said on stderr.
struct Cut {
  size_t segments = 0;
  uint64_t bytes = 0;
  void add(const Range& s) {
    ++segments;
    bytes += s.size;
  }
};

// The segments live at the end (of `device`, when given): the kMaxSegments largest, in address
// order. A heap of that many, so the millions not kept are never held at once.
std::vector<LiveSegment> segments_at_end(const Replay& r, std::optional<int32_t> device, Cut& cut) {
  // Smaller first, then the higher address: the top is the one to give up first.
  auto later = [](const LiveSegment& a, const LiveSegment& b) {
    return a.range.size != b.range.size ? a.range.size > b.range.size : a.address < b.address;
  };
  std::vector<LiveSegment> kept;
  auto offer = [&](uint64_t address, const Range& s) {
    if (device && s.device != *device) return;
    kept.push_back({address, s});
    std::push_heap(kept.begin(), kept.end(), later);
    if (kept.size() <= kMaxSegments) return;
    std::pop_heap(kept.begin(), kept.end(), later);
    cut.add(kept.back().range);
    kept.pop_back();
  };
  r.live().for_each([&](uint64_t address, const LiveAllocation& a) {
    if (const std::optional<Range> s = allocation_segment(r, a)) offer(address, *s);
  });
  for (const auto& [address, m] : r.mappings()) offer(address, mapping_segment(r, m));
  std::sort(kept.begin(), kept.end(),
            [](const LiveSegment& a, const LiveSegment& b) { return a.address < b.address; });
  return kept;
}

// The trace, one list per device, made in one pass (a Replay observer watching every call). What
// a free or an unmap gives back, and what is live at the end, the replay's own live set and
// mappings say: a copy of them here doubled the memory of a run with millions live.
class TraceRecorder final : public ReplayObserver {
 public:
  TraceRecorder(std::vector<int32_t> block_devices, uint64_t start_ns)
      : ReplayObserver(kCalls), start_ns_(start_ns), block_devices_(std::move(block_devices)) {}

  void call(const Replay& r, const format::Event& ev, const format::ApiInfo& api) override {
    const EventKind kind = format::event_kind_of(api.kind, ev.f.mask);
    const format::MemoryType memory = ev.f.has(format::kHasMemory) ? ev.f.memory : api.memory;
    const bool device_memory =
        memory == format::MemoryType::Device || memory == format::MemoryType::None;
    const uint64_t us = (ev.time_ns > start_ns_ ? ev.time_ns - start_ns_ : 0) / 1000;
    const uint32_t stack = r.event_stack();
    if (ev.result != 0) {
      if ((kind == EventKind::Alloc || kind == EventKind::Create) && device_memory)
        add(ev.f.device, {"oom", 0, ev.f.size, us, stack});
      return;
    }
    switch (kind) {
      case EventKind::BlockAlloc:
        if (auto old = blocks_.find(ev.f.address); old != blocks_.end()) free_block(old, us, stack);
        blocks_[ev.f.address] = {ev.f.size, ev.f.device, stack};
        return add(ev.f.device, {"alloc", ev.f.address, ev.f.size, us, stack});
      case EventKind::BlockFree:
        if (auto it = blocks_.find(ev.f.address); it != blocks_.end()) free_block(it, us, stack);
        return;
      case EventKind::Alloc:
        if (!device_memory || !ev.f.address) return;
        return new_segment(ev.f.address, {ev.f.size, ev.f.device, stack}, us);
      case EventKind::Map:
        // expandable_segments: each mapping is memory the allocator can carve blocks from.
        return new_segment(ev.f.address, {ev.f.size, device_of_map(r, ev), stack}, us);
      case EventKind::Free:
      case EventKind::Unmap:
        // Called before the replay applies the call: what it frees is still there.
        if (const std::optional<Range> s = segment_at(r, ev.f.address)) {
          if (!has_blocks(s->device)) {
            add(s->device, {"free_requested", ev.f.address, s->size, us, stack});
            add(s->device, {"free_completed", ev.f.address, s->size, us, stack});
          }
          add(s->device, {"segment_free", ev.f.address, s->size, us, stack});
        }
        return;
      default:
        return;
    }
  }

  std::vector<std::vector<Entry>> traces;  // by device
  std::map<uint64_t, Range> blocks_;
  size_t dropped = 0;

  bool has_blocks(int32_t device) const {
    return std::find(block_devices_.begin(), block_devices_.end(), device) != block_devices_.end();
  }

 private:
  int32_t device_of_map(const Replay& r, const format::Event& ev) const {
    if (auto h = r.handles().find(ev.f.handle); h != r.handles().end())
      return r.series()[r.site(h->second.site).series].key.device;
    return ev.f.device;
  }
  void new_segment(uint64_t address, Range s, uint64_t us) {
    add(s.device, {"segment_alloc", address, s.size, us, s.stack});
    if (!has_blocks(s.device)) add(s.device, {"alloc", address, s.size, us, s.stack});
  }
  void free_block(std::map<uint64_t, Range>::iterator it, uint64_t us, uint32_t stack) {
    add(it->second.device, {"free_requested", it->first, it->second.size, us, stack});
    add(it->second.device, {"free_completed", it->first, it->second.size, us, stack});
    blocks_.erase(it);
  }
  void add(int32_t device, const Entry& e) {
    if (device < 0) device = 0;  // unknown: the viewer has no place for it elsewhere
    if (static_cast<size_t>(device) >= traces.size()) traces.resize(device + 1);
    if (entries_ >= kMaxEntries) {
      ++dropped;
      return;
    }
    ++entries_;
    traces[device].push_back(e);
  }

  uint64_t start_ns_;
  std::vector<int32_t> block_devices_;
  size_t entries_ = 0;
};

// Frames as PyTorch writes them, innermost first: {filename, line, name}; each stack pickled once
// and referred to from the memo after.
class FramePickles {
 public:
  explicit FramePickles(FrameLookup frames) : frames_(frames) {}

  void write(PickleWriter& p, uint32_t stack) {
    if (auto it = memo_.find(stack); it != memo_.end()) return p.get(it->second);
    p.begin_list();
    const std::vector<Frame>& frames = frames_(stack);
    for (size_t i = 0; i < frames.size() && i < kMaxFrames; ++i) {
      const Frame& f = frames[i];
      p.begin_dict();
      p.field("filename", f.file ? *f.file : f.module.empty() ? std::string("??") : f.module);
      p.field("line", static_cast<int64_t>(f.line.value_or(0)));
      p.field("name", f.function ? *f.function : fmt::format("0x{:x}", f.address));
      p.end_dict();
    }
    p.end_list();
    const auto index = static_cast<uint32_t>(memo_.size());
    p.put(index);
    memo_.emplace(stack, index);
  }

 private:
  FrameLookup frames_;
  std::unordered_map<uint32_t, uint32_t> memo_;
};

void write_block(PickleWriter& p, uint64_t address, uint64_t size, bool active,
                 FramePickles* frames, uint32_t stack) {
  p.begin_dict();
  p.field("address", address);
  p.field("size", size);
  p.field("requested_size", active ? size : uint64_t{0});
  p.field("state", active ? "active_allocated" : "inactive");
  p.value("frames");
  if (active && frames)
    frames->write(p, stack);
  else {
    p.begin_list();
    p.end_list();
  }
  p.end_dict();
}

struct Piece {
  uint64_t address, size;
  uint32_t stack;
};

// What is allocated in a segment: its blocks where PyTorch's were recorded, else all of it.
std::vector<Piece> active_in(const LiveSegment& s, const TraceRecorder& t) {
  if (!t.has_blocks(s.range.device)) return {{s.address, s.range.size, s.range.stack}};
  std::vector<Piece> active;
  for (auto it = t.blocks_.lower_bound(s.address);
       it != t.blocks_.end() && it->first + it->second.size <= s.address + s.range.size; ++it)
    active.push_back({it->first, it->second.size, it->second.stack});
  return active;
}

// One live segment at the end, tiled by the blocks inside it and the gaps between them.
void write_segment(PickleWriter& p, const LiveSegment& seg, const std::vector<Piece>& active,
                   FramePickles& frames) {
  const uint64_t address = seg.address;
  const Range& s = seg.range;
  uint64_t used = 0;
  for (const Piece& b : active) used += b.size;
  p.begin_dict();
  p.field("device", s.device < 0 ? 0 : s.device);
  p.field("address", address);
  p.field("total_size", s.size);
  p.field("allocated_size", used);
  p.field("active_size", used);
  p.field("requested_size", used);
  p.field("stream", uint64_t{0});
  p.field("segment_type", s.size <= (1u << 20) ? "small" : "large");
  p.value("segment_pool_id");
  p.begin_tuple();
  p.value(uint64_t{0});
  p.value(uint64_t{0});
  p.end_tuple();
  p.field("is_expandable", false);
  p.value("frames");
  frames.write(p, s.stack);
  p.value("blocks");
  p.begin_list();
  uint64_t at = address;
  for (const Piece& b : active) {
    if (b.address > at) write_block(p, at, b.address - at, false, nullptr, 0);
    write_block(p, b.address, b.size, true, &frames, b.stack);
    at = b.address + b.size;
  }
  if (at < address + s.size) write_block(p, at, address + s.size - at, false, nullptr, 0);
  p.end_list();
  p.end_dict();
}

}  // namespace

int memory_viz_export(const WholeRunOptions& options, std::string& out, std::FILE* err) {
  // A snapshot is one process's: the --pid one, else the first.
  std::optional<uint64_t> chosen = options.pid;
  std::vector<std::string> others;
  int status = walk_processes(options.run, options.pid, stdout, err, [&](ProcessReader& reader) {
    if (!chosen)
      chosen = reader.info().pid;
    else if (reader.info().pid != *chosen)
      others.push_back(std::to_string(reader.info().pid));
  });
  if (status != kExitOk) return status;
  if (!chosen) {
    fmt::print(err, "gmemhook: no process in {}\n", options.run.string());
    return kExitReportFailure;
  }
  if (!others.empty())
    fmt::print(err,
               "gmemhook: a memory_viz snapshot holds one process: {} written; the others "
               "(--pid): {}\n",
               *chosen, fmt::join(others, ", "));
  return walk_processes(options.run, chosen, stdout, err, [&](ProcessReader& reader) {
    ProcessContext process(reader, options.apis);
    std::vector<int32_t> block_devices;  // which devices have PyTorch's blocks
    {
      BlockLayer layer;  // gone before the next pass: it holds a copy of every segment
      process.pass({&layer});
      for (const BlockDevice& d : layer.devices()) block_devices.push_back(d.device);
    }
    TraceRecorder trace(std::move(block_devices), reader.start_ns());
    const Replay end = process.pass({&trace});
    if (trace.dropped)
      fmt::print(err, "gmemhook: the trace was cut after {} entries ({} more not written)\n",
                 kMaxEntries, trace.dropped);

    FramePickles frames(process.frames());
    PickleWriter p(out);
    p.begin_dict();
    p.value("segments");
    p.begin_list();
    Cut cut;
    size_t blocks = 0;
    for (const LiveSegment& s : segments_at_end(end, options.device, cut)) {
      const std::vector<Piece> active = active_in(s, trace);
      if (blocks + active.size() > kMaxBlocks) {
        cut.add(s.range);
        continue;
      }
      blocks += active.size();
      write_segment(p, s, active, frames);
    }
    if (cut.segments)
      fmt::print(err,
                 "gmemhook: the snapshot's segments were cut to the largest {} (with at most {} "
                 "blocks); {} more live at the end, holding {}, not written\n",
                 kMaxSegments, kMaxBlocks, cut.segments, size_and_bytes(cut.bytes));
    p.end_list();
    p.value("device_traces");
    p.begin_list();
    for (size_t d = 0; d < std::max<size_t>(1, trace.traces.size()); ++d) {
      p.begin_list();
      if (d < trace.traces.size() && (!options.device || static_cast<int32_t>(d) == *options.device))
        for (const Entry& e : trace.traces[d]) {
          p.begin_dict();
          p.field("action", e.action);
          p.field("addr", e.address);
          p.field("size", e.size);
          p.field("stream", uint64_t{0});
          p.field("time_us", e.time_us);
          if (std::string_view(e.action) == "oom") p.field("device_free", uint64_t{0});
          p.value("frames");
          frames.write(p, e.stack);
          p.end_dict();
        }
      p.end_list();
    }
    p.end_list();
    p.value("allocator_settings");
    p.begin_dict();
    p.end_dict();
    p.end_dict();
    p.finish();
  });
}

}  // namespace gmemhook::analysis

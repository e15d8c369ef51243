// `gmemhook fragmentation`: how each device's live memory lay in the address space at its peak,
// at its first failed allocation, at the end (and at --at / --at-seq): requested vs granted
// bytes, span, gaps, largest gap, a size histogram, VMM and pool figures, each explained in one
// line, then remedies where one applies. Two passes: the first finds the peaks and failures (and
// gives the end), the second stops at each moment to lay out the live addresses, and stops for
// good after the last one.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "analyzer/log/event_info.h"
#include "analyzer/model/block_layer.h"
#include "analyzer/model/checkpoints.h"
#include "analyzer/model/pool_tracker.h"
#include "analyzer/output/text_format.h"
#include "analyzer/reports/allocated_layer.h"
#include "analyzer/reports/process_context.h"
#include "analyzer/reports/report.h"

namespace gmemhook::analysis {

namespace {

struct Snapshot {
  Moment at = Moment::End;
  uint64_t seq = 0, time_ns = 0;
  Fragmentation f;
};

struct DeviceFrames {
  int32_t device = kNoDevice;
  uint64_t peak_seq = 0;
  std::optional<Failure> first_failure;
  std::vector<Snapshot> snapshots;  // in the order above
  // PyTorch's caching allocator: its segments at the reserved peak and at the moment
  // most of what it reserved held no block.
  struct AllocatorView {
    const char* at = "peak";  // "peak", "most-idle"
    uint64_t seq = 0, time_ns = 0, reserved_bytes = 0, allocated_bytes = 0;
    std::vector<SegmentUse> segments;
  };
  bool blocks = false;
  uint64_t most_idle_seq = 0;
  std::vector<AllocatorView> allocator;
};

bool uses_pytorch(const ProcessReader& reader) {
  const auto& snaps = reader.module_snapshots();
  if (snaps.empty()) return false;
  for (const Module& m : snaps.back().modules) {
    const std::string name = base_name(m.path);
    if (name.starts_with("libc10_cuda") || name.starts_with("libtorch_cuda")) return true;
  }
  return false;
}

// The moment text shows by default (the end alone often looks fine): the first failed
// allocation; else the moment with the most free space outside the largest hole (the peak on a
// tie); and why it was chosen.
std::pair<size_t, std::string> worst_moment(const std::vector<Snapshot>& snapshots) {
  size_t worst = 0;
  uint64_t worst_scattered = 0;
  for (size_t i = 0; i < snapshots.size(); ++i) {
    const Fragmentation& f = snapshots[i].f;
    if (snapshots[i].at == Moment::FirstFailure) return {i, "the first failed allocation"};
    const uint64_t scattered = f.gap_bytes - f.largest_gap_bytes;
    if (scattered > worst_scattered) {
      worst = i;
      worst_scattered = scattered;
    }
  }
  if (worst_scattered == 0) return {worst, "no moment left free space in more than one hole"};
  return {worst, "the most free space in holes smaller than the largest"};
}

std::string device_name(int32_t device) {
  return device == kNoDevice ? "device ?" : "device " + std::to_string(device);
}

// What `fragmentation` found in one process: per device the live set's layout at each moment,
// PyTorch's segments, and the remedies that follow; rendered as text or JSON.
class FragmentationModel final : public ProcessModel {
 public:
  FragmentationModel(const ReportOptions& options, ProcessHeader header, FrameLookup frames,
                     std::vector<DeviceFrames> devices, std::vector<std::string> remedies)
      : ProcessModel(options, std::move(header), frames),
        devices_(std::move(devices)),
        remedies_(std::move(remedies)) {}

  void text(std::string& text) const override { write_text(text); }

 private:
  std::string moment_text(const DeviceFrames& d, const Snapshot& s) const {
    const ProcessEnd& end = h_.end;
    const std::string when =
        fmt::format("{} (seq {})", event_time_text(h_, s.time_ns), s.seq);
    if (s.at == Moment::Peak) return "at the peak, " + when;
    if (s.at == Moment::FirstFailure)
      return fmt::format("at the first failed allocation ({} of {}), {}",
                         api_name(d.first_failure->api), human_size(d.first_failure->bytes), when);
    if (s.at == Moment::End)
      return end.kind == EndKind::Exited ? "at exit, " + when
                                         : "at the end of the log (" + end.text + "), " + when;
    return "at " + when;
  }

  void write_text(std::string& text) const {
    const ProcessEnd& end = h_.end;
    const std::vector<DeviceFrames>& devices = devices_;
    text += fmt::format("{}: {}\n", h_.title, end.text);
    if (devices.empty()) text += "  no device memory recorded\n";
    auto line = [&](const char* label, const std::string& value, const char* why) {
      text += fmt::format("  {:<15}{:<30} {}\n", label, value, why);
    };
    const bool asked = options_.at_seq || options_.at_seconds;
    for (const DeviceFrames& d : devices) {
      const auto [worst, why] = worst_moment(d.snapshots);
      for (size_t i = 0; i < d.snapshots.size(); ++i) {
        const Snapshot& s = d.snapshots[i];
        const bool chosen = asked ? s.at == Moment::Seq || s.at == Moment::Time : i == worst;
        if (!options_.all_moments && !chosen) continue;
        const Fragmentation& f = s.f;
        text += fmt::format("\n{} {}{}:\n", device_name(d.device), moment_text(d, s),
                            !asked && i == worst && !options_.all_moments
                                ? "; the worst moment: " + why + " (--all-moments shows the others)"
                                : "");
        if (f.live_count == 0 && f.reserved_bytes == 0 && f.pools.empty()) {
          text += "  nothing live\n";
          continue;
        }
        line("live", fmt::format("{} in {}", human_size(f.live_bytes), f.live_count),
             "requested bytes (count) of live allocations and VMM handles");
        line("granted", human_size(f.granted_bytes),
             "the same rounded up: to 512 B (cudaMalloc, pools), 2 MiB (VMM)");
        line("span",
             fmt::format("{} in {}", human_size(f.span_bytes), plural(f.ranges, "range", "ranges")),
             "lowest live address to the end of the highest live range");
        line("gaps",
             fmt::format("{} in {}", human_size(f.gap_bytes), plural(f.gap_count, "gap", "gaps")),
             "the part of that span no live range covers");
        line("largest gap", human_size(f.largest_gap_bytes),
             "the largest request that fits between live ranges");
        line("fragmentation", fmt::format("{:.2f}", f.fragmentation),
             "1 - largest gap / gaps: 0 = one hole, near 1 = many small ones");
        if (f.reserved_bytes || f.mapped_bytes || f.physical_bytes) {
          line("reserved", human_size(f.reserved_bytes),
               "VMM address space reserved (cuMemAddressReserve): no memory");
          line("mapped", human_size(f.mapped_bytes), "of it mapped to physical handles (cuMemMap)");
          line("physical", human_size(f.physical_bytes),
               "VMM memory created (cuMemCreate), part of live; counts at the peak");
        }
        for (const PoolView& p : f.pools)
          line(p.handle ? "pool" : "default pool",
               fmt::format("{} of {}", human_size(p.live_bytes), human_size(p.high_water_bytes)),
               p.handle ? "live of its high-water mark: a pool keeps freed memory until trimmed"
                        : "live of its high-water mark: cudaMallocAsync's cache, until trimmed");
        if (!f.histogram.empty()) {
          text += "  sizes          requested bytes in power-of-two buckets:\n";
          for (const SizeBucket& b : f.histogram) {
            const std::string range =
                fmt::format("{} .. {}", human_size(b.min_bytes),
                            b.max_bytes == UINT64_MAX ? "" : human_size(b.max_bytes));
            text += fmt::format("    {:<24}{:>8}  {}\n", range, b.count, human_size(b.bytes));
          }
        }
      }
    }
    for (const DeviceFrames& d : devices)
      for (const DeviceFrames::AllocatorView& v : d.allocator) {
        text += fmt::format(
            "\n{}, PyTorch's caching allocator {}, {} (seq {}): {} reserved, {} allocated, {} "
            "idle\n",
            device_name(d.device),
            std::string_view(v.at) == "peak" ? "at the reserved peak"
                                             : "when most reserved memory held no block",
            event_time_text(h_, v.time_ns), v.seq, human_size(v.reserved_bytes),
            human_size(v.allocated_bytes),
            human_size(v.reserved_bytes - std::min(v.reserved_bytes, v.allocated_bytes)));
        append_segment_view(text, v.segments);
      }
    if (!remedies_.empty()) {
      text += "\n";
      for (const std::string& r : remedies_) text += "remedy: " + r + "\n";
    }
  }

  void members(JsonWriter& json) const override {
    const std::vector<DeviceFrames>& devices = devices_;
    json.key("devices");
    json.begin_array();
    for (const DeviceFrames& d : devices) {
      for (const Snapshot& s : d.snapshots) {
        const Fragmentation& f = s.f;
        json.begin_object();
        write_series_fields(json, {d.device, format::MemoryType::Device});
        json.field("at", moment_name(s.at));
        json.field("seq", s.seq);
        json.field("time_ns", since_start(h_, s.time_ns));
        if (s.at == Moment::FirstFailure) {
          json.object("failed_request", [&] {
            json.field("api", api_name(d.first_failure->api));
            json.field("bytes", d.first_failure->bytes);
          });
        }
        json.field("live_bytes", f.live_bytes);
        json.field("live_count", f.live_count);
        json.field("requested_bytes", f.live_bytes);
        json.field("granted_bytes", f.granted_bytes);
        json.field("ranges", f.ranges);
        json.field("lowest_address", f.lowest_address);
        json.field("span_bytes", f.span_bytes);
        json.field("gap_bytes", f.gap_bytes);
        json.field("gap_count", f.gap_count);
        json.field("largest_gap_bytes", f.largest_gap_bytes);
        json.field("fragmentation", f.fragmentation);
        json.objects("histogram", f.histogram, [&](const SizeBucket& b) {
          json.field("min_bytes", b.min_bytes);
          json.field("max_bytes", b.max_bytes);
          json.field("count", b.count);
          json.field("bytes", b.bytes);
        });
        json.object("virtual_memory", [&] {
          json.field("reserved_bytes", f.reserved_bytes);
          json.field("mapped_bytes", f.mapped_bytes);
          json.field("physical_bytes", f.physical_bytes);
        });
        json.objects("pools", f.pools, [&](const PoolView& p) {
          write_pool_handle(json, p.handle);
          write_pool_occupancy(json, p);
        });
        json.end_object();
      }
    }
    json.end_array();
    json.key("allocator");
    json.begin_array();
    for (const DeviceFrames& d : devices)
      for (const DeviceFrames::AllocatorView& v : d.allocator) {
        json.begin_object();
        json.field("device", d.device);
        json.field("at", v.at);
        json.field("seq", v.seq);
        json.field("time_ns", since_start(h_, v.time_ns));
        json.field("reserved_bytes", v.reserved_bytes);
        json.field("allocated_bytes", v.allocated_bytes);
        write_segment_view(json, v.segments);
        json.end_object();
      }
    json.end_array();
    json.key("remedies");
    json.begin_array();
    for (const std::string& r : remedies_) json.value(r);
    json.end_array();
  }

  std::vector<DeviceFrames> devices_;
  std::vector<std::string> remedies_;
};

class FragmentationReport : public Report {
 public:
  explicit FragmentationReport(const ReportOptions& options) : options_(options) {}

  std::unique_ptr<ReportModel> analyze(ProcessContext& process) override {
    PoolTracker pools;
    BlockLayer blocks;  // PyTorch's blocks
    // Let go of before the second pass: two live sets at once were 2 GB with ten million live.
    std::optional<Replay> first_pass(process.pass({&pools, &blocks}));
    const Replay& replay = *first_pass;

    std::vector<DeviceFrames> devices;
    std::vector<uint64_t> seqs;
    for (const Series& s : replay.series()) {
      if (s.key.memory != format::MemoryType::Device || !wanted_series(options_, s.key)) continue;
      DeviceFrames d;
      d.device = s.key.device;
      d.peak_seq = s.peak_seq;
      if (s.peak_seq) seqs.push_back(s.peak_seq);
      if (!s.failures.empty()) {
        d.first_failure = s.failures.front();
        seqs.push_back(s.failures.front().seq);
      }
      if (const BlockDevice* b = blocks_of(blocks, s.key)) {
        d.blocks = true;
        d.most_idle_seq = b->worst_idle_seq;
        if (d.most_idle_seq) seqs.push_back(d.most_idle_seq);
      }
      devices.push_back(std::move(d));
    }
    std::sort(devices.begin(), devices.end(),
              [](const DeviceFrames& a, const DeviceFrames& b) { return a.device < b.device; });

    // The second pass's replay and pools, while it runs.
    const PoolTracker* pools_now = &pools;
    auto take = [&](const Replay& r, DeviceFrames& d, Moment at) {
      d.snapshots.push_back(
          {at, r.last_seq(), r.last_time_ns(), measure_fragmentation(r, *pools_now, d.device)});
    };
    // The end comes from this first pass; the second one stops after the last moment wanted.
    std::vector<Snapshot> at_end;
    for (DeviceFrames& d : devices) {
      take(replay, d, Moment::End);
      at_end.push_back(std::move(d.snapshots.back()));
      d.snapshots.clear();
    }
    first_pass.reset();
    if (options_.at_seq) seqs.push_back(*options_.at_seq);
    if (!seqs.empty() || options_.at_seconds) {
      PoolTracker second_pools;
      pools_now = &second_pools;
      BlockLayer second_blocks;
      Checkpoints at_seqs(
          seqs,
          [&](const Replay& r, uint64_t seq) {
            for (DeviceFrames& d : devices) {
              if (d.peak_seq == seq) take(r, d, Moment::Peak);
              if (d.blocks && d.peak_seq == seq) take_allocator(r, second_blocks, d, "peak");
              if (d.blocks && d.most_idle_seq == seq)
                take_allocator(r, second_blocks, d, "most-idle");
              if (d.first_failure && d.first_failure->seq == seq) take(r, d, Moment::FirstFailure);
              if (options_.at_seq && *options_.at_seq == seq) take(r, d, Moment::Seq);
            }
          },
          !options_.at_seconds);
      std::optional<Checkpoints> at_time;
      if (options_.at_seconds && !options_.at_seq) {
        at_time.emplace(at_time_ns(process.reader(), *options_.at_seconds), [&](const Replay& r) {
          for (DeviceFrames& d : devices) take(r, d, Moment::Time);
        });
        process.pass({&second_pools, &second_blocks, &at_seqs, &*at_time});
      } else {
        process.pass({&second_pools, &second_blocks, &at_seqs});
      }
    }
    for (size_t i = 0; i < devices.size(); ++i)
      devices[i].snapshots.push_back(std::move(at_end[i]));

    std::vector<std::string> remedies = find_remedies(process.reader(), devices);
    return std::make_unique<FragmentationModel>(options_, process.header(), process.frames(),
                                                std::move(devices), std::move(remedies));
  }

  static void take_allocator(const Replay& replay, const BlockLayer& blocks, DeviceFrames& d,
                             const char* at) {
    DeviceFrames::AllocatorView v{at, replay.last_seq(), replay.last_time_ns(), 0, 0, {}};
    for (const Series& s : replay.series())
      if (s.key.device == d.device && s.key.memory == format::MemoryType::Device)
        v.reserved_bytes = s.live_bytes;
    if (const BlockDevice* b = blocks.device(d.device)) v.allocated_bytes = b->live_bytes;
    v.segments = blocks.segment_use(d.device);
    d.allocator.push_back(std::move(v));
  }

  std::string next_step() const override {
    return hint_line("gmemhook peak " + shell_word(options_.run_arg),
                     "which call sites held the memory at the peak");
  }

  void merge(const Report&) override {}  // the hint is the same whatever the processes held

 private:
  std::vector<std::string> find_remedies(const ProcessReader& reader,
                                         const std::vector<DeviceFrames>& devices) const {
    std::vector<std::string> out;
    const bool pytorch = uses_pytorch(reader);
    for (const DeviceFrames& d : devices) {
      const std::string dev = device_name(d.device);
      bool scattered = false;
      for (const Snapshot& s : d.snapshots) {
        const Fragmentation& f = s.f;
        if (s.at == Moment::FirstFailure && d.first_failure) {
          const uint64_t want = d.first_failure->bytes;
          if (want > f.largest_gap_bytes && want <= f.gap_bytes)
            out.push_back(fmt::format(
                "{}: the failed {} request would have fit in the gaps together ({}) but in "
                "none of them (largest {}): fragmentation, not capacity.",
                dev, human_size(want), human_size(f.gap_bytes), human_size(f.largest_gap_bytes)));
        }
        if (s.at != Moment::End && f.gap_count >= 2 && f.fragmentation >= 0.5 &&
            f.gap_bytes * 10 >= f.span_bytes)
          scattered = true;
      }
      if (scattered)
        out.push_back(
            pytorch ? fmt::format("{}: free space is scattered in small holes between live blocks. "
                                  "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True so PyTorch "
                                  "grows mapped segments instead of leaving holes.",
                                  dev)
                    : fmt::format(
                          "{}: free space is scattered in small holes between live blocks. "
                          "Allocate long-lived buffers first (or from one arena) so short-lived "
                          "ones don't leave holes between them; with PyTorch, set "
                          "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.",
                          dev));
      const Snapshot& last = d.snapshots.back();
      for (const PoolView& p : last.f.pools) {
        const uint64_t idle = p.high_water_bytes - std::min(p.high_water_bytes, p.live_bytes);
        if (idle >= (64u << 20) && idle >= p.live_bytes)
          out.push_back(fmt::format(
              "{}: {} may keep up to {} it no longer hands out (high-water mark {}, {} live): "
              "cudaMemPoolTrimTo or a lower cudaMemPoolAttrReleaseThreshold gives it back.",
              dev, p.handle ? fmt::format("pool {:#x}", p.handle) : std::string("the default pool"),
              human_size(idle), human_size(p.high_water_bytes), human_size(p.live_bytes)));
      }
      for (const Snapshot& s : d.snapshots) {
        if (s.at != Moment::Peak) continue;
        const uint64_t lost = s.f.granted_bytes - s.f.live_bytes;
        if (lost >= (1u << 20) && lost * 10 >= s.f.granted_bytes)
          out.push_back(
              fmt::format("{}: rounding small requests up to the granularity costs {} at the peak; "
                          "suballocate small buffers from one larger allocation.",
                          dev, human_size(lost)));
      }
    }
    return out;
  }

  const ReportOptions& options_;
};

}  // namespace

std::unique_ptr<Report> make_fragmentation_report(const ReportOptions& options) {
  return std::make_unique<FragmentationReport>(options);
}

}  // namespace gmemhook::analysis

// Reading one side of a diff (see diff_sides.h).
#include "analyzer/reports/diff_sides.h"

#include <fmt/format.h>

#include "analyzer/model/block_layer.h"
#include "analyzer/model/live_view.h"
#include "analyzer/model/peak_sites.h"
#include "analyzer/reports/allocated_layer.h"
#include "analyzer/reports/process_context.h"
#include "analyzer/reports/process_walk.h"

namespace gmemhook::analysis {

namespace {

bool device_memory(const SeriesKey& key, const SideOptions& options) {
  if (key.memory != format::MemoryType::Device) return false;
  return !options.device || key.device == *options.device;
}

bool is_memory(const SiteGroup& g) {
  return g.kind == LiveKind::Allocation || g.kind == LiveKind::Physical;
}

DeviceSites device_sites(int32_t device, uint64_t total, const std::vector<SiteGroup>& groups,
                         const FrameLookup& frames) {
  DeviceSites d;
  d.device = device;
  d.total_bytes = total;
  for (const SiteGroup& g : groups) {
    if (!is_memory(g) || g.series.device != device) continue;
    d.sites.push_back(SiteFrames{frames(g.stack), g.bytes, g.count});
  }
  return d;
}

}  // namespace

int read_side(const std::filesystem::path& run, const SideOptions& options, RunWarnings& warnings,
              std::vector<ProcessSites>& out, std::FILE* out_file, std::FILE* err) {
  return walk_processes(run, std::nullopt, out_file, err, [&](ProcessReader& reader) {
    ProcessContext process(reader, options.apis);
    PeakSites captured;
    BlockLayer blocks;  // PyTorch's blocks: compared when both sides have them
    const Replay replay =
        options.leaks ? process.pass({&blocks}) : process.pass({&captured, &blocks});
    const FrameLookup frames = process.frames();

    ProcessSites p;
    p.pid = reader.info().pid;
    p.exe = reader.info().exe;
    p.rank = reader.info().rank;
    p.title = process_title(reader);
    std::vector<SiteGroup> live;
    if (options.leaks)
      live = group_live(
          replay, [&](const SeriesKey& k) { return device_memory(k, options); }, false);
    for (const Series* s : ordered_series(replay)) {
      if (s->key.memory == format::MemoryType::Device) p.devices_used.push_back(s->key.device);
      if (!device_memory(s->key, options)) continue;
      if (options.leaks) {
        p.devices.push_back(device_sites(s->key.device, s->live_bytes, live, frames));
      } else {
        p.devices.push_back(
            device_sites(s->key.device, s->peak_bytes, captured.at_peak(s->key), frames));
      }
      if (const BlockDevice* b = blocks_of(blocks, s->key)) {
        // The allocated layer: blocks (and, for --leaks, memory outside the allocator).
        const auto want = [&](const SeriesKey& k) { return k == s->key; };
        std::vector<SiteGroup> groups =
            options.leaks ? with_blocks(replay, blocks, group_live(replay, want, false), want)
                          : block_site_groups(b->sites_at_peak);
        uint64_t total = b->peak_bytes;
        if (options.leaks) {
          total = 0;
          for (const SiteGroup& g : groups) total += g.bytes;
        }
        DeviceSites a = device_sites(s->key.device, total, groups, frames);
        DeviceSites& d = p.devices.back();
        d.has_allocated = true;
        d.allocated_total_bytes = a.total_bytes;
        d.allocated_sites = std::move(a.sites);
      }
    }
    for (const ReadWarning& w : reader.warnings()) warnings.add(w.to_string());
    warnings.add_symbolizer(process.stacks());
    out.push_back(std::move(p));
  });
}

}  // namespace gmemhook::analysis

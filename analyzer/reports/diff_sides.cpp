// Reading one side of a diff (see diff_sides.h).
#include "analyzer/reports/diff_sides.h"

#include <fmt/format.h>

#include "analyzer/log/run_dir.h"
#include "analyzer/model/block_layer.h"
#include "analyzer/model/live_view.h"
#include "analyzer/model/peak_sites.h"
#include "analyzer/reports/allocated_layer.h"
#include "analyzer/reports/report_common.h"

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
                         const Replay& replay, StackResolver& stacks) {
  DeviceSites d;
  d.device = device;
  d.total_bytes = total;
  for (const SiteGroup& g : groups) {
    if (!is_memory(g) || g.series.device != device) continue;
    d.sites.push_back(SiteFrames{frames_of(stacks, replay, g.stack), g.bytes, g.count});
  }
  return d;
}

}  // namespace

std::vector<ProcessSites> read_side(const std::filesystem::path& run, const SideOptions& options,
                                    RunWarnings& warnings) {
  std::vector<ProcessSites> out;
  for (const auto& dir : find_process_dirs(run)) {
    ProcessReader reader = ProcessReader::open(dir);
    StackResolver stacks(reader);
    StackInterner interned;
    Replay replay(interned, options.apis);
    PeakSites captured;
    if (!options.leaks) replay.observe(captured);
    BlockLayer blocks;  // PyTorch's blocks (issue 9): compared when both sides have them
    replay.observe(blocks);
    reader.read_events(replay);
    replay.finish();

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
      if (!device_memory(s->key, options)) continue;
      if (options.leaks) {
        p.devices.push_back(device_sites(s->key.device, s->live_bytes, live, replay, stacks));
      } else {
        p.devices.push_back(
            device_sites(s->key.device, s->peak_bytes, captured.at_peak(s->key), replay, stacks));
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
        DeviceSites a = device_sites(s->key.device, total, groups, replay, stacks);
        DeviceSites& d = p.devices.back();
        d.has_allocated = true;
        d.allocated_total_bytes = a.total_bytes;
        d.allocated_sites = std::move(a.sites);
      }
    }
    for (const ReadWarning& w : reader.warnings()) warnings.add(w.to_string());
    warnings.add_symbolizer(stacks);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace gmemhook::analysis

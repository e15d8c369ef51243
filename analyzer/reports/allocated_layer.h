// The allocated layer (PyTorch's blocks) as the reports show it: blocks inside the
// reserved layer (the segments the allocator got from CUDA), never counted on top of them.
// Each report calls these in one clearly marked place; a device without blocks reads as before.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "analyzer/model/block_layer.h"
#include "analyzer/model/replay.h"
#include "analyzer/output/json_writer.h"

namespace gmemhook::analysis {

// The entry point a caching allocator reports its blocks through (c10's profiler hook).
bool is_block_api(uint8_t api);
// api_name(), but "PyTorch allocator" for the block entry point instead of its mangled name.
std::string site_api_name(uint8_t api);

// The device's allocated layer when it has one (device memory with block events), else null.
const BlockDevice* blocks_of(const BlockLayer& blocks, const SeriesKey& key);

// Live memory grouped by site (group_live()'s `groups`) with the caching allocator's segments
// taken out and its live blocks put in, for the series `want` accepts: what a program holds is
// its tensors, not the allocator's cache.
std::vector<SiteGroup> with_blocks(const Replay& replay, const BlockLayer& blocks,
                                   std::vector<SiteGroup> groups,
                                   const std::function<bool(const SeriesKey&)>& want);
// Blocks as site groups (api = the block entry point), for reports that list site groups.
std::vector<SiteGroup> block_site_groups(const std::vector<BlockGroup>& groups);

// Summary: the allocated layer of a device series, PyTorch's own totals beside ours.
void append_allocated_summary(std::string& text, const BlockLayer& blocks, const Series& s,
                              const char* at_end);
// "allocated": {...} for a device series with blocks, else null (docs/json.md).
void write_allocated_summary(JsonWriter& json, const BlockLayer& blocks, const Series& s);

// Leaks: the allocator's cache per device at this moment (segments that held blocks and hold
// none now), shown once as a total, not as leaks.
struct CachedSegments {
  int32_t device = -1;
  uint64_t bytes = 0, segments = 0;
};
std::vector<CachedSegments> cached_now(const BlockLayer& blocks,
                                       const std::function<bool(const SeriesKey&)>& want);
std::string cached_line(const CachedSegments& c);
void write_cached(JsonWriter& json, const std::vector<CachedSegments>& cached);

// Fragmentation: the caching allocator's segments at one moment.
void append_segment_view(std::string& text, const std::vector<SegmentUse>& use);
void write_segment_view(JsonWriter& json, const std::vector<SegmentUse>& use);

}  // namespace gmemhook::analysis

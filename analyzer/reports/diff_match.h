// How `gmemhook diff` decides that a site of one run is a site of the other: by symbol, never by
// address (load biases differ from run to run) nor, unless asked, by line (any edit above a call
// moves it). And which process of one run stands for which process of the other.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/reports/diff_sides.h"
#include "analyzer/reports/site_rows.h"

namespace gmemhook::analysis {

// What identifies a frame across runs:
//   Python frame:           file and function;
//   native, symbolized:     function and file (the module's file name when no file is known);
//   native, unsymbolized:   the module's file name and offset (stable only for the same build);
//   in no known module:     the address.
// With `lines`, the line too.
std::string frame_match_key(const Frame& frame, bool lines);
std::string stack_match_key(const std::vector<Frame>& frames, bool lines);

enum class SiteStatus { Grown, Shrunk, New, Gone, Same };
const char* status_name(SiteStatus status);  // "grown", "shrunk", "new", "gone", "same"

struct SiteDiff {
  std::vector<Frame> frames;  // the new run's when it has the site, else the base's
  uint64_t base_bytes = 0, new_bytes = 0;
  uint64_t base_count = 0, new_count = 0;
  SiteStatus status = SiteStatus::Same;
  int64_t delta() const { return int64_t(new_bytes) - int64_t(base_bytes); }
};

// What a site (or a row of sites) did, from its sums: new, gone, grown, shrunk or the same.
SiteStatus site_status(const SiteDiff& d);

// The sites of both sides matched (sites with one key summed), largest absolute change first;
// ties by the new bytes, then by the stack, so the order is the same from run to run.
std::vector<SiteDiff> diff_sites(const DeviceSites* base, const DeviceSites* now, bool lines);

// Sites grouped into the rows text shows (--group-by, as the reports group them: by default one
// row per line of user code). A row sums its sites; its frames are its largest change's.
struct DiffRow {
  SiteDiff total;
  std::vector<const SiteDiff*> members;  // into the sites, largest change first
};
// Rows, largest absolute change first; a site with no user frame is a row of its own.
std::vector<DiffRow> diff_rows(const std::vector<SiteDiff>& sites, GroupBy by);

// Pairs of indices into `base` and `now` (-1: the process has no counterpart). Two
// single-process runs pair whatever their executables; otherwise processes with a rank pair by
// rank, and the others by executable name, in pid order within an executable.
std::vector<std::pair<int, int>> pair_processes(const std::vector<ProcessSites>& base,
                                                const std::vector<ProcessSites>& now);

}  // namespace gmemhook::analysis

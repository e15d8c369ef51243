// Peak capture in one pass (see peak_sites.h). Every site change of a series since its latest peak
// is logged; undoing the log from the current per-site totals gives the totals at the peak. A new
// peak empties the log. When the log outgrows a bound proportional to the number of sites, the
// peak's groups are taken right away and logging stops until the next peak, so memory stays
// bounded and the time spent stays linear in the events.
#include "analyzer/model/peak_sites.h"

#include <algorithm>

namespace gmemhook::analysis {

PeakSites::PerSeries& PeakSites::of(const Replay& r, uint16_t series) {
  while (series_.size() <= series) {
    series_.emplace_back();
    series_.back().key = r.series()[series_.size() - 1].key;
  }
  return series_[series];
}

void PeakSites::site_changed(const Replay& r, uint32_t site, int64_t bytes, int64_t count) {
  const uint16_t series = r.site(site).series;
  if (series >= series_.size() || !series_[series].pending) return;
  std::vector<Change>& log = series_[series].since_peak;
  log.push_back({site, bytes, count});
  // Taking the peak recounts every site from the live set: log at least as many changes.
  if (log.size() > std::max<size_t>({4096, 4 * r.site_count(), r.live().size()}))
    take_peak(r, series);
}

void PeakSites::new_peak(const Replay& r, uint16_t series) {
  // The state now is the peak's: log what changes from here on.
  PerSeries& s = of(r, series);
  s.since_peak.clear();
  s.pending = true;
}

void PeakSites::allocation_failed(const Replay& r, uint16_t series) {
  if (r.series()[series].failed == 1) of(r, series).at_first_failure = r.site_groups(series);
}

void PeakSites::finish(const Replay& r) {
  for (size_t i = 0; i < series_.size(); ++i)
    if (series_[i].pending) take_peak(r, static_cast<uint16_t>(i));
}

void PeakSites::take_peak(const Replay& r, uint16_t series) {
  PerSeries& s = series_[series];
  std::vector<int64_t> undo_bytes(r.sites().size()), undo_count(r.sites().size());
  for (const Change& c : s.since_peak) {
    undo_bytes[c.site] += c.bytes;
    undo_count[c.site] += c.count;
  }
  s.at_peak = r.site_groups(series, undo_bytes, undo_count);
  s.since_peak.clear();
  s.since_peak.shrink_to_fit();
  s.pending = false;
}

const std::vector<SiteGroup>& PeakSites::at_peak(const SeriesKey& key) const {
  for (const PerSeries& s : series_)
    if (s.key == key) return s.at_peak;
  return none_;
}

const std::vector<SiteGroup>& PeakSites::at_first_failure(const SeriesKey& key) const {
  for (const PerSeries& s : series_)
    if (s.key == key) return s.at_first_failure;
  return none_;
}

}  // namespace gmemhook::analysis

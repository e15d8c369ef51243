// Who held the memory at each series' peak and at its first failed allocation, grouped by call
// site, captured in the same single pass as the peak itself (a Replay observer).
#pragma once

#include <cstdint>
#include <vector>

#include "analyzer/model/replay.h"

namespace gmemhook::analysis {

class PeakSites final : public ReplayObserver {
 public:
  PeakSites() : ReplayObserver(kSites) {}

  // After the pass: the live memory of series `key` grouped by call site at its peak, and at its
  // first failed allocation, largest first; empty when the series never had one.
  const std::vector<SiteGroup>& at_peak(const SeriesKey& key) const;
  const std::vector<SiteGroup>& at_first_failure(const SeriesKey& key) const;

  void site_changed(const Replay& r, uint32_t site, int64_t bytes, int64_t count) override;
  void new_peak(const Replay& r, uint16_t series) override;
  void allocation_failed(const Replay& r, uint16_t series) override;
  void finish(const Replay& r) override;

 private:
  struct Change {
    uint32_t site;
    int64_t bytes, count;
  };
  struct PerSeries {
    SeriesKey key;
    // Since the latest peak: whether its groups are still to be taken, and the site changes
    // made since, undone to recover what each site held at the peak.
    bool pending = false;
    std::vector<Change> since_peak;
    std::vector<SiteGroup> at_peak, at_first_failure;
  };
  PerSeries& of(const Replay& r, uint16_t series);
  void take_peak(const Replay& r, uint16_t series);

  std::vector<PerSeries> series_;  // by Replay::series() index
  std::vector<SiteGroup> none_;
};

}  // namespace gmemhook::analysis

// Downsampling of a series' timeline (see timeline.h).
#include "analyzer/model/timeline.h"

namespace gmemhook::analysis {

void Timeline::flush() {
  points_.push_back(pending_);
  pending_.bytes = 0;  // the next window's first change is its highest so far
  countdown_ = stride_;
  if (points_.size() < 2 * kPoints) return;
  // Halve: each pair becomes its higher point, and each new point stands for twice the changes.
  size_t out = 0;
  for (size_t i = 0; i + 1 < points_.size(); i += 2)
    points_[out++] = points_[i].bytes >= points_[i + 1].bytes ? points_[i] : points_[i + 1];
  points_.resize(out);
  stride_ *= 2;
  countdown_ = stride_;
}

std::vector<TimelinePoint> Timeline::points() const {
  std::vector<TimelinePoint> all = points_;
  if (countdown_ != stride_) all.push_back(pending_);
  if (!all.empty() && all.back().seq != last_.seq) all.push_back(last_);
  return all;
}

}  // namespace gmemhook::analysis

// Live bytes of one series over time, in bounded memory: at most 2 × kPoints points however long
// the run. When the buffer fills, neighbouring points are merged keeping the higher one, so a
// spike is never averaged away — a memory timeline is read for its peaks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gmemhook::analysis {

struct TimelinePoint {
  uint64_t time_ns = 0;  // absolute CLOCK_MONOTONIC
  uint64_t seq = 0;
  uint64_t bytes = 0;
};

class Timeline {
 public:
  static constexpr size_t kPoints = 512;

  // Called after every change of the series' live bytes, so per allocation and free: a window
  // that starts after a flush finds pending_.bytes at 0 and takes its first change without a
  // test of its own, and a countdown ends it without a load of stride_ (~4
  // instructions of every event of `summary`).
  void add(uint64_t seq, uint64_t time_ns, uint64_t bytes) {
    if (bytes >= pending_.bytes) pending_ = {time_ns, seq, bytes};
    last_ = {time_ns, seq, bytes};
    if (--countdown_ == 0) flush();
  }
  // The points so far, oldest first, ending with the latest value.
  std::vector<TimelinePoint> points() const;

 private:
  void flush();

  std::vector<TimelinePoint> points_;
  TimelinePoint pending_;  // the highest point of the current window of `stride_` changes
  TimelinePoint last_;
  uint64_t countdown_ = 1;  // changes left in the window; stride_ when none came yet
  uint64_t stride_ = 1;
};

}  // namespace gmemhook::analysis

// What CUDA graphs did (a Replay observer): allocations made on a stream while it was being
// captured belong to the graph (they are counted once, like any allocation), and launches replay
// the graph without allocating again.
#pragma once

#include <cstdint>
#include <vector>

#include "analyzer/model/replay.h"

namespace gmemhook::analysis {

struct GraphActivity {
  uint64_t captures = 0;             // cudaStreamBeginCapture calls that succeeded
  uint64_t capture_allocations = 0;  // successful allocations on a capturing stream
  uint64_t capture_bytes = 0;
  uint64_t launches = 0;                      // cudaGraphLaunch calls that succeeded
  uint64_t uploads = 0;  // cudaGraphUpload calls (or uploading instantiations) that succeeded
  uint64_t allocations_between_launches = 0;  // allocations after the first launch, any stream
  bool any() const { return captures || launches || uploads; }
};

class GraphTracker final : public ReplayObserver {
 public:
  GraphTracker() : ReplayObserver(kCalls) {}

  const GraphActivity& activity() const { return activity_; }

  void call(const Replay& r, const format::Event& ev, const format::ApiInfo& api) override;
  bool calls_of(format::EventKind kind) const override;

 private:
  GraphActivity activity_;
  std::vector<uint64_t> capturing_streams_;  // few at a time: a vector beats a set
};

}  // namespace gmemhook::analysis

// Folded stacks, the input of flamegraph.pl, inferno and speedscope: one line per stack,
// "outermost;...;innermost BYTES", or with two weights "STACK BASE_BYTES NEW_BYTES" for
// difffolded-style diffs. Profiles are not kept apart: identical stacks add up (filter with
// --pid / --device / --memory to look at one).
//
// Frame names: the function when known; "module+0xoffset" (the module's file name) when not;
// "file:function" for Python frames. ';' in a name becomes ':' and line breaks become spaces,
// so every line matches ^[^;\n]+(;[^;\n]+)* \d+$.
#pragma once

#include <map>

#include "analyzer/output/stack_export.h"

namespace gmemhook::analysis {

// One frame as folded output names it (escaped).
std::string folded_frame_name(const Frame& frame);
// The folded stack, outermost first; `depth` > 0 keeps that many innermost frames.
std::string folded_stack(const std::vector<Frame>& frames, size_t depth);

class FoldedStacks : public StackExport {
 public:
  explicit FoldedStacks(size_t depth) : depth_(depth) {}

  void begin_profile(const std::string&) override {}
  bool keeps_profiles_apart() const override { return false; }
  void add(const std::vector<Frame>& frames, uint64_t bytes) override {
    accumulate(frames, bytes, 0);
  }
  // Two weights (diff): finish() writes "STACK BASE NEW" once any add_pair() was made.
  void add_pair(const std::vector<Frame>& frames, uint64_t base, uint64_t now) override {
    two_columns_ = true;
    accumulate(frames, base, now);
  }
  // Lines sorted by stack; stacks of zero weight (in both columns) left out.
  std::string finish() override;

 private:
  void accumulate(const std::vector<Frame>& frames, uint64_t first, uint64_t second);

  size_t depth_;
  bool two_columns_ = false;
  std::map<std::string, std::pair<uint64_t, uint64_t>> weights_;
};

}  // namespace gmemhook::analysis

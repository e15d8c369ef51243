// Weighted stacks written for other tools (--format folded / speedscope): what peak and leaks
// hand over, one named profile per process and kind of memory, one stack per site.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/symbols/frame.h"

namespace gmemhook::analysis {

class StackExport {
 public:
  virtual ~StackExport() = default;
  // Later stacks belong to this profile ("process 100 train: device 0 peak").
  virtual void begin_profile(const std::string& name) = 0;
  // Whether profiles stay apart in the document. Where they do not (folded), a model must not
  // hand over the same bytes twice, e.g. PyTorch's blocks and the segments that hold them.
  virtual bool keeps_profiles_apart() const { return true; }
  // `frames` innermost first, as the reports keep them; `bytes` is the weight.
  virtual void add(const std::vector<Frame>& frames, uint64_t bytes) = 0;
  // The same stack weighed twice (a diff's base and new); formats that cannot show two weights
  // are never offered a model that has them (format_table.h), so by default it is the new weight.
  virtual void add_pair(const std::vector<Frame>& frames, uint64_t /*base*/, uint64_t now) {
    add(frames, now);
  }
  // The whole document, once every process was added.
  virtual std::string finish() = 0;
};

}  // namespace gmemhook::analysis

// Weighted stacks written for other tools (--format folded / speedscope): what peak and leaks
// hand over, one named profile per process and kind of memory, one stack per site.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analyzer/symbols/frame.h"
#include "analyzer/output/output_format.h"

namespace gmemhook::analysis {

class StackExport {
 public:
  virtual ~StackExport() = default;
  // Later stacks belong to this profile ("process 100 train: device 0 peak").
  virtual void begin_profile(const std::string& name) = 0;
  // `frames` innermost first, as the reports keep them; `bytes` is the weight.
  virtual void add(const std::vector<Frame>& frames, uint64_t bytes) = 0;
  // The whole document, once every process was added.
  virtual std::string finish() = 0;
};

// The export for `format` (null for text and JSON). `depth` > 0 keeps that many innermost frames;
// `title` names the whole document where the format has a name ("gmemhook peak RUN").
std::unique_ptr<StackExport> make_stack_export(OutputFormat format, size_t depth,
                                               const std::string& title);

}  // namespace gmemhook::analysis

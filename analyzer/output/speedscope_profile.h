// A speedscope file (https://www.speedscope.app/file-format-schema.json): one "sampled" profile
// per process and kind of memory, each site's stack a sample weighted by its bytes, frames
// shared between profiles. Frame names are the function (Python: the function, with its file in
// "file"), or "module+0xoffset" when the binary could not be symbolized.
#pragma once

#include <map>
#include <tuple>

#include "analyzer/output/stack_export.h"

namespace gmemhook::analysis {

class SpeedscopeProfile : public StackExport {
 public:
  SpeedscopeProfile(size_t depth, std::string title) : depth_(depth), title_(std::move(title)) {}

  void begin_profile(const std::string& name) override;
  void add(const std::vector<Frame>& frames, uint64_t bytes) override;
  std::string finish() override;

 private:
  struct SharedFrame {
    std::string name;
    std::optional<std::string> file;
    std::optional<uint32_t> line;
  };
  struct Profile {
    std::string name;
    uint64_t total = 0;
    std::vector<std::vector<size_t>> samples;  // frame indices, outermost first
    std::vector<uint64_t> weights;
  };
  size_t frame_index(const Frame& frame);

  size_t depth_;
  std::string title_;
  std::vector<SharedFrame> frames_;
  std::map<std::tuple<std::string, std::string, uint32_t>, size_t> frame_ids_;
  std::vector<Profile> profiles_;
};

}  // namespace gmemhook::analysis

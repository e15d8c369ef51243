// The interned call stacks of one thread file: id -> return addresses and Python frames, both
// innermost first. Ids are dense (1, 2, 3 ... in order of first use), so flat arrays indexed by id
// suffice.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "analyzer/log/records.h"

namespace gmemhook::analysis {

class ThreadFileStacks {
 public:
  // The id the next stack record must carry.
  uint32_t next_id() const { return static_cast<uint32_t>(starts_.size()); }
  // Number of stacks; valid ids are 1..size().
  uint32_t size() const { return static_cast<uint32_t>(starts_.size() - 1); }
  bool contains(uint32_t id) const { return id >= 1 && id <= size(); }

  void add(std::span<const uint64_t> frames, std::span<const PyFrameRef> python = {});
  // Frames of stack `id`; empty for id 0 ("no stack recorded") or an unknown id.
  std::span<const uint64_t> frames(uint32_t id) const;
  // Python frames of stack `id`; empty when it has none, for id 0 or an unknown id.
  std::span<const PyFrameRef> python_frames(uint32_t id) const;
  void clear();

 private:
  // Frames of stack i are frames_[starts_[i-1] .. starts_[i]); starts_[0] = 0. The same for
  // Python frames with py_starts_.
  std::vector<uint64_t> frames_;
  std::vector<size_t> starts_{0};
  std::vector<PyFrameRef> py_frames_;
  std::vector<size_t> py_starts_{0};
};

}  // namespace gmemhook::analysis

// Flat storage for one thread file's interned stacks.
#include "analyzer/stack_table.h"

namespace gmemhook::analysis {

void StackTable::add(std::span<const uint64_t> frames) {
  frames_.insert(frames_.end(), frames.begin(), frames.end());
  starts_.push_back(frames_.size());
}

std::span<const uint64_t> StackTable::frames(uint32_t id) const {
  if (!contains(id)) return {};
  return std::span<const uint64_t>(frames_).subspan(starts_[id - 1], starts_[id] - starts_[id - 1]);
}

void StackTable::clear() {
  frames_.clear();
  starts_.assign(1, 0);
}

}  // namespace gmemhook::analysis

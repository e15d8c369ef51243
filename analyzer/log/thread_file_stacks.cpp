// Flat storage for one thread file's interned stacks.
#include "analyzer/log/thread_file_stacks.h"

namespace gmemhook::analysis {

void ThreadFileStacks::add(std::span<const uint64_t> frames, std::span<const PyFrameRef> python) {
  frames_.insert(frames_.end(), frames.begin(), frames.end());
  starts_.push_back(frames_.size());
  py_frames_.insert(py_frames_.end(), python.begin(), python.end());
  py_starts_.push_back(py_frames_.size());
}

std::span<const uint64_t> ThreadFileStacks::frames(uint32_t id) const {
  if (!contains(id)) return {};
  return std::span<const uint64_t>(frames_).subspan(starts_[id - 1], starts_[id] - starts_[id - 1]);
}

std::span<const PyFrameRef> ThreadFileStacks::python_frames(uint32_t id) const {
  if (!contains(id)) return {};
  return std::span<const PyFrameRef>(py_frames_)
      .subspan(py_starts_[id - 1], py_starts_[id] - py_starts_[id - 1]);
}

void ThreadFileStacks::clear() {
  frames_.clear();
  starts_.assign(1, 0);
  py_frames_.clear();
  py_starts_.assign(1, 0);
}

}  // namespace gmemhook::analysis

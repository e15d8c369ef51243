// The distinct call stacks of one process. Thread files intern their stacks (and Python code
// objects) separately, ids 1, 2, 3 ... per file, so the same stack recorded by two threads has
// two ids; reports group by identical stack, so every (thread file, id) pair is mapped here to
// one process-wide id. A stack's identity is its native return addresses plus its Python frames
// (code object by content, instruction offset).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzer/log/records.h"
#include "analyzer/model/module_epochs.h"

namespace gmemhook::analysis {

class StackInterner {
 public:
  // Where a process-wide stack was first met: a thread file (by index) and its id there. Its
  // Python frames are read back from that file (ThreadFileReader::python_frames).
  struct Origin {
    size_t thread_index = 0;
    uint32_t id = 0;
  };

  // Process-wide id of stack `id` of thread file `thread_index`, or 0 for "no stack".
  uint32_t id(size_t thread_index, uint32_t id) const {
    if (id == 0 || thread_index >= threads_) return 0;
    const std::vector<uint32_t>& ids = by_thread_[thread_index];
    return id < ids.size() ? ids[id] : 0;
  }

  // A run whose code changed under its addresses (module_epochs.h): a stack recorded before and
  // after gets one id per naming, so each is named after the code it ran. `epochs` outlives
  // this; with one epoch (no unloads) nothing changes.
  void set_epochs(const ModuleEpochs* epochs) { epochs_ = epochs; }
  // The events that follow are of epoch `e`: id() maps each file's stacks to the ids of their
  // naming there. A replay starts at 0 and moves on as it passes the snapshots.
  void enter_epoch(size_t e);
  const ModuleEpochs* epochs() const { return epochs_; }

  // Records a PyCode record of a thread file (before the stacks that refer to it).
  void add_code(size_t thread_index, const PyCode& code);
  // Records that stack `id` of thread file `thread_index` has these frames (innermost first).
  // Repeating a pass repeats the calls; the ids stay the same.
  void add(size_t thread_index, uint32_t id, std::span<const uint64_t> frames,
           std::span<const PyFrameRef> python = {});

  // Native frames of a process-wide id (1..size()); empty for 0.
  std::span<const uint64_t> frames(uint32_t id) const;
  Origin origin(uint32_t id) const { return id && id <= size() ? origins_[id - 1] : Origin{}; }
  uint32_t size() const { return static_cast<uint32_t>(origins_.size()); }
  // The epoch whose module map names the native frames of `id` (0 without epochs).
  size_t naming_epoch(uint32_t id) const;

 private:
  uint32_t intern(std::span<const uint64_t> key, size_t native_count, Origin origin,
                  uint32_t group);
  uint32_t code_id(size_t thread_index, uint32_t code_id) const;

  const ModuleEpochs* epochs_ = nullptr;
  size_t epoch_ = 0;
  // by_thread_ of the other epochs, kept for the next pass; and every (file, id) seen so far, by
  // one of its ids, whose key (less its group) is what the next epoch interns again.
  std::vector<std::vector<std::vector<uint32_t>>> other_epochs_;
  std::vector<std::vector<uint32_t>> seen_;
  std::vector<uint32_t> groups_;  // per id: ModuleEpochs::group, the key's last word when > 0

  // [thread][per-file id] -> process-wide id, in the current epoch.
  std::vector<std::vector<uint32_t>> by_thread_;
  // by_thread_.size(), kept: id() is called for every allocation, and the size of a vector of
  // 24-byte vectors is a division. Set wherever by_thread_ changes size.
  size_t threads_ = 0;
  // Identity keys: native frames, then one word per Python frame. Id i's key is
  // keys_[starts_[i-1] .. starts_[i]), its first native_[i-1] words the native frames.
  std::vector<uint64_t> keys_;
  std::vector<size_t> starts_{0};
  std::vector<uint32_t> native_;
  std::vector<Origin> origins_;
  std::unordered_multimap<uint64_t, uint32_t> by_hash_;
  std::vector<uint64_t> scratch_;
  // Python code objects by content, and each file's code ids mapped to them.
  std::unordered_map<std::string, uint32_t> codes_;
  std::vector<std::vector<uint32_t>> codes_by_thread_;
};

}  // namespace gmemhook::analysis

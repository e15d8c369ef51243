// The stretches of a run between module snapshots that took code away (a dlclose, a library
// reloaded at the same addresses): an address names different code on either side of such a
// snapshot, so a stack is named after the module map of its own stretch. Snapshots that only add
// modules start no new stretch, so a run without unloads has one, named by the latest snapshot.
// Cost, not measured (nothing to measure per event): the replay finds an epoch's start at the
// check it already makes for its moments (Replay::update_wake), ids stay an array lookup, and
// the work here is once per snapshot at load (a sort by load bias) and once per new stack.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "analyzer/log/process_file.h"

namespace gmemhook::analysis {

class ModuleEpochs {
 public:
  ModuleEpochs() = default;
  explicit ModuleEpochs(const std::vector<ModuleSnapshot>& snapshots);

  // Always at least one.
  size_t count() const { return epochs_.size(); }
  // Epoch e (>= 1) holds the events with a sequence number above this.
  uint64_t starts_after_seq(size_t e) const { return epochs_[e].after_seq; }
  // What epoch e's addresses are symbolized against: its last snapshot.
  const std::vector<Module>& modules(size_t e) const { return epochs_[e].modules; }

  // Which naming a stack of these return addresses, recorded in epoch e, shares: the latest
  // epoch k <= e whose start took away code under one of them (0: none did). Stacks of the same
  // addresses and group name the same code.
  uint32_t group(std::span<const uint64_t> frames, size_t e) const;
  // The epoch a stack of group `group` is named by: the last one before code under its frames
  // was taken away again (so that modules added meanwhile are there too).
  size_t naming_epoch(std::span<const uint64_t> frames, uint32_t group) const;

 private:
  struct Epoch {
    uint64_t after_seq = 0;
    std::vector<Module> modules;
    // Absolute address ranges [first, second) of the code the start of this epoch took away.
    std::vector<std::pair<uint64_t, uint64_t>> gone;
  };
  bool took_away(size_t e, std::span<const uint64_t> frames) const;

  std::vector<Epoch> epochs_{1};
};

}  // namespace gmemhook::analysis

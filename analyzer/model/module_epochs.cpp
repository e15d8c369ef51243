// Module epochs of a run (see module_epochs.h).
#include "analyzer/model/module_epochs.h"

#include <algorithm>

namespace gmemhook::analysis {

namespace {

bool same_module(const Module& a, const Module& b) {
  return a.path == b.path && a.build_id == b.build_id && a.load_bias == b.load_bias;
}

// A snapshot's modules by load bias: a long run writes hundreds of snapshots of hundreds of
// modules (each dlopen of a Python extension), so each is compared by lookup, not pairwise.
std::vector<const Module*> by_bias(const std::vector<Module>& modules) {
  std::vector<const Module*> sorted;
  for (const Module& m : modules) sorted.push_back(&m);
  std::sort(sorted.begin(), sorted.end(),
            [](const Module* a, const Module* b) { return a->load_bias < b->load_bias; });
  return sorted;
}

bool still_there(const Module& m, const std::vector<const Module*>& sorted) {
  auto it = std::lower_bound(sorted.begin(), sorted.end(), m.load_bias,
                             [](const Module* a, uint64_t bias) { return a->load_bias < bias; });
  for (; it != sorted.end() && (*it)->load_bias == m.load_bias; ++it)
    if (same_module(m, **it)) return true;
  return false;
}

}  // namespace

ModuleEpochs::ModuleEpochs(const std::vector<ModuleSnapshot>& snapshots) {
  const std::vector<Module>* before = nullptr;
  std::vector<const std::vector<Module>*> last_of_epoch{nullptr};
  for (const ModuleSnapshot& s : snapshots) {
    // An unfinished snapshot lacks modules that were still there: it takes nothing away, but
    // what it names is used as the latest snapshot always was.
    if (s.modules.empty()) continue;
    std::vector<std::pair<uint64_t, uint64_t>> gone;
    if (before && s.complete()) {
      const std::vector<const Module*> now = by_bias(s.modules);
      for (const Module& m : *before)
        if (!still_there(m, now))
          for (const Segment& seg : m.segments)
            gone.emplace_back(m.load_bias + seg.vaddr, m.load_bias + seg.vaddr + seg.memsz);
    }
    if (!gone.empty()) {
      std::sort(gone.begin(), gone.end());
      epochs_.push_back(Epoch{s.seq, {}, std::move(gone)});
      last_of_epoch.push_back(nullptr);
    }
    last_of_epoch.back() = &s.modules;
    before = &s.modules;
  }
  for (size_t e = 0; e < epochs_.size(); ++e)
    if (last_of_epoch[e]) epochs_[e].modules = *last_of_epoch[e];
}

bool ModuleEpochs::took_away(size_t e, std::span<const uint64_t> frames) const {
  const auto& gone = epochs_[e].gone;
  for (uint64_t pc : frames) {
    // Ranges may overlap (segments of two modules the loader placed in one gap): check each one
    // starting at or below pc back to the first; there are a handful per unload.
    auto it = std::upper_bound(gone.begin(), gone.end(), std::pair{pc, UINT64_MAX});
    while (it != gone.begin())
      if (pc < (--it)->second) return true;
  }
  return false;
}

uint32_t ModuleEpochs::group(std::span<const uint64_t> frames, size_t e) const {
  for (size_t k = e; k > 0; --k)
    if (took_away(k, frames)) return static_cast<uint32_t>(k);
  return 0;
}

size_t ModuleEpochs::naming_epoch(std::span<const uint64_t> frames, uint32_t group) const {
  for (size_t k = size_t{group} + 1; k < epochs_.size(); ++k)
    if (took_away(k, frames)) return k - 1;
  return epochs_.size() - 1;
}

}  // namespace gmemhook::analysis

// The frames a report shows for an interned stack: symbolized (inlined frames expanded), the
// recorder's own frames dropped, Python frames merged in. Resolved once per stack and cached.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzer/log/reader.h"
#include "analyzer/model/module_epochs.h"
#include "analyzer/model/stack_interner.h"
#include "analyzer/symbols/frame.h"
#include "analyzer/symbols/symbolizer.h"

namespace gmemhook::analysis {

class StackResolver {
 public:
  // Symbolizes each stack against the module map of its own epoch (module_epochs.h: the
  // latest snapshot when nothing was unloaded); reads Python frames back from the reader's
  // thread files, so resolve after a pass (a thread file holds its stacks until the next one).
  explicit StackResolver(const ProcessReader& reader);
  // The latest module snapshot of a process file: what its addresses are symbolized against.
  static std::vector<Module> latest_modules(const std::vector<ModuleSnapshot>& snapshots);
  // The same for a process read some other way (gmemhook top follows one as it runs): `modules`
  // to symbolize against, and the thread file of an index (nullptr when there is none).
  StackResolver(std::vector<Module> modules,
                std::function<const ThreadFileReader*(size_t thread_index)> thread_of);

  // The module epochs stacks are named by: the StackInterner whose ids are resolved here is
  // told of them (StackInterner::set_epochs), so that it splits a stack's ids where they change.
  const ModuleEpochs& epochs() const { return epochs_; }

  // Frames of process-wide stack `id` of `stacks`; none for 0.
  const std::vector<Frame>& resolve(const StackInterner& stacks, uint32_t id);
  // The symbolizers' warnings: at most one per module (binary missing or changed).
  const std::vector<std::string>& warnings() const;
  const std::vector<std::string>& modules_without_debug_info() const;

 private:
  StackResolver(ModuleEpochs epochs, std::function<const ThreadFileReader*(size_t)> thread_of);

  std::function<const ThreadFileReader*(size_t)> thread_of_;
  ModuleEpochs epochs_;
  std::vector<std::unique_ptr<Symbolizer>> symbolizers_;  // one per epoch
  std::unordered_map<uint32_t, std::vector<Frame>> cache_;
  std::vector<Frame> none_;
  // Several epochs: their symbolizers' warnings, each said once, gathered when asked for.
  mutable std::vector<std::string> warnings_, no_debug_info_;
};

}  // namespace gmemhook::analysis

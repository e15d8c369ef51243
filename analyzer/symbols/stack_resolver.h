// The frames a report shows for an interned stack: symbolized (inlined frames expanded), the
// recorder's own frames dropped, Python frames merged in. Resolved once per stack and cached.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzer/log/reader.h"
#include "analyzer/model/stack_interner.h"
#include "analyzer/symbols/frame.h"
#include "analyzer/symbols/symbolizer.h"

namespace gmemhook::analysis {

class StackResolver {
 public:
  // Symbolizes against the reader's latest module snapshot; reads Python frames back from its
  // thread files, so resolve after a pass (a thread file holds its stacks until the next one).
  explicit StackResolver(const ProcessReader& reader);
  // The latest module snapshot of a process file: what its addresses are symbolized against.
  static std::vector<Module> latest_modules(const std::vector<ModuleSnapshot>& snapshots);
  // The same for a process read some other way (gmemhook top follows one as it runs): `modules`
  // to symbolize against, and the thread file of an index (nullptr when there is none).
  StackResolver(std::vector<Module> modules,
                std::function<const ThreadFileReader*(size_t thread_index)> thread_of);

  // Frames of process-wide stack `id` of `stacks`; none for 0.
  const std::vector<Frame>& resolve(const StackInterner& stacks, uint32_t id);
  // The symbolizer's warnings: at most one per module (binary missing or changed).
  const std::vector<std::string>& warnings() const { return symbolizer_.warnings(); }
  const std::vector<std::string>& modules_without_debug_info() const {
    return symbolizer_.modules_without_debug_info();
  }

 private:
  std::function<const ThreadFileReader*(size_t)> thread_of_;
  Symbolizer symbolizer_;
  std::unordered_map<uint32_t, std::vector<Frame>> cache_;
  std::vector<Frame> none_;
};

}  // namespace gmemhook::analysis

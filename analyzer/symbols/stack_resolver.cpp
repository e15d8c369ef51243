// Stack resolution for the reports (see stack_resolver.h).
#include "analyzer/symbols/stack_resolver.h"

#include <algorithm>

#include "analyzer/symbols/python_stack.h"

namespace gmemhook::analysis {

std::vector<Module> StackResolver::latest_modules(const std::vector<ModuleSnapshot>& snaps) {
  // A snapshot replaces the one before it; an unfinished last one still names what it got to.
  for (auto it = snaps.rbegin(); it != snaps.rend(); ++it)
    if (!it->modules.empty()) return it->modules;
  return {};
}

StackResolver::StackResolver(const ProcessReader& reader)
    : StackResolver(ModuleEpochs(reader.module_snapshots()), [&reader](size_t i) {
        return i < reader.thread_count() ? &reader.thread(i) : nullptr;
      }) {}

StackResolver::StackResolver(std::vector<Module> modules,
                             std::function<const ThreadFileReader*(size_t)> thread_of)
    : StackResolver(ModuleEpochs({ModuleSnapshot{0, 0, modules.size(), std::move(modules)}}),
                    std::move(thread_of)) {}

StackResolver::StackResolver(ModuleEpochs epochs,
                             std::function<const ThreadFileReader*(size_t)> thread_of)
    : thread_of_(std::move(thread_of)), epochs_(std::move(epochs)) {
  for (size_t e = 0; e < epochs_.count(); ++e)
    symbolizers_.push_back(std::make_unique<Symbolizer>(epochs_.modules(e)));
}

namespace {

// Appends what `from` has that `to` has not yet, in order.
void gather(std::vector<std::string>& to, const std::vector<std::string>& from) {
  for (const std::string& s : from)
    if (std::find(to.begin(), to.end(), s) == to.end()) to.push_back(s);
}

}  // namespace

const std::vector<std::string>& StackResolver::warnings() const {
  if (symbolizers_.size() == 1) return symbolizers_[0]->warnings();
  warnings_.clear();
  for (const auto& s : symbolizers_) gather(warnings_, s->warnings());
  return warnings_;
}

const std::vector<std::string>& StackResolver::modules_without_debug_info() const {
  if (symbolizers_.size() == 1) return symbolizers_[0]->modules_without_debug_info();
  no_debug_info_.clear();
  for (const auto& s : symbolizers_) gather(no_debug_info_, s->modules_without_debug_info());
  return no_debug_info_;
}

const std::vector<Frame>& StackResolver::resolve(const StackInterner& stacks, uint32_t id) {
  if (id == 0 || id > stacks.size()) return none_;
  auto [it, inserted] = cache_.try_emplace(id);
  if (!inserted) return it->second;
  Symbolizer& symbolizer =
      *symbolizers_[std::min(stacks.naming_epoch(id), symbolizers_.size() - 1)];
  std::vector<Frame> frames;
  for (uint64_t pc : stacks.frames(id))
    for (const Frame& f : symbolizer.symbolize(pc))
      if (!Symbolizer::is_recorder_module(f.module)) frames.push_back(f);
  // Python frames: the one place they join a stack, each group in place of the interpreter-loop
  // frame that ran it (python_stack.h).
  const StackInterner::Origin origin = stacks.origin(id);
  if (const ThreadFileReader* log = thread_of_(origin.thread_index))
    frames = merge_python_frames(std::move(frames), log->python_frames(origin.id), *log);
  it->second = std::move(frames);
  return it->second;
}

}  // namespace gmemhook::analysis

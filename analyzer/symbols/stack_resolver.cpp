// Stack resolution for the reports (see stack_resolver.h).
#include "analyzer/symbols/stack_resolver.h"

#include "analyzer/symbols/python_stack.h"

namespace gmemhook::analysis {

namespace {

std::vector<Module> latest_modules(const ProcessReader& reader) {
  // A snapshot replaces the one before it; an unfinished last one still names what it got to.
  const auto& snaps = reader.module_snapshots();
  for (auto it = snaps.rbegin(); it != snaps.rend(); ++it)
    if (!it->modules.empty()) return it->modules;
  return {};
}

}  // namespace

StackResolver::StackResolver(const ProcessReader& reader)
    : reader_(reader), symbolizer_(latest_modules(reader)) {}

const std::vector<Frame>& StackResolver::resolve(const StackInterner& stacks, uint32_t id) {
  if (id == 0 || id > stacks.size()) return none_;
  auto [it, inserted] = cache_.try_emplace(id);
  if (!inserted) return it->second;
  std::vector<Frame> frames;
  for (uint64_t pc : stacks.frames(id))
    for (const Frame& f : symbolizer_.symbolize(pc))
      if (!Symbolizer::is_recorder_module(f.module)) frames.push_back(f);
  // Python frames: the one place they join a stack, each group in place of the interpreter-loop
  // frame that ran it (python_stack.h).
  const StackInterner::Origin origin = stacks.origin(id);
  if (origin.thread_index < reader_.thread_count()) {
    const ThreadFileReader& log = reader_.thread(origin.thread_index);
    frames = merge_python_frames(std::move(frames), log.python_frames(origin.id), log);
  }
  it->second = std::move(frames);
  return it->second;
}

}  // namespace gmemhook::analysis

// Folded stack lines (see folded_stacks.h).
#include "analyzer/output/folded_stacks.h"

#include <fmt/format.h>

#include <algorithm>

#include "analyzer/output/terminal_text.h"
#include "analyzer/output/text_format.h"

namespace gmemhook::analysis {

namespace {

// ';' separates frames and a line break ends the stack: neither may appear inside a name.
std::string escaped(std::string name) {
  for (char& c : name) {
    if (c == ';') c = ':';
    if (c == '\n' || c == '\r') c = ' ';
  }
  // The weight is the text after the last space, so a name must not be empty or end a line.
  if (name.find_first_not_of(' ') == std::string::npos) return "?";
  return terminal_text(name);  // the lines go to a terminal as often as to flamegraph.pl
}

}  // namespace

std::string folded_frame_name(const Frame& f) {
  if (f.python) return escaped(f.file.value_or("?") + ":" + f.function.value_or("?"));
  if (f.function) return escaped(*f.function);
  const std::string module = base_name(f.module);
  if (!module.empty()) return escaped(fmt::format("{}+{:#x}", module, f.module_offset));
  return fmt::format("{:#x}", f.address);
}

std::string folded_stack(const std::vector<Frame>& frames, size_t depth) {
  const size_t shown = depth == 0 ? frames.size() : std::min(depth, frames.size());
  if (shown == 0) return "(no stack recorded)";
  std::string out;
  for (size_t i = shown; i-- > 0;) {
    out += folded_frame_name(frames[i]);
    if (i) out += ';';
  }
  return out;
}

void FoldedStacks::accumulate(const std::vector<Frame>& frames, uint64_t first, uint64_t second) {
  auto& w = weights_[folded_stack(frames, depth_)];
  w.first += first;
  w.second += second;
}

std::string FoldedStacks::finish() {
  std::string out;
  for (const auto& [stack, w] : weights_) {
    if (w.first == 0 && w.second == 0) continue;
    if (two_columns_)
      out += fmt::format("{} {} {}\n", stack, w.first, w.second);
    else
      out += fmt::format("{} {}\n", stack, w.first);
  }
  return out;
}

}  // namespace gmemhook::analysis

// User-first and native stack text (see stack_text.h).
#include "analyzer/output/stack_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <regex>

#include "analyzer/output/terminal_text.h"
#include "analyzer/output/text_format.h"
#include "analyzer/symbols/user_code.h"

namespace gmemhook::analysis {

namespace {

std::string location(const Frame& f) {
  return *f.file + (f.line ? ":" + std::to_string(*f.line) : "");
}

// One section (the Python or the native frames, innermost first) with library runs folded.
// Numbers count frames within the section, so a folded line reads "#2-#13" and the next "#14".
void append_section(std::string& text, const std::vector<Frame>& frames, size_t depth,
                    const std::string& indent) {
  const std::vector<StackLine> lines = fold_library_frames(frames);
  const size_t shown = depth == 0 ? lines.size() : std::min(depth, lines.size());
  for (size_t i = 0; i < shown; ++i) {
    const StackLine& l = lines[i];
    if (l.folded)
      text += fmt::format("{}#{}-#{} {}\n", indent, l.first, l.first + l.count - 1,
                          terminal_text(describe_fold(l)));
    else
      text += fmt::format("{}#{} {}\n", indent, l.first, frame_text(frames[l.first]));
  }
  if (shown < lines.size()) {
    size_t hidden = 0;
    for (size_t i = shown; i < lines.size(); ++i) hidden += lines[i].count;
    text += fmt::format("{}... {} (--depth 0 shows all)\n", indent,
                        plural(hidden, "more frame", "more frames"));
  }
}

// What a stack's lines say without frame numbers, folded runs' lengths or the count of frames not
// shown: two stacks with the same shape differ only in library frames or beyond the depth.
std::string shape_of(const std::string& lines) {
  static const std::regex numbers(R"(#\d+(-#\d+ \d+ frames)? )");
  static const std::regex not_shown(R"(\.\.\. \d+ more frames? \(--depth 0 shows all\)\n)");
  return std::regex_replace(std::regex_replace(lines, not_shown, ""), numbers, "");
}

void append_native(std::string& text, const std::vector<Frame>& frames, size_t depth,
                   const std::string& indent) {
  if (frames.empty()) {
    text += indent + "(no stack recorded)\n";
    return;
  }
  const size_t shown = depth == 0 ? frames.size() : std::min(depth, frames.size());
  for (size_t i = 0; i < shown; ++i)
    text += fmt::format("{}#{} {}\n", indent, i, frame_text(frames[i]));
  if (shown < frames.size())
    text += fmt::format("{}... {} (--depth 0 shows all)\n", indent,
                        plural(frames.size() - shown, "more frame", "more frames"));
}

}  // namespace

std::string frame_text(const Frame& f) {
  const std::string module = base_name(f.module);
  std::string line;
  if (f.function) {
    line = *f.function;
    if (f.file) line += " " + location(f);
    if (f.python)
      line += " [python]";
    else if (!module.empty())
      line += " (" + module + ")";
  } else if (!module.empty()) {
    line = fmt::format("{}+{:#x}", module, f.module_offset);
  } else {
    line = fmt::format("{:#x}", f.address);
  }
  if (f.inlined) line += " [inlined]";
  return terminal_text(line);
}

namespace {

// user_frame_text() before its names are escaped.
std::string user_frame_words(const std::vector<Frame>& frames, bool by_function) {
  if (frames.empty()) return "(no stack recorded)";
  const size_t i = user_frame(frames);
  if (i == kNoUserFrame) {
    const std::string node = autograd_node(frames);
    if (!node.empty())
      return "backward pass, autograd node " + node +
             " (PyTorch's autograd thread, no Python frames)";
    std::string text = "no frame of user code: every frame in ";
    const std::vector<std::string> libraries = libraries_of(frames);
    for (size_t k = 0; k < libraries.size(); ++k) text += (k ? ", " : "") + libraries[k];
    return text;
  }
  const Frame& f = frames[i];
  const std::string module = f.python ? std::string() : base_name(f.module);
  const std::string in_module = module.empty() ? "" : " (" + module + ")";
  if (by_function && f.function && f.file) return *f.function + " in " + *f.file + in_module;
  if (f.file) return location(f) + " in " + f.function.value_or("?") + in_module;
  if (f.function) return *f.function + in_module;
  return frame_text(f);
}

}  // namespace

std::string user_frame_text(const std::vector<Frame>& frames, bool by_function) {
  return terminal_text(user_frame_words(frames, by_function));
}

void append_stack(std::string& text, const std::vector<Frame>& frames, const StackStyle& style,
                  const std::string& indent) {
  if (style.native) return append_native(text, frames, style.depth, indent);
  if (frames.empty()) return;
  std::vector<Frame> python, native;
  for (const Frame& f : frames) (f.python ? python : native).push_back(f);
  // Labels only where both kinds are there: a CUDA C++ program's stack is all native.
  if (python.empty() || native.empty()) return append_section(text, frames, style.depth, indent);
  text += indent + "python:\n";
  append_section(text, python, style.depth, indent + "  ");
  text += indent + "native:\n";
  append_section(text, native, style.depth, indent + "  ");
}

void append_site_stacks(std::string& text, const std::vector<StackShare>& stacks,
                        const StackStyle& style, const std::string& indent) {
  if (stacks.empty()) return;
  if (style.native && stacks.size() == 1)
    return append_stack(text, *stacks[0].frames, style, indent);
  text += indent + user_frame_text(*stacks[0].frames, style.by_function) + "\n";
  if (stacks.size() == 1) return append_stack(text, *stacks[0].frames, style, indent + "  ");
  // Stacks alike as written here — the same user frames and libraries, differing only inside
  // folded library runs or beyond the depth shown — are one entry (the largest one's lines),
  // their shares added; --native and --group-by stack still show every stack.
  struct Shown {
    std::string key, lines;
    uint64_t bytes = 0, count = 0;
    size_t stacks = 0;
  };
  std::vector<Shown> shown_stacks;
  for (const StackShare& s : stacks) {
    std::string lines;
    append_stack(lines, *s.frames, style, indent + "    ");
    const std::string key = style.native ? lines : shape_of(lines);
    auto same = std::find_if(shown_stacks.begin(), shown_stacks.end(),
                             [&](const Shown& x) { return x.key == key; });
    if (same == shown_stacks.end()) same = shown_stacks.insert(shown_stacks.end(), {key, lines});
    same->bytes += s.bytes;
    same->count += s.count;
    same->stacks += 1;
  }
  std::stable_sort(shown_stacks.begin(), shown_stacks.end(),
                   [](const Shown& a, const Shown& b) { return a.bytes > b.bytes; });
  const bool blocks = stacks[0].blocks;  // a row's stacks are all of one kind (site_rows.h)
  auto alike = [&](const Shown& s) {
    return s.stacks > 1 ? fmt::format(" ({} alike but for library frames and frames not shown)",
                                      plural(s.stacks, "stack", "stacks"))
                        : std::string();
  };
  if (shown_stacks.size() == 1) {
    text += fmt::format(
        "{}  {} alike but for library frames and frames not shown (--native shows each):\n", indent,
        plural(stacks.size(), "stack", "stacks"));
    text += shown_stacks[0].lines;
    return;
  }
  const size_t shown = std::min(shown_stacks.size(), kStacksPerRow);
  for (size_t i = 0; i < shown; ++i) {
    const Shown& s = shown_stacks[i];
    text +=
        fmt::format("{}  stack {} of {}: {} in {}{}:\n", indent, i + 1, shown_stacks.size(),
                    human_size(s.bytes),
                    blocks ? plural(s.count, "block", "blocks")
                           : plural(s.count, "allocation", "allocations"),
                    alike(s));
    text += s.lines;
  }
  if (shown < shown_stacks.size()) {
    uint64_t bytes = 0;
    for (size_t i = shown; i < shown_stacks.size(); ++i) bytes += shown_stacks[i].bytes;
    text += fmt::format("{}  ... and {} holding {} (--group-by stack lists each)\n", indent,
                        plural(shown_stacks.size() - shown, "more stack", "more stacks"),
                        human_size(bytes));
  }
}

}  // namespace gmemhook::analysis

// How a call stack is written in text reports: user-first — the user's frame first,
// then the Python frames, then the native ones with each run of library frames folded into one
// line — or, with --native, every frame as recorded. Names are escaped for terminals
// (terminal_text.h), so a line break or an ESC in a symbol cannot split or rewrite a stack's line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/symbols/frame.h"

namespace gmemhook::analysis {

struct StackStyle {
  bool native = false;  // every frame, one per line, nothing folded (--native)
  size_t depth = 8;     // lines per section (Python, native); 0 = all
  // A row's heading names the user frame's function, not its line (--group-by function: the
  // row holds every line of the function, so a line would name only the first).
  bool by_function = false;
};

// "/w/train.py:42 in step", "/src/app.cu:12 in leak_once (app)", "app+0x1a2b": the site's user
// frame as the line a reader looks for; "no frame of user code: every frame in libc10_cuda.so, ..."
// when every frame is a library's (its libraries innermost first: what its row is grouped by).
// With `by_function`: "step in /w/train.py", "leak_once in /src/app.cu (app)".
std::string user_frame_text(const std::vector<Frame>& frames, bool by_function = false);

// "#0 function file:line (module)" without the number: one frame as --native writes it.
std::string frame_text(const Frame& frame);

// The stack's lines, each prefixed by `indent`: user-first (the caller writes the heading line,
// user_frame_text()) or, with style.native, numbered frames as recorded.
void append_stack(std::string& text, const std::vector<Frame>& frames, const StackStyle& style,
                  const std::string& indent);

// One stack of a row of sites grouped by user frame, with what it holds.
struct StackShare {
  const std::vector<Frame>* frames = nullptr;
  uint64_t bytes = 0, count = 0;
  bool blocks = false;  // counts PyTorch's blocks, not CUDA allocations
};

inline constexpr size_t kStacksPerRow = 3;  // text: distinct stacks shown under one row

// A row's stacks (largest first) under its heading line, the user frame of the first: one stack
// is written as append_stack() writes it; several each under a "stack 2 of 5: ..." line, the
// first kStacksPerRow of them. With style.native and one stack, exactly the frames (no heading).
void append_site_stacks(std::string& text, const std::vector<StackShare>& stacks,
                        const StackStyle& style, const std::string& indent);

}  // namespace gmemhook::analysis

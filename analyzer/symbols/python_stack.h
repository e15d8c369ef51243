// Hybrid stacks: the Python frames a thread was running, put in place of the interpreter-loop
// frames that ran them, so a report reads `train_step train.py:42` instead of
// `_PyEval_EvalFrameDefault`.
#pragma once

#include <span>
#include <vector>

#include "analyzer/log/records.h"
#include "analyzer/symbols/frame.h"

namespace gmemhook::analysis {

class ThreadFileReader;

// One recorded Python frame as a report frame: function = qualname (name before 3.11),
// file = the code's filename, line decoded from its line table; python = true.
Frame python_frame(const PyFrameRef& ref, const ThreadFileReader& log);

// Merges a stack's Python frames (`python`, innermost first, as ThreadFileReader::python_frames
// gives them) into its symbolized native frames (innermost first). The Python frames form groups,
// each ending with an is_entry frame; the n-th native _PyEval_EvalFrameDefault frame, counted from
// the innermost, is replaced by the n-th group (inlined frames at the same address go with it).
// Groups left over — native frames unsymbolized, or the native stack cut at its depth limit —
// are appended after the native frames, in order.
std::vector<Frame> merge_python_frames(std::vector<Frame> native_frames,
                                       std::span<const PyFrameRef> python,
                                       const ThreadFileReader& log);

// Whether `function` is the interpreter loop (also its .cold / .lto_priv.N parts).
bool is_interpreter_loop(const std::optional<std::string>& function);

}  // namespace gmemhook::analysis

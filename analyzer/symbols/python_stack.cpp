// Merging Python frames into native stacks (see python_stack.h).
#include "analyzer/symbols/python_stack.h"

#include <string_view>

#include "analyzer/log/thread_file_reader.h"
#include "analyzer/symbols/python_lines.h"

namespace gmemhook::analysis {

namespace {
constexpr std::string_view kLoop = "_PyEval_EvalFrameDefault";
}  // namespace

bool is_interpreter_loop(const std::optional<std::string>& function) {
  if (!function) return false;
  std::string_view f = *function;
  return f.starts_with(kLoop) && (f.size() == kLoop.size() || f[kLoop.size()] == '.');
}

Frame python_frame(const PyFrameRef& ref, const ThreadFileReader& log) {
  Frame f;
  f.python = true;
  if (const PyCode* code = log.py_code(ref.code_id)) {
    f.function = code->qualname.empty() ? code->name : code->qualname;
    f.file = code->filename;
    if (auto line = python_line(*code, ref.offset)) f.line = *line;
  }
  return f;
}

std::vector<Frame> merge_python_frames(std::vector<Frame> native_frames,
                                       std::span<const PyFrameRef> python,
                                       const ThreadFileReader& log) {
  if (python.empty()) return native_frames;
  std::vector<Frame> out;
  out.reserve(native_frames.size() + python.size());
  size_t next = 0;  // first Python frame not placed yet
  auto place_group = [&] {
    while (next < python.size()) {
      const PyFrameRef& ref = python[next++];
      out.push_back(python_frame(ref, log));
      if (ref.is_entry) break;
    }
  };
  for (Frame& f : native_frames) {
    if (next < python.size() && !f.inlined && is_interpreter_loop(f.function)) {
      // Frames inlined into this loop call are interpreter internals: they go with it.
      while (!out.empty() && !out.back().python && out.back().inlined &&
             out.back().address == f.address)
        out.pop_back();
      place_group();
    } else {
      out.push_back(std::move(f));
    }
  }
  while (next < python.size()) place_group();
  return out;
}

}  // namespace gmemhook::analysis

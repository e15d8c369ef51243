// Frames as the stack resolver would hand them to a report, built in one line each for the tests
// of the user-code rules and of stack text.
#pragma once

#include <cstdint>
#include <string>

#include "analyzer/symbols/frame.h"

namespace gmemhook::analysis {

// A native frame of `module` (a path) in `function`, with a source line when `file` is given.
inline Frame native(const std::string& module, const std::string& function,
                    const std::string& file = "", uint32_t line = 0) {
  Frame f;
  f.module = module;
  f.function = function;
  if (!file.empty()) f.file = file;
  if (line) f.line = line;
  return f;
}

inline Frame py(const std::string& file, const std::string& function, uint32_t line) {
  Frame f;
  f.python = true;
  f.file = file;
  f.function = function;
  f.line = line;
  return f;
}

}  // namespace gmemhook::analysis

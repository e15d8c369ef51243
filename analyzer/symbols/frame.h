// One frame of a reported call stack: native (symbolized from the recorded module maps) or Python.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gmemhook::analysis {

struct Frame {
  std::optional<std::string> function;  // demangled; nullopt when unknown
  std::optional<std::string> file;      // source file (full path as recorded in debug info)
  std::optional<uint32_t> line;
  std::string module;    // the object's path ("" when the address is in no known module)
  uint64_t address = 0;  // native: the recorded return address; Python: 0
  uint64_t module_offset = 0;  // native: address - load bias of `module`
  bool python = false;
  bool inlined = false;  // a frame inlined into the next (outer) one
};

}  // namespace gmemhook::analysis

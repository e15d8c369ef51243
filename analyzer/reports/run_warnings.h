// The warnings of a whole run, said once after the report on stderr (so that "no debug info"
// lines do not land in the middle of a stack listing): each distinct warning once, and
// every module without debug info in one line.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "analyzer/symbols/stack_resolver.h"

namespace gmemhook::analysis {

class RunWarnings {
 public:
  void add(const std::string& warning);
  // The symbolizer's warnings of one process: the "no debug info" ones join the one line.
  void add_symbolizer(const StackResolver& stacks);
  // "gmemhook: warning: ..." lines, then "gmemhook: warning: 4 modules have no debug info: ...".
  void print(std::FILE* err) const;

 private:
  std::vector<std::string> warnings_;
  std::vector<std::string> without_debug_info_;  // module file names, each once
};

}  // namespace gmemhook::analysis

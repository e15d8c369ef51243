// Collecting and printing a run's warnings (see run_warnings.h).
#include "analyzer/reports/run_warnings.h"

#include <fmt/format.h>

#include <algorithm>

#include "analyzer/output/terminal_text.h"
#include "analyzer/output/text_format.h"

namespace gmemhook::analysis {

namespace {

void add_once(std::vector<std::string>& list, const std::string& s) {
  if (std::find(list.begin(), list.end(), s) == list.end()) list.push_back(s);
}

}  // namespace

void RunWarnings::add(const std::string& warning) { add_once(warnings_, warning); }

void RunWarnings::add_symbolizer(const StackResolver& stacks) {
  const auto& no_debug = stacks.modules_without_debug_info();
  for (const std::string& w : stacks.warnings()) {
    const bool about_debug_info = std::any_of(
        no_debug.begin(), no_debug.end(),
        [&](const std::string& path) { return w == Symbolizer::no_debug_info_warning(path); });
    if (!about_debug_info) add(w);
  }
  for (const std::string& path : no_debug) add_once(without_debug_info_, base_name(path));
}

void RunWarnings::print(std::FILE* err) const {
  // Warnings quote the log (notes, module paths): escaped like every text a terminal shows.
  for (const std::string& w : warnings_)
    fmt::print(err, "gmemhook: warning: {}\n", terminal_text(w));
  if (without_debug_info_.empty()) return;
  std::string names;
  for (size_t i = 0; i < without_debug_info_.size(); ++i)
    names += (i ? ", " : "") + without_debug_info_[i];
  fmt::print(err,
             "gmemhook: warning: {} no debug info: {}; frames show function names without "
             "file:line\n",
             without_debug_info_.size() == 1
                 ? std::string("1 module has")
                 : std::to_string(without_debug_info_.size()) + " modules have",
             terminal_text(names));
}

}  // namespace gmemhook::analysis

// Grouping sites into rows by user frame (see site_rows.h).
#include "analyzer/reports/site_rows.h"

#include <algorithm>
#include <unordered_map>

#include "analyzer/symbols/user_code.h"

namespace gmemhook::analysis {

std::optional<GroupBy> parse_group_by(const std::string& name) {
  if (name == "line") return GroupBy::Line;
  if (name == "function") return GroupBy::Function;
  if (name == "stack") return GroupBy::Stack;
  return std::nullopt;
}

std::string row_key(const std::vector<Frame>& frames, GroupBy by) {
  if (by == GroupBy::Stack) return {};
  const size_t i = user_frame(frames);
  if (i == kNoUserFrame) {
    // A backward pass: one row per autograd node (AddmmBackward0, ...), what its heading names.
    const std::string node = autograd_node(frames);
    if (!node.empty()) return "autograd\n" + node;
    // All library frames (e.g. autograd's backward threads): one row per set of libraries, so
    // the many stacks of one library's work are one row, not dozens of look-alike rows.
    std::vector<std::string> libraries = libraries_of(frames);
    std::sort(libraries.begin(), libraries.end());
    std::string key = "no user frame";
    for (const std::string& lib : libraries) key += "\n" + lib;
    return key;
  }
  const Frame& f = frames[i];
  std::string key = (f.python ? "py\n" : "native\n") + f.module + "\n" + f.file.value_or("") +
                    "\n" + f.function.value_or("");
  // Without a name, the offset is all that tells two places of a module apart.
  if (!f.function) key += "\n" + std::to_string(f.module_offset);
  if (by == GroupBy::Line && f.line) key += "\n" + std::to_string(*f.line);
  return key;
}

std::vector<SiteRow> group_sites(const std::vector<SiteStack>& sites, GroupBy by) {
  std::vector<SiteRow> rows;
  std::unordered_map<std::string, size_t> row_of;
  for (size_t i = 0; i < sites.size(); ++i) {
    const std::string key = row_key(*sites[i].frames, by);
    size_t r = rows.size();
    if (!key.empty()) {
      auto [it, inserted] = row_of.try_emplace(sites[i].kind + "\n" + key, rows.size());
      r = it->second;
    }
    if (r == rows.size()) rows.emplace_back();
    rows[r].members.push_back(i);
    rows[r].bytes += sites[i].bytes;
    rows[r].count += sites[i].count;
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const SiteRow& a, const SiteRow& b) { return a.bytes > b.bytes; });
  return rows;
}

std::vector<StackShare> row_stacks(const SiteRow& row, const std::vector<SiteStack>& sites) {
  std::vector<StackShare> out;
  for (size_t i : row.members)
    out.push_back({sites[i].frames, sites[i].bytes, sites[i].count, sites[i].blocks});
  return out;
}

}  // namespace gmemhook::analysis

// JSON's `rows` (docs/json.md): the rows a text report lists (site_rows.h), written the same way
// by `leaks` and `peak`, so that a machine reads the answer the text gives and not only the
// stacks under it.
#pragma once

#include <string_view>
#include <vector>

#include "analyzer/output/json_writer.h"
#include "analyzer/reports/site_rows.h"

namespace gmemhook::analysis {

// Writes "rows": the first `top` rows (all with 0), each an object of what `fields(row)` writes
// (its heading and kind), its `bytes` and `count`, `stacks` (how many stacks it has) and under
// `members_key` the indices of its stacks in the report's list of stacks, which `top` cut too:
// only those it kept are indexed.
template <typename Fields>
void write_site_rows(JsonWriter& json, const std::vector<SiteRow>& rows, size_t top,
                     std::string_view members_key, Fields&& fields) {
  json.key("rows");
  json.begin_array();
  for (size_t r = 0; r < rows.size() && !(top && r >= top); ++r) {
    const SiteRow& row = rows[r];
    json.begin_object();
    fields(row);
    json.field("bytes", row.bytes);
    json.field("count", row.count);
    json.field("stacks", row.members.size());
    json.key(members_key);
    json.begin_array();
    for (size_t i : row.members)
      if (!top || i < top) json.value(i);
    json.end_array();
    json.end_object();
  }
  json.end_array();
}

}  // namespace gmemhook::analysis

// What a renderer may ask of a report's result: the report's own layout as text and as
// JSON and, where the report groups memory by stack, the weighted stacks for the stack exports.
// A report fills a plain model per process (a diff: one for the whole comparison); renderers
// (format_table.h) see only this, never a replay or a log.
#pragma once

#include <string>

#include "analyzer/output/json_writer.h"
#include "analyzer/output/stack_export.h"

namespace gmemhook::analysis {

class ReportModel {
 public:
  virtual ~ReportModel() = default;
  // Appends the text layout.
  virtual void text(std::string& out) const = 0;
  // Writes one JSON value: a process's object (an element of "processes"), or a whole document.
  virtual void json(JsonWriter& json) const = 0;
  // Hands over the weighted stacks (ModelPart kStacks or kStackPairs); by default there are none.
  virtual void stacks(StackExport& /*out*/) const {}
};

}  // namespace gmemhook::analysis

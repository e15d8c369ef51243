// The output formats of --format, each registered once in format_table.cpp with its name, help,
// the parts of a model it reads and the factory of its renderer: a new format is its file plus
// one line there. A renderer turns the models of one command (report_model.h) into one document.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/output/report_model.h"

namespace gmemhook::analysis {

// What a format reads of a model, and what a command's models offer: a command offers exactly the
// formats that read something its models have.
enum ModelPart : unsigned {
  kLayout = 1u << 0,      // the report's own layout: ReportModel::text and json (every model)
  kStacks = 1u << 1,      // weighted stacks: ReportModel::stacks through StackExport::add
  kStackPairs = 1u << 2,  // stacks weighed twice (a diff's base and new): StackExport::add_pair
};

struct RenderSettings {
  std::string title;  // the command, for formats that name their document: "gmemhook peak RUN"
  // JSON: the models are processes of this run, {"run": run, "processes": [...]}; when unset, the
  // one model is the whole document (diff).
  std::optional<std::string> run;
  size_t depth = 0;  // stack exports: the innermost frames kept per stack; 0 = all
};

// One document, fed model by model.
class Renderer {
 public:
  virtual ~Renderer() = default;
  // Takes a model; returns its part of the document (a document that must be whole, such as
  // JSON, returns nothing until finish()).
  virtual std::string add(const ReportModel& model) = 0;
  // The rest of the document; `next_step` is the command's closing hint line (text only; empty
  // when the models' text already ends the document).
  virtual std::string finish(const std::string& next_step) = 0;
};

struct Format {
  const char* name;  // --format NAME
  const char* help;  // what it is for, in the --format help
  unsigned reads;    // ModelPart bits
  std::unique_ptr<Renderer> (*make)(const RenderSettings& settings);
};

// Every format, in the order --format lists them; text first (the default).
std::span<const Format> formats();
// nullptr when there is none of that name.
const Format* find_format(std::string_view name);
// The names of the formats that read any of `parts` (ModelPart bits), in table order.
std::vector<std::string> format_names(unsigned parts);

}  // namespace gmemhook::analysis

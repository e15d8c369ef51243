// The one table of output formats (format_table.h); a format's file defines make_<name>_renderer.
#include "analyzer/output/format_table.h"

#include <array>

namespace gmemhook::analysis {

// name, help, what it reads of a model.
#define GMEMHOOK_FOR_EACH_FORMAT(X)                                               \
  X(text, "what people read", kLayout)                                            \
  X(json, "every number, exact; docs/json.md", kLayout)                           \
  X(folded, "folded stacks for flamegraph.pl and inferno", kStacks | kStackPairs) \
  X(speedscope, "a profile for speedscope.app", kStacks)

#define GMEMHOOK_DECLARE_FORMAT(name, help, reads) \
  std::unique_ptr<Renderer> make_##name##_renderer(const RenderSettings& settings);
GMEMHOOK_FOR_EACH_FORMAT(GMEMHOOK_DECLARE_FORMAT)
#undef GMEMHOOK_DECLARE_FORMAT

namespace {

#define GMEMHOOK_FORMAT_ENTRY(name, help, reads) Format{#name, help, reads, make_##name##_renderer},
constexpr std::array kFormats{GMEMHOOK_FOR_EACH_FORMAT(GMEMHOOK_FORMAT_ENTRY)};
#undef GMEMHOOK_FORMAT_ENTRY

}  // namespace

std::span<const Format> formats() { return kFormats; }

const Format* find_format(std::string_view name) {
  for (const Format& f : kFormats)
    if (name == f.name) return &f;
  return nullptr;
}

std::vector<std::string> format_names(unsigned parts) {
  std::vector<std::string> names;
  for (const Format& f : kFormats)
    if (f.reads & parts) names.push_back(f.name);
  return names;
}

}  // namespace gmemhook::analysis

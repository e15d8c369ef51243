// `gmemhook top`'s renderers of a TopView: text (the --once snapshot, and the body of the
// full-screen view, which narrows it to one process and device) and JSON (docs/json.md).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "analyzer/live/top_view.h"

namespace gmemhook::analysis {

struct TextLayout {
  size_t spark_width = 48;
  // The full-screen view shows one process and one of its devices (indices into the view).
  std::optional<size_t> process, device;
  bool hint = true;  // end with the next useful command (--once)
};

std::string top_text(const TopView& view, const TextLayout& layout);
std::string top_json(const TopView& view);

}  // namespace gmemhook::analysis

// Sites grouped into the rows a text report lists: by default one row per line of
// user code, with the distinct full stacks that reached it under it; --group-by function or
// stack switches. A small step between the replay's sites and the renderers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/output/stack_text.h"
#include "analyzer/symbols/frame.h"

namespace gmemhook::analysis {

enum class GroupBy : uint8_t { Line, Function, Stack };

// "line", "function", "stack"; nullopt for anything else.
std::optional<GroupBy> parse_group_by(const std::string& name);

// One site as the replay grouped it (one interned stack).
struct SiteStack {
  const std::vector<Frame>* frames = nullptr;
  uint64_t bytes = 0, count = 0;
  // Sites of different kinds never share a row, whatever their frames (e.g. "cudaMalloc/device
  // 0" and "cudaMallocHost/pinned"): the caller's words for the kind.
  std::string kind;
  bool blocks = false;  // PyTorch's blocks: counted in blocks, not allocations
};

struct SiteRow {
  std::vector<size_t> members;  // indices into the sites, in their order (largest first)
  uint64_t bytes = 0, count = 0;
};

// What makes two stacks one row: the user frame's file, function and (for Line) line. Stacks with
// no user frame share a row when their libraries are the same set (their innermost frame would
// lump unrelated callers, a row per stack would list dozens alike). Empty for Stack: every
// stack is a row.
std::string row_key(const std::vector<Frame>& frames, GroupBy by);

// Rows, largest first (ties: the order of their first site).
std::vector<SiteRow> group_sites(const std::vector<SiteStack>& sites, GroupBy by);

// A row's stacks as append_site_stacks() takes them.
std::vector<StackShare> row_stacks(const SiteRow& row, const std::vector<SiteStack>& sites);

}  // namespace gmemhook::analysis

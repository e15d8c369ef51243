// Api-table lookups for decoded events.
#include "analyzer/log/event_info.h"

namespace gmemhook::analysis {

std::string api_name(uint8_t api) {
  if (const format::ApiInfo* a = format::find_api(api)) return a->name;
  return "api#" + std::to_string(api);
}

std::optional<format::MemoryType> memory_type(const format::Event& ev) {
  if (ev.f.has(format::kHasMemory)) return ev.f.memory;
  if (const format::ApiInfo* a = format::find_api(ev.api)) return a->memory;
  return std::nullopt;
}

}  // namespace gmemhook::analysis

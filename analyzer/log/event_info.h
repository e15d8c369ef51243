// What an event means, looked up in api_table.h: its entry point's name and memory type.
// Logs may carry api ids this build does not know (a newer recorder); those stay readable.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>

#include "gmemhook/api_table.h"
#include "gmemhook/codec.h"

namespace gmemhook::analysis {

// "cudaMalloc", or "api#77" for an id not in the table.
std::string api_name(uint8_t api);
// What the event did: its entry point's kind (a block event marked IsFree is a BlockFree);
// nullopt for an unknown id.
std::optional<format::EventKind> event_kind(const format::Event& ev);
// The event's memory override when it carries one, else its entry point's default; nullopt
// for an unknown id without an override.
std::optional<format::MemoryType> memory_type(const format::Event& ev);
// Whether `kind` is one of `kinds`: the kinds an observer follows, the calls a rule is about.
constexpr bool is_one_of(format::EventKind kind, std::initializer_list<format::EventKind> kinds) {
  for (format::EventKind k : kinds)
    if (k == kind) return true;
  return false;
}

}  // namespace gmemhook::analysis

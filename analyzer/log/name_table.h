// An enum's printed name from the list of its members' names, in the order the enum declares
// them: one line where a switch takes two a member. In log/, the lowest stage, so every stage
// names its enums the same way.
#pragma once

#include <cstddef>

namespace gmemhook::analysis {

// names[value]; "?" for a value past the end of the list.
template <typename Enum, size_t N>
constexpr const char* name_in(Enum value, const char* const (&names)[N]) {
  const auto i = static_cast<size_t>(value);
  return i < N ? names[i] : "?";
}

}  // namespace gmemhook::analysis

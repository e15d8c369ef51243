// Small helpers of the command line that make its errors say what was expected: the
// nearest known subcommand to a mistyped one, and checks of numbers that name what they want.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace gmemhook::analysis {

// The word of `known` closest to `typed` (edit distance, at most 2 edits away; a prefix of a
// known word counts too), or "" when none is close.
std::string nearest_word(const std::string& typed, const std::vector<std::string>& known);

// A CLI11 check: "" for digits only, else "expected <what>, not '<value>'".
std::function<std::string(const std::string&)> whole_number(const std::string& what);
// A CLI11 check: "" for a decimal number >= 0 ("1.5"), else "expected <what>, not '<value>'".
std::function<std::string(const std::string&)> decimal_number(const std::string& what);

}  // namespace gmemhook::analysis

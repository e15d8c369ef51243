// UTF-8 as the outputs check it: names in a log (symbols, paths, argv, thread names) are bytes
// the traced program chose, not always UTF-8, and every output must still say each byte.
#pragma once

#include <cstddef>
#include <string_view>

namespace gmemhook::analysis {

// The length (1-4) of the well-formed UTF-8 sequence `s` starts with, its code point in `code`;
// 0 when the first byte starts none: a stray continuation byte, an overlong form, an encoded
// surrogate, a code point past U+10FFFF, or a sequence cut short.
size_t utf8_sequence(std::string_view s, char32_t& code);

// Whether all of `s` is well-formed UTF-8.
bool is_utf8(std::string_view s);

// Code points a reader must see spelled out rather than acted on: C0 and C1 controls, DEL, and
// the bidirectional embeddings, overrides and isolates that reorder the text shown around them.
constexpr bool is_hidden_control(char32_t c) {
  return c < 0x20 || (c >= 0x7f && c <= 0x9f) || (c >= 0x202a && c <= 0x202e) ||
         (c >= 0x2066 && c <= 0x2069);
}

}  // namespace gmemhook::analysis

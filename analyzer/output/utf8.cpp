// Well-formed UTF-8 sequences, as the Unicode Standard's table 3-7 lists them (see utf8.h).
#include "analyzer/output/utf8.h"

namespace gmemhook::analysis {

size_t utf8_sequence(std::string_view s, char32_t& code) {
  if (s.empty()) return 0;
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) {
    code = b0;
    return 1;
  }
  size_t n;
  unsigned char low = 0x80, high = 0xbf;  // the second byte's range, narrower after some leads
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2;
    code = b0 & 0x1f;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3;
    code = b0 & 0x0f;
    if (b0 == 0xe0) low = 0xa0;   // overlong below U+0800
    if (b0 == 0xed) high = 0x9f;  // U+D800..U+DFFF, surrogates
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4;
    code = b0 & 0x07;
    if (b0 == 0xf0) low = 0x90;   // overlong below U+10000
    if (b0 == 0xf4) high = 0x8f;  // past U+10FFFF
  } else {
    return 0;  // a continuation byte, C0/C1 (overlong two-byte leads) or F5..FF
  }
  if (s.size() < n) return 0;
  for (size_t i = 1; i < n; ++i) {
    const unsigned char b = byte(i);
    if (b < (i == 1 ? low : 0x80) || b > (i == 1 ? high : 0xbf)) return 0;
    code = code << 6 | (b & 0x3f);
  }
  return n;
}

bool is_utf8(std::string_view s) {
  char32_t code = 0;
  for (size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t n = utf8_sequence(s.substr(i), code);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace gmemhook::analysis

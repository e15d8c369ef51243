// Escaping text for terminals (see terminal_text.h).
#include "analyzer/output/terminal_text.h"

#include <fmt/format.h>

#include "analyzer/output/utf8.h"

namespace gmemhook::analysis {

namespace {

std::string escaped(std::string_view s, bool keep_line_breaks) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c >= 0x20 && c < 0x7f) || (c == '\n' && keep_line_breaks)) {  // the usual case
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    char32_t code = 0;
    const size_t n = utf8_sequence(s.substr(i), code);
    if (n == 0 || code < 0x80) {
      out += fmt::format("\\x{:02x}", c);
      ++i;
    } else {
      if (is_hidden_control(code))
        out += fmt::format("\\u{:04x}", static_cast<uint32_t>(code));
      else
        out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace

std::string terminal_text(std::string_view name) { return escaped(name, false); }

std::string terminal_lines(std::string_view text) { return escaped(text, true); }

}  // namespace gmemhook::analysis

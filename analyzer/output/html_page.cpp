// Fills the embedded page template (see html_page.h).
#include "analyzer/output/html_page.h"

#include <algorithm>
#include <array>

namespace gmemhook::analysis {

// Generated from output/html/report.html by embed_page.cmake.
extern const char* const kReportPageTemplate;

namespace {

std::string html_escaped(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// JSON inside <script>: the HTML parser ends the block at "</script" and changes how it finds
// that end after "<!--", whatever the JSON means. Every '<' (only ever inside a string of JSON)
// as \u003c keeps both out.
std::string script_safe(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<')
      out += "\\u003c";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string html_page_text(std::string_view title, std::string_view data_json) {
  const std::string_view page = kReportPageTemplate;
  struct Slot {
    std::string_view marker;
    std::string text;
    size_t at = std::string_view::npos;
  };
  std::array<Slot, 2> slots{Slot{"@GMEMHOOK_TITLE@", html_escaped(title)},
                            Slot{"@GMEMHOOK_DATA@", script_safe(data_json)}};
  // Both markers are found in the template alone and filled in one pass: a run path or a name in
  // the data that holds a marker's text is only text, never a place to fill.
  for (Slot& s : slots) s.at = page.find(s.marker);
  std::sort(slots.begin(), slots.end(), [](const Slot& a, const Slot& b) { return a.at < b.at; });
  std::string out;
  out.reserve(page.size() + slots[0].text.size() + slots[1].text.size());
  size_t from = 0;
  for (const Slot& s : slots) {
    if (s.at == std::string_view::npos) continue;
    out.append(page.substr(from, s.at - from));
    out += s.text;
    from = s.at + s.marker.size();
  }
  out.append(page.substr(from));
  return out;
}

}  // namespace gmemhook::analysis

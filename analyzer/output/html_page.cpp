// Fills the embedded page template (see html_page.h).
#include "analyzer/output/html_page.h"

namespace gmemhook::analysis {

// Generated from output/html/report.html by embed_page.cmake.
extern const char* const kReportPageTemplate;

namespace {

void replace_once(std::string& text, std::string_view marker, std::string_view with) {
  const size_t at = text.find(marker);
  if (at != std::string::npos) text.replace(at, marker.size(), with);
}

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

}  // namespace

std::string html_page_text(std::string_view title, std::string_view data_json) {
  std::string data;
  data.reserve(data_json.size());
  for (char c : data_json) {
    if (c == '<')
      data += "\\u003c";
    else
      data += c;
  }
  std::string page = kReportPageTemplate;
  replace_once(page, "@GMEMHOOK_TITLE@", html_escaped(title));
  replace_once(page, "@GMEMHOOK_DATA@", data);
  return page;
}

}  // namespace gmemhook::analysis

// The HTML report's page: the template in output/html/report.html, embedded into the
// binary at build time (embed_page.cmake), with a run's data poured in.
#pragma once

#include <string>
#include <string_view>

namespace gmemhook::analysis {

// The page with `title` and `data_json` (the JSON gmemhook html made) in the places the template
// marks, each filled once: a title or data holding a marker's text stays text. The data lands in
// a <script type="application/json"> block, so every '<' in it is written \u003c: no string of the
// run (a path, a function name) can close the block or open a comment in it.
std::string html_page_text(std::string_view title, std::string_view data_json);

}  // namespace gmemhook::analysis

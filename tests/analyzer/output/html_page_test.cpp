// The page template filled (output/html_page.h): each marker once, where the template has it,
// whatever the title and the data hold.
#include "analyzer/output/html_page.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gmemhook::analysis {
namespace {

std::string between(const std::string& page, const std::string& open, const std::string& close) {
  const size_t start = page.find(open);
  if (start == std::string::npos) return "(no " + open + ")";
  const size_t end = page.find(close, start + open.size());
  return page.substr(start + open.size(), end - start - open.size());
}

// A run path holding the data's marker once put the data into <title>, and the page had none.
TEST(HtmlPage, MarkersInTheTitleOrTheDataStayText) {
  const std::string title = "gmemhook: /runs/@GMEMHOOK_DATA@/x";
  const std::string data = R"({"run":"@GMEMHOOK_TITLE@ @GMEMHOOK_DATA@"})";
  const std::string page = html_page_text(title, data);
  EXPECT_EQ(between(page, "<title>", "</title>"), title);
  const std::string block =
      between(page, "<script id=\"gmemhook-data\" type=\"application/json\">", "</script>");
  const nlohmann::json parsed = nlohmann::json::parse(block, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << block;
  EXPECT_EQ(parsed["run"], "@GMEMHOOK_TITLE@ @GMEMHOOK_DATA@");
}

// Inside <script>, "</script" ends the block and "<!--" changes how its end is found.
TEST(HtmlPage, DataCannotCloseItsScriptBlock) {
  const std::string data = R"({"name":"</script><script>alert(1)</script><!--<script>"})";
  const std::string page = html_page_text("t", data);
  const std::string block =
      between(page, "<script id=\"gmemhook-data\" type=\"application/json\">", "</script>");
  EXPECT_EQ(block.find('<'), std::string::npos) << block;
  EXPECT_EQ(nlohmann::json::parse(block)["name"], "</script><script>alert(1)</script><!--<script>");
}

}  // namespace
}  // namespace gmemhook::analysis

// What reaches a terminal (output/terminal_text.h): controls and bytes that are not UTF-8 shown as
// escapes, printable text of any script unchanged.
#include "analyzer/output/terminal_text.h"

#include <gtest/gtest.h>

namespace gmemhook::analysis {
namespace {

TEST(TerminalText, ControlsAreShownAsEscapes) {
  EXPECT_EQ(terminal_text("a\x1b[2Jb"), "a\\x1b[2Jb");
  EXPECT_EQ(terminal_text("bell\a cr\r lf\n tab\t del\x7f nul" + std::string(1, '\0')),
            "bell\\x07 cr\\x0d lf\\x0a tab\\x09 del\\x7f nul\\x00");
  // C1 controls (U+009B is a CSI on its own) and a right-to-left override, as code points.
  EXPECT_EQ(terminal_text("x\xc2\x9b"
                          "31m y\xe2\x80\xaez"),
            "x\\u009b31m y\\u202ez");
}

TEST(TerminalText, BytesThatAreNotUtf8AreShownOneByOne) {
  EXPECT_EQ(terminal_text("caf\xe9"), "caf\\xe9");
  EXPECT_EQ(terminal_text("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(terminal_text("cut \xe2\x82"), "cut \\xe2\\x82");           // a sequence cut short
  EXPECT_EQ(terminal_text("long \xc0\xaf"), "long \\xc0\\xaf");         // an overlong '/'
  EXPECT_EQ(terminal_text("sur \xed\xa0\x80"), "sur \\xed\\xa0\\x80");  // an encoded surrogate
  EXPECT_EQ(terminal_text("big \xf4\x90\x80\x80"), "big \\xf4\\x90\\x80\\x80");  // past U+10FFFF
}

TEST(TerminalText, PrintableTextIsUnchanged) {
  for (const char* s : {"train.py:42 in step", "12.3 \xc2\xb5s", "\xe6\x97\xa5\xe6\x9c\xac",
                        "\xf0\x9f\x94\xa5 torch::empty", "C:\\path\\x1b"})
    EXPECT_EQ(terminal_text(s), s);
}

TEST(TerminalText, LinesKeepTheirBreaks) {
  EXPECT_EQ(terminal_lines("one\x1b\ntwo\r\n"), "one\\x1b\ntwo\\x0d\n");
}

}  // namespace
}  // namespace gmemhook::analysis

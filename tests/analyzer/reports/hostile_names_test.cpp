// Names a traced program chose are bytes, not text: an executable, a module path and Python
// names holding terminal escapes (ESC, BEL, CR) and bytes that are not UTF-8. Every text output
// shows them escaped; every JSON output and the memory_viz pickle still load, and give the
// exact bytes back (Python's surrogateescape).
#include <gtest/gtest.h>

#include <fstream>

#include "analyzer/output/utf8.h"
#include "report_scenario.h"

namespace gmemhook::test_logs {
namespace {

using format::ApiId;

// ESC [2J clears the screen, BEL rings, CR goes back over the line; 0xff is never UTF-8.
const std::string kExe = "evil\x1b[2J\a\r\xff";
const std::string kPythonName = "step\r\x1b[1Afake\xc3";

class HostileNames : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = make_temp_dir("hostile-names");
    Scenario s(500, kExe);
    analysis::PyCode code;
    code.py_version = 0x030c;
    code.filename = "/w/\x1b]0;pwned\a.py";  // OSC 0: sets the terminal's title
    code.name = code.qualname = kPythonName;
    code.first_line = 1;
    const uint32_t py = s.py_code(501, code);
    const uint32_t native = s.stack(501, {Scenario::kModuleBias + 0x1100});
    const uint32_t python = s.stack(501, {Scenario::kModuleBias + 0x1200}, {{py, 0, true}});
    s.alloc(501, ApiId::cudaMalloc, 0x7f0000000000, 1 << 20, 0, native);
    s.alloc(501, ApiId::cudaMalloc, 0x7f0000100000, 2 << 20, 0, python);
    s.write(run_, true);
  }
  void TearDown() override { std::filesystem::remove_all(run_); }

  std::filesystem::path run_;
};

void expect_terminal_safe(const std::string& text, const std::string& what) {
  for (char c : {'\x1b', '\a', '\r'})
    EXPECT_EQ(text.find(c), std::string::npos)
        << what << " has a raw control byte " << int(c) << ":\n"
        << text;
  EXPECT_TRUE(analysis::is_utf8(text)) << what << " has bytes that are not UTF-8:\n" << text;
}

TEST_F(HostileNames, TextOutputsShowControlsAndBadBytesEscaped) {
  const std::string r = quote(run_);
  for (const std::string& args :
       {"summary " + r, "leaks " + r, "leaks --native " + r, "peak " + r, "fragmentation " + r,
        "peak --format folded " + r, "diff " + r + " " + r, "dump " + r, "top --once " + r}) {
    const CliResult out = run_cli(args);
    EXPECT_EQ(out.status, 0) << args << "\n" << out.err;
    expect_terminal_safe(out.out, args);
    expect_terminal_safe(out.err, args + " (stderr)");
    EXPECT_NE(out.out.find("\\x1b"), std::string::npos) << args << ":\n" << out.out;
  }
  // The user-first heading names the Python line with its escapes visible.
  const CliResult leaks = run_cli("leaks " + r);
  EXPECT_NE(leaks.out.find("/w/\\x1b]0;pwned\\x07.py in step\\x0d\\x1b[1Afake\\xc3"),
            std::string::npos)
      << leaks.out;
}

// Whether Python reads `file` (JSON, a pickle, or the JSON block of a page) and finds kExe's exact
// bytes in one of its strings; "yes" or what went wrong.
std::string python_finds_exe(const std::filesystem::path& file, const char* how) {
  const std::filesystem::path script = file.string() + ".py";
  std::ofstream(script) << R"(import json, pickle, sys
how, path, want = sys.argv[1], sys.argv[2], bytes.fromhex(sys.argv[3])
if how == "pickle":
    data = pickle.load(open(path, "rb"))
else:
    text = open(path, encoding="utf-8").read()
    if how == "page":
        start = text.index('type="application/json">') + len('type="application/json">')
        text = text[start:text.index("</script>", start)]
    data = json.loads(text)
def strings(x):
    if isinstance(x, str): yield x
    elif isinstance(x, dict):
        for k, v in x.items(): yield from strings(k); yield from strings(v)
    elif isinstance(x, (list, tuple)):
        for v in x: yield from strings(v)
found = any(want in s.encode("utf-8", "surrogateescape") for s in strings(data))
print("yes" if found else "loaded, but no string holds the name", end="")
)";
  std::string hex;
  for (unsigned char c : kExe) hex += "0123456789abcdef"[c >> 4], hex += "0123456789abcdef"[c & 15];
  const std::string cmd =
      "python3 " + quote(script) + " " + how + " " + quote(file) + " " + hex + " 2>&1";
  std::FILE* py = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, py)) > 0;) out.append(buf, n);
  pclose(py);
  return out;
}

TEST_F(HostileNames, JsonAndPickleOutputsLoadAndKeepTheBytes) {
  const std::string r = quote(run_);
  const std::filesystem::path out = run_.string() + ".out";
  for (const std::string& args : {"summary --json " + r, "leaks --json " + r, "peak --json " + r,
                                  "peak --format speedscope " + r, "top --once --json " + r}) {
    const CliResult result = run_cli(args);
    EXPECT_EQ(result.status, 0) << args << "\n" << result.err;
    std::ofstream(out, std::ios::binary) << result.out;
    EXPECT_EQ(python_finds_exe(out, "json"), "yes") << args;
  }
  for (const auto& [format, how] : {std::pair{"html", "page"}, std::pair{"perfetto", "json"},
                                    std::pair{"memory-viz", "pickle"}}) {
    const CliResult result =
        run_cli(std::string("html --format ") + format + " -o " + quote(out) + " " + r);
    EXPECT_EQ(result.status, 0) << format << "\n" << result.err;
    EXPECT_EQ(python_finds_exe(out, how), "yes") << format;
  }
  std::filesystem::remove(out);
  std::filesystem::remove(out.string() + ".py");
}

}  // namespace
}  // namespace gmemhook::test_logs

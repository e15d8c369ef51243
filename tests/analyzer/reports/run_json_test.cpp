// RUN/run.json as `gmemhook html` reads it (reports/run_json.h): whatever lies there — a FIFO, a
// link to /dev/zero, a huge or malformed file, keys of someone else's — the command ends, the page
// is whole, shows only what `gmemhook run` writes, and a warning says what was left out.
#include "analyzer/reports/run_json.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "report_scenario.h"

namespace gmemhook::test_logs {
namespace {

using nlohmann::json;

struct Page {
  int status = -1;
  std::string err;
  json data;  // the page's embedded JSON; discarded when it does not parse
};

class RunJsonPage : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = make_temp_dir("run-json");
    Scenario s(600, "app");
    s.alloc(601, format::ApiId::cudaMalloc, 0x7f0000000000, 4096);
    s.write(run_, true);
  }
  void TearDown() override { std::filesystem::remove_all(run_); }

  void write_run_json(const std::string& text) {
    std::ofstream(run_ / "run.json", std::ios::binary) << text;
  }

  // `gmemhook html` with a time limit: a command that waits on a FIFO fails here, not by hanging.
  Page html() {
    const auto page = run_.string() + ".html", err = run_.string() + ".err";
    const std::string cmd = "timeout 30 '" + std::string(GMEMHOOK_CLI) + "' html -o " +
                            quote(page) + " " + quote(run_) + " 2>" + quote(err);
    const int rc = std::system(cmd.c_str());
    Page p;
    p.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
    std::ifstream e(err);
    p.err.assign(std::istreambuf_iterator<char>(e), {});
    std::ifstream in(page);
    const std::string text{std::istreambuf_iterator<char>(in), {}};
    const std::string open = "type=\"application/json\">";
    const size_t start = text.find(open);
    if (start != std::string::npos) {
      const size_t end = text.find("</script>", start);
      p.data =
          json::parse(text.substr(start + open.size(), end - start - open.size()), nullptr, false);
    }
    std::filesystem::remove(page);
    std::filesystem::remove(err);
    return p;
  }

  std::filesystem::path run_;
};

TEST_F(RunJsonPage, AFifoIsNotWaitedOn) {
  ASSERT_EQ(mkfifo((run_ / "run.json").c_str(), 0600), 0);
  const Page p = html();
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_TRUE(p.data["run_json"].is_null());
  EXPECT_NE(p.err.find("run.json is a FIFO: not read"), std::string::npos) << p.err;
}

TEST_F(RunJsonPage, ALinkIsNotFollowed) {
  std::filesystem::create_symlink("/dev/zero", run_ / "run.json");
  const Page p = html();
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_TRUE(p.data["run_json"].is_null());
  EXPECT_NE(p.err.find("run.json is a symbolic link: not followed"), std::string::npos) << p.err;
}

TEST_F(RunJsonPage, AFileLargerThanTheCapIsNotRead) {
  write_run_json("{\"cwd\": \"" + std::string(analysis::kMaxRunJsonBytes, 'x') + "\"}");
  const Page p = html();
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_TRUE(p.data["run_json"].is_null());
  EXPECT_NE(p.err.find("run.json is larger than 1024 KiB"), std::string::npos) << p.err;
}

// Malformed JSON used to be pasted into the page's data as it was: the page did not open, with
// exit status 0.
TEST_F(RunJsonPage, MalformedJsonLeavesAWholePage) {
  write_run_json("{\"command\": [\"python\", ");
  const Page p = html();
  ASSERT_EQ(p.status, 0) << p.err;
  ASSERT_FALSE(p.data.is_discarded()) << "the page's data does not parse";
  EXPECT_TRUE(p.data["run_json"].is_null());
  EXPECT_NE(p.err.find("run.json is not valid JSON (at byte"), std::string::npos) << p.err;
}

// Keys of someone else's, and known keys of another type, never reach the page.
TEST_F(RunJsonPage, OnlyKnownKeysOfTheirTypeReachThePage) {
  write_run_json(R"({"command": ["python3", "train.py"], "exit_code": "0; it passed",
                     "signal": null, "pid": 42, "verdict": "all good", "html": "<b>hi</b>"})");
  const Page p = html();
  ASSERT_EQ(p.status, 0) << p.err;
  const json& r = p.data["run_json"];
  ASSERT_TRUE(r.is_object()) << p.data.dump(1);
  EXPECT_EQ(r["command"], json::array({"python3", "train.py"}));
  EXPECT_EQ(r["pid"], 42);
  EXPECT_TRUE(r["exit_code"].is_null());
  EXPECT_FALSE(r.contains("verdict"));
  EXPECT_FALSE(r.contains("html"));
  std::vector<std::string> keys;
  for (const auto& [k, v] : r.items()) keys.push_back(k);
  EXPECT_EQ(keys.size(), 9u);  // the keys of docs/run.md, each present (null when not known)
  EXPECT_NE(p.err.find("\"exit_code\" is string, not what gmemhook run writes: ignored"),
            std::string::npos)
      << p.err;
  EXPECT_NE(p.err.find("keys gmemhook run does not write ignored: \"html\", \"verdict\""),
            std::string::npos)
      << p.err;
}

// gmemhook run's own file, with an argument that is not UTF-8 (JsonWriter writes its byte as a
// lone surrogate, which nlohmann-json refuses): read, the byte shown as U+FFFD.
TEST(RunJson, AnArgumentThatIsNotUtf8IsNoParseError) {
  std::vector<std::string> warnings;
  const auto r = analysis::parse_run_json(
      R"({"command": ["cat", "caf\udce9", "\ud83d\udd25"], "cwd": "/w"})", "run.json", warnings);
  ASSERT_TRUE(r) << (warnings.empty() ? "" : warnings[0]);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ((*r->command)[1], "caf\xef\xbf\xbd");
  EXPECT_EQ((*r->command)[2], "\xf0\x9f\x94\xa5");  // a surrogate pair stays what it was
}

// nlohmann-json throws out_of_range, not parse_error, for a number no double holds: it once
// ended gmemhook with std::terminate (found by run_json_fuzz).
TEST(RunJson, ANumberTooLargeIsRefused) {
  std::vector<std::string> warnings;
  EXPECT_FALSE(analysis::parse_run_json("{\"pid\": 88e6101}", "R/run.json", warnings));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "R/run.json holds a number too large to read: ignored");
}

TEST(RunJson, NotAnObjectIsRefused) {
  std::vector<std::string> warnings;
  EXPECT_FALSE(analysis::parse_run_json("[1, 2]", "R/run.json", warnings));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "R/run.json is not a JSON object: ignored");
}

}  // namespace
}  // namespace gmemhook::test_logs

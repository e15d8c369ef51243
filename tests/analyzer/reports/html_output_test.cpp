// The file `gmemhook html -o FILE` writes (the page, the Perfetto trace, the memory_viz pickle):
// private to the user whatever the umask, and never written through a symbolic link another user
// planted in a directory others can write (docs/security.md).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "report_scenario.h"

namespace gmemhook::test_logs {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;  // another user: root bypasses permission bits, not ownership

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class HtmlOutput : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = make_temp_dir("html-output");
    Scenario a(100, "train");
    a.alloc(101, format::ApiId::cudaMalloc, 0x7f0000000000, 1 << 20, 0,
            a.stack(101, {Scenario::kModuleBias + 0x1100}));
    a.write(run_, true);
    out_ = make_temp_dir("html-output-dir");
  }
  void TearDown() override {
    fs::remove_all(run_);
    fs::remove_all(out_);
  }

  fs::path run_, out_;
};

// Under umask 000 fopen("wb") made the page 0666, and kept the mode of a file it wrote over:
// stacks and argv readable by every user, while the logs they came from are 0600.
TEST_F(HtmlOutput, EveryFormatIsWrittenPrivateWhateverTheUmask) {
  auto mode = [](const fs::path& file) {
    struct stat st {};
    return lstat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? st.st_mode & 07777 : 0;
  };
  const mode_t old = umask(0);
  for (const char* format : {"html", "perfetto", "memory-viz"}) {
    const fs::path file = out_ / (std::string("out.") + format);
    const CliResult r =
        run_cli("html --format " + std::string(format) + " " + quote(run_) + " -o " + quote(file));
    EXPECT_EQ(r.status, 0) << format << ": " << r.err;
    EXPECT_EQ(mode(file), 0600u) << format;
  }
  const fs::path older = out_ / "older.html";
  std::ofstream(older) << "an older page";
  fs::permissions(older, fs::perms::all);
  const CliResult r = run_cli("html " + quote(run_) + " -o " + quote(older));
  umask(old);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(mode(older), 0600u);
  EXPECT_NE(slurp(older), "an older page");
  // Written through a temporary file and rename(): nothing of it is left beside the files.
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(out_)) ++entries;
  EXPECT_EQ(entries, 4u);
}

// /tmp: everyone may create entries, so another user may put a symlink where the page goes,
// pointing at a file the one running gmemhook can write and they cannot.
TEST_F(HtmlOutput, ASymlinkPlantedInASharedDirectoryIsRefusedAndItsTargetUntouched) {
  fs::permissions(out_, fs::perms::all | fs::perms::sticky_bit);
  const fs::path target = run_ / "precious";
  std::ofstream(target) << "keep me";
  const fs::path page = out_ / "page.html";
  fs::create_symlink(target, page);
  ASSERT_EQ(lchown(page.c_str(), kNobody, kNobody), 0);
  for (const char* format : {"html", "perfetto", "memory-viz"}) {
    const CliResult r =
        run_cli("html --format " + std::string(format) + " " + quote(run_) + " -o " + quote(page));
    EXPECT_EQ(r.status, 1) << format << ": " << r.err;
    EXPECT_NE(r.err.find("gmemhook: refusing to write " + page.string()), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("symbolic link"), std::string::npos) << r.err;
    EXPECT_TRUE(slurp(target) == "keep me") << format << ": the symlink's target was written";
    EXPECT_TRUE(fs::is_symlink(page)) << format;
  }
}

// A file another user left in a shared directory is theirs: not replaced, not written into.
TEST_F(HtmlOutput, AnotherUsersFileInASharedDirectoryIsLeftAlone) {
  fs::permissions(out_, fs::perms::all | fs::perms::sticky_bit);
  const fs::path page = out_ / "page.html";
  std::ofstream(page) << "theirs";
  ASSERT_EQ(chown(page.c_str(), kNobody, kNobody), 0);
  const CliResult r = run_cli("html " + quote(run_) + " -o " + quote(page));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("belongs to another user"), std::string::npos) << r.err;
  EXPECT_TRUE(slurp(page) == "theirs") << "another user's file was replaced";
}

}  // namespace
}  // namespace gmemhook::test_logs

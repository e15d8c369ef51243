// write_private_file (output/private_file.h) on what may already be at the name: what is ours
// to replace, what is followed or written into, and what is refused. The exports through the CLI:
// reports/html_output_test.cpp.
#include "analyzer/output/private_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <future>
#include <stdexcept>

#include "log_builder.h"

namespace gmemhook::analysis {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string refusal(const fs::path& path) {
  try {
    write_private_file(path, "new");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

class PrivateFile : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test_logs::make_temp_dir("private-file"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// In a directory only we write: a symlink there is ours, and leads where we meant.
TEST_F(PrivateFile, OurOwnSymlinkIsFollowed) {
  std::ofstream(dir_ / "target") << "old";
  fs::create_symlink(dir_ / "target", dir_ / "link");
  write_private_file(dir_ / "link", "new");
  EXPECT_TRUE(fs::is_symlink(dir_ / "link"));
  EXPECT_EQ(slurp(dir_ / "target"), "new");
}

// /dev/null, a FIFO, a terminal: written into as a shell redirection would, never replaced by a
// file (a FIFO stands in for /dev/null, which the test must not risk).
TEST_F(PrivateFile, AFifoIsWrittenIntoNotReplaced) {
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto read = std::async(std::launch::async, [&] { return slurp(fifo); });
  write_private_file(fifo, "through the pipe");
  EXPECT_EQ(read.get(), "through the pipe");
  struct stat st {};
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

// Where others may create entries, a FIFO of theirs would hand them the export.
TEST_F(PrivateFile, AnotherUsersFifoInASharedDirectoryIsRefused) {
  fs::permissions(dir_, fs::perms::all | fs::perms::sticky_bit);
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0666), 0);
  ASSERT_EQ(chown(fifo.c_str(), 65534, 65534), 0);
  EXPECT_NE(refusal(fifo).find("refusing to write " + fifo.string() +
                               ": it is a file that belongs to another user in " + dir_.string() +
                               ", where other users may create files"),
            std::string::npos);
}

TEST_F(PrivateFile, ADirectoryNameIsRefusedWithTheReason) {
  EXPECT_NE(refusal(dir_ / "").find("names a directory"), std::string::npos);
  fs::create_directory(dir_ / "sub");
  EXPECT_NE(refusal(dir_ / "sub").find("cannot write " + (dir_ / "sub").string()),
            std::string::npos);
  EXPECT_NE(refusal(dir_ / "missing" / "page.html").find("No such file or directory"),
            std::string::npos);
}

}  // namespace
}  // namespace gmemhook::analysis

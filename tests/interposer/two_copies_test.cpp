// Two files of the hook preloaded into one program (a copy by hand in LD_PRELOAD and one added by
// a tool): the program runs as it would with one, the first copy records exactly what one copy
// records, and the later one records nothing and says so once.
#include <gtest/gtest.h>

#include <sstream>

#include "harness.h"

namespace gmemhook::test {
namespace {

namespace fs = std::filesystem;

// The built hook copied under another name: another file, another inode, the same code. Removed
// when the tests end.
const fs::path& hook_copy() {
  static const struct Copy {
    fs::path dir = temp_dir("two-copies-lib");
    fs::path file = dir / "libgmemhook-copy.so";
    Copy() { fs::copy_file(hook_path(), file); }
    ~Copy() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  } copy;
  return copy.file;
}

struct Order {
  bool copy_first;
  std::string first() const { return copy_first ? hook_copy().string() : hook_path(); }
  std::string second() const { return copy_first ? hook_path() : hook_copy().string(); }
};

std::map<std::string, std::string> two_copies_env(const fs::path& out, const Order& order) {
  auto env = traced_env(out);
  env["LD_PRELOAD"] = order.first() + ":" + order.second();
  return env;
}

// What a run's only process recorded: each event's API, result and size, in order (addresses
// move from run to run).
std::vector<std::string> recorded(const fs::path& out) {
  auto dirs = process_dirs(out);
  EXPECT_EQ(dirs.size(), 1u) << "one process directory, written by one copy";
  if (dirs.size() != 1) return {};
  std::vector<std::string> events;
  for (const LoggedEvent& e : read_process(dirs[0]).events)
    events.push_back(e.api + " " + std::to_string(e.ev.result) + " " + std::to_string(e.ev.f.size));
  return events;
}

// The scenario's "api value result" lines without the values.
std::string without_values(const std::string& out) {
  std::istringstream in(out);
  std::string api, value, result, kept;
  while (in >> api >> value >> result) kept += api + " " + result + "\n";
  return kept;
}

class TwoCopies : public ::testing::TestWithParam<std::tuple<bool, std::string>> {
 protected:
  Order order() const { return {std::get<0>(GetParam())}; }
  std::string path() const { return std::get<1>(GetParam()); }
};

// The lookup paths that each make the copies meet differently: exported symbols (the program
// binds to the first copy, whose real function is the second copy's wrapper), dlsym on an
// RTLD_LOCAL libcudart, and the driver's own hand-outs through cuGetProcAddress.
TEST_P(TwoCopies, ProgramRunsAndTheFirstCopyRecordsWhatOneCopyWould) {
  fs::path one = temp_dir("one-copy"), two = temp_dir("two-copies");
  RunResult alone = run({scenario_path(), "entry-points", path()}, traced_env(one));
  ASSERT_TRUE(alone.exited(0)) << alone.err;
  RunResult both = run({scenario_path(), "entry-points", path()}, two_copies_env(two, order()));
  ASSERT_TRUE(both.exited(0)) << "status " << both.status << "\n" << both.err;
  EXPECT_EQ(without_values(both.out), without_values(alone.out)) << "the same calls, results";
  std::vector<std::string> want = recorded(one), got = recorded(two);
  ASSERT_GT(want.size(), 10u);
  EXPECT_EQ(got, want);
  // One summary line, the first copy's; one line from the second, naming both files.
  EXPECT_EQ(count_of(both.err, " recorded in "), 1u) << both.err;
  const std::string said = "gmemhook: two copies of the hook are loaded: " + order().first() +
                           " records, " + order().second() + " records nothing";
  EXPECT_EQ(count_of(both.err, said), 1u) << both.err;
}

INSTANTIATE_TEST_SUITE_P(BothOrders, TwoCopies,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Values("runtime-symbol", "runtime-dlsym",
                                                              "driver-procaddress")));

// GMEMHOOK_QUIET keeps the second copy silent too, as it does the first.
TEST(TwoCopiesQuiet, NothingOnStderr) {
  fs::path out = temp_dir("two-copies-quiet");
  auto env = two_copies_env(out, {true});
  env["GMEMHOOK_QUIET"] = "1";
  RunResult r = run({scenario_path(), "plain", "0"}, env);
  ASSERT_TRUE(r.exited(0)) << r.err;
  EXPECT_EQ(r.out, "hello from scenario\n");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(recorded(out).size(), 1u);
}

// A hooked symbol with no definition after either copy: the second copy must not take the first
// for the real function (each would forward to the other until the stack ran out).
TEST(TwoCopiesNoNext, ACallWithNothingBehindItReturns) {
  if (on_real_gpu()) GTEST_SKIP() << "the fake libc10 runs on the simulated device only";
  for (bool copy_first : {false, true}) {
    fs::path out = temp_dir("two-copies-no-next");
    RunResult r =
        run({GMEMHOOK_TEST_BLOCKS_SCENARIO, "no-next"}, two_copies_env(out, {copy_first}));
    ASSERT_TRUE(r.exited(0)) << "status " << r.status << "\n" << r.err;
    EXPECT_EQ(r.out, "called\n");
    EXPECT_TRUE(fs::is_empty(out)) << "nothing recorded, so no directory";
  }
}

}  // namespace
}  // namespace gmemhook::test

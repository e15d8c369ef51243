// Stacks through a library that was unloaded and replaced by another at the same addresses: the
// fast unwinder must not walk the new code with what it learnt from the old (its rules are kept
// by return address), and the module map must name the new library.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "analyzer/symbols/symbolizer.h"
#include "harness.h"

namespace gmemhook::test {
namespace {

namespace fs = std::filesystem;

struct ReloadRun {
  std::vector<std::string> loaded;  // "<function> at <load bias>", A's then B's
  LoggedProcess process;
  std::vector<uint64_t> sizes;                   // of the allocations, in order
  std::vector<std::vector<std::string>> stacks;  // theirs, as module+offset
};

// The "reload" scenario (scenario_reload.cpp): 40 allocations through library A, dlclose, 40
// through library B. `fast`: GMEMHOOK_FAST_UNWIND.
ReloadRun run_reload(const std::string& fast) {
  fs::path out = temp_dir("reload-" + fast);
  auto env = traced_env(out);
  env["GMEMHOOK_FAST_UNWIND"] = fast;
  RunResult r = run({scenario_path(), "reload", "40"}, env);
  EXPECT_TRUE(r.exited(0)) << r.err;
  ReloadRun run;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    if (line.starts_with("loaded ")) run.loaded.push_back(line.substr(7));
  auto dirs = process_dirs(out);
  EXPECT_EQ(dirs.size(), 1u);
  run.process = read_process(dirs.at(0));
  for (const LoggedEvent& e : run.process.events) {
    if (e.kind != format::EventKind::Alloc) continue;
    run.sizes.push_back(e.ev.f.size);
    std::vector<std::string> frames;
    // Module and offset: the two runs load their objects at different addresses.
    for (uint64_t a : e.stack) {
      const analysis::Module* m = module_of(run.process, a);
      frames.push_back(m ? m->path + "+" + std::to_string(a - m->load_bias) : "?");
    }
    run.stacks.push_back(frames);
  }
  return run;
}

// A and B make their call at the same return address, but A's frame is found from rbp and B's
// from rsp: walked with A's rule, B's frame seemed to return straight to its caller's caller, and
// the caller's frame went missing. Both runs: the first 32 captures step through libunwind,
// the rest are the fast walk's.
TEST(Stacks, ReloadedLibraryIsWalkedWithItsOwnRules) {
  const ReloadRun fast = run_reload("1");
  const ReloadRun libunwind = run_reload("0");
  ASSERT_EQ(fast.loaded.size(), 2u);
  // Without the loader reusing A's addresses for B this test would show nothing.
  const std::string a_at = fast.loaded[0].substr(fast.loaded[0].find(" at "));
  const std::string b_at = fast.loaded[1].substr(fast.loaded[1].find(" at "));
  ASSERT_EQ(a_at, b_at) << "the loader put B elsewhere: " << fast.loaded[0] << ", "
                        << fast.loaded[1];
  ASSERT_EQ(fast.sizes.size(), 80u);
  ASSERT_EQ(libunwind.sizes, fast.sizes);
  for (size_t i = 0; i < fast.stacks.size(); ++i) {
    ASSERT_FALSE(fast.stacks[i].empty()) << "event " << i;
    EXPECT_EQ(fast.stacks[i], libunwind.stacks[i])
        << "event " << i << " (" << fast.sizes[i] << " bytes)";
  }
  // The same call path to the same return address: B's stacks are A's, frame for frame (the
  // module map's latest snapshot names B at A's addresses). libunwind's trace cache had the same
  // blind spot as the fast unwinder's rules, so this holds the reference itself to the frames the
  // program really made.
  for (size_t i = 0; i < 40; ++i) {
    EXPECT_EQ(fast.stacks[40 + i], fast.stacks[i]) << "event " << 40 + i;
    EXPECT_NE(fast.stacks[i][0].find("libreload_b.so+"), std::string::npos) << fast.stacks[i][0];
  }

  // The analyzer names B's function for B's events: the module map followed the reload (B's
  // stacks are A's ids, so no new stack asked for a new snapshot).
  analysis::Symbolizer symbols(fast.process.modules);
  const LoggedEvent* last = nullptr;
  for (const LoggedEvent& e : fast.process.events)
    if (e.kind == format::EventKind::Alloc) last = &e;
  ASSERT_NE(last, nullptr);
  std::vector<std::string> names;
  for (uint64_t a : last->stack)
    for (const analysis::Frame& f : symbols.symbolize(a))
      if (f.function) names.push_back(*f.function);
  EXPECT_NE(std::find(names.begin(), names.end(), "allocate_in_b"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "allocate_in_a"), names.end());
}

// The analyzer names each stack after the code loaded when it was recorded: A's leak (recorded
// before the dlclose) runs through allocate_in_a, B's through allocate_in_b, although the hook
// wrote one stack for both (same id, same return addresses) and the latest module snapshot
// names B there. Before this was so, both leaks were one row, named allocate_in_b.
TEST(Stacks, ReportsNameTheLibraryLoadedWhenTheStackWasRecorded) {
  fs::path out = temp_dir("reload-leak");
  RunResult r = run({scenario_path(), "reload-leak", "5"}, traced_env(out));
  ASSERT_TRUE(r.exited(0)) << r.err;
  ASSERT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;
  const size_t a_at = r.out.find(" at "), b_at = r.out.rfind(" at ");
  ASSERT_EQ(r.out.substr(a_at, r.out.find('\n') - a_at),
            r.out.substr(b_at, r.out.size() - 1 - b_at))
      << "the loader put B elsewhere: " << r.out;
  auto dirs = process_dirs(out);
  ASSERT_EQ(dirs.size(), 1u);
  const RunResult leaks = run({GMEMHOOK_TEST_CLI, "leaks", "--group-by", "stack", "--native",
                               "--json", dirs.at(0).string()},
                              {});
  ASSERT_TRUE(leaks.exited(0)) << leaks.err;
  // Each leak's entry, up to the next one: A's 1004 bytes, B's 2004. Only the "leaks" list: the
  // "rows" after it name both functions again.
  const std::string listed = leaks.out.substr(0, leaks.out.find("\"address_space\""));
  auto row_of = [&](const std::string& bytes) {
    const size_t at = listed.find("\"bytes\": " + bytes + ",");
    if (at == std::string::npos) return std::string();
    return listed.substr(at, listed.find("\"bytes\": ", at + 1) - at);
  };
  const std::string a = row_of("1004"), b = row_of("2004");
  ASSERT_FALSE(a.empty()) << leaks.out;
  ASSERT_FALSE(b.empty()) << leaks.out;
  EXPECT_NE(a.find("allocate_in_a"), std::string::npos) << a;
  EXPECT_EQ(a.find("allocate_in_b"), std::string::npos) << a;
  EXPECT_NE(b.find("allocate_in_b"), std::string::npos) << b;
  EXPECT_EQ(b.find("allocate_in_a"), std::string::npos) << b;
}

// The hook's dlclose hands back glibc's result, errno and dlerror untouched, and unloads what
// glibc's would: a close that leaves the library referenced, and the last one.
TEST(Stacks, DlcloseResultsAreGlibcs) {
  fs::path out = temp_dir("dlclose-results");
  auto traced = traced_env(out);
  auto plain = traced;
  plain["LD_PRELOAD"] = "";
  const RunResult with_hook = run({scenario_path(), "dlclose-results"}, traced);
  const RunResult without = run({scenario_path(), "dlclose-results"}, plain);
  EXPECT_TRUE(with_hook.exited(0)) << with_hook.err;
  EXPECT_TRUE(without.exited(0)) << without.err;
  EXPECT_EQ(without.out, "still-referenced 0 1234 -\nloaded 1\nlast 0 1234 -\nloaded 0\n");
  EXPECT_EQ(with_hook.out, without.out);
}

}  // namespace
}  // namespace gmemhook::test

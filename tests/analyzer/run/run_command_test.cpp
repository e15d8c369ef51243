// `gmemhook run` end to end on the simulated device: exit statuses and signals passed through,
// run.json, several processes in one run directory; and the pieces it is built from.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "analyzer/log/reader.h"
#include "analyzer/run/hook_library.h"
#include "analyzer/run/new_run_dir.h"
#include "analyzer/run/run_record.h"
#include "analyzer/run/traced_environment.h"

#if !defined(GMEMHOOK_CLI) || !defined(GMEMHOOK_TEST_SCENARIO) || \
    !defined(GMEMHOOK_TEST_FAKECUDA_DIR)
#error "CMake defines the paths of the gmemhook binary, the scenario and the simulated device"
#endif

namespace gmemhook::analysis {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

const std::string kCli = quote(GMEMHOOK_CLI);
const std::string kScenario = quote(GMEMHOOK_TEST_SCENARIO);

struct ShellResult {
  int status = -1;  // as a shell reports it: 128+N after death by signal N
  std::string out, err;
};

class RunCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int counter = 0;
    tmp_ = fs::temp_directory_path() /
           ("gmemhook-run-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(tmp_);
    fs::create_directories(tmp_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(tmp_);
  }

  // Runs `script` with /bin/sh in the temp directory, on the simulated device.
  ShellResult sh(const std::string& script) {
    std::string cmd = "cd " + quote(tmp_.string()) +
                      " && LD_LIBRARY_PATH=" + quote(GMEMHOOK_TEST_FAKECUDA_DIR) + " /bin/sh -c " +
                      quote(script) + " >" + quote((tmp_ / "stdout").string()) + " 2>" +
                      quote((tmp_ / "stderr").string());
    int rc = std::system(cmd.c_str());
    ShellResult r;
    r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
    r.out = slurp(tmp_ / "stdout");
    r.err = slurp(tmp_ / "stderr");
    return r;
  }

  fs::path tmp_;
};

std::string last_line(const std::string& s) {
  std::string t = s;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

// Process directory name → events, for every process directory of `run`.
std::map<std::string, uint64_t> events_per_process(const fs::path& run) {
  std::map<std::string, uint64_t> out;
  for (const fs::path& dir : find_process_dirs(run)) {
    ProcessReader r = ProcessReader::open(dir);
    r.for_each_event([](const format::Event&, const ThreadFileReader&) {});
    out[dir.filename().string()] = r.events_read();
  }
  return out;
}

TEST_F(RunCommandTest, PassesExitCodesAndStdoutThrough) {
  ShellResult ok = sh(kCli + " run -o ok -- " + kScenario + " plain 0");
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(ok.out, "hello from scenario\n");  // the child's stdout, byte for byte
  ShellResult three = sh(kCli + " run -o three -- " + kScenario + " plain 3");
  EXPECT_EQ(three.status, 3) << three.err;
  EXPECT_EQ(three.out, "hello from scenario\n");
}

TEST_F(RunCommandTest, DeathBySignalReachesTheShell) {
  ShellResult r = sh(kCli + " run -o crash -- " + kScenario + " die segv 10 >/dev/null; echo $?");
  EXPECT_EQ(last_line(r.out), "139") << r.err;  // 128 + SIGSEGV, as for the program itself
  EXPECT_NE(r.err.find("crashed (SIGSEGV)"), std::string::npos) << r.err;
}

TEST_F(RunCommandTest, RunJsonSaysWhatRanAndHowItEnded) {
  sh(kCli + " run -o crash -- " + kScenario + " die segv 10 >/dev/null");
  auto json = nlohmann::json::parse(slurp(tmp_ / "crash" / "run.json"));
  EXPECT_EQ(json["command"],
            (std::vector<std::string>{GMEMHOOK_TEST_SCENARIO, "die", "segv", "10"}));
  EXPECT_EQ(json["cwd"], tmp_.string());
  EXPECT_TRUE(json["exit_code"].is_null()) << json;
  EXPECT_EQ(json["signal"], SIGSEGV);
  EXPECT_EQ(json["signal_name"], "SIGSEGV");
  EXPECT_TRUE(json["start_time"].is_string()) << json;
  EXPECT_TRUE(json["end_time"].is_string()) << json;
  EXPECT_LE(json["start_time"].get<std::string>(), json["end_time"].get<std::string>());
  // The pid is the traced process's: its directory is named after it.
  auto events = events_per_process(tmp_ / "crash");
  ASSERT_EQ(events.size(), 1u);
  const std::string dir = events.begin()->first;
  EXPECT_EQ(dir, "gmemhook_scenario." + std::to_string(json["pid"].get<int>()));
  EXPECT_GE(events.begin()->second, 10u);  // ten allocations, five frees

  sh(kCli + " run -o three -- " + kScenario + " plain 3");
  json = nlohmann::json::parse(slurp(tmp_ / "three" / "run.json"));
  EXPECT_EQ(json["exit_code"], 3);
  EXPECT_TRUE(json["signal"].is_null()) << json;
  EXPECT_TRUE(json["signal_name"].is_null()) << json;
}

TEST_F(RunCommandTest, EveryProcessOfTheCommandLandsInOneRunDir) {
  ShellResult r = sh(kCli + " run -o two -- /bin/sh -c " +
                     quote(kScenario + " plain 0; " + kScenario + " plain 0"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "hello from scenario\nhello from scenario\n");
  int with_cuda = 0;
  for (const auto& [name, n] : events_per_process(tmp_ / "two")) {
    if (n == 0) continue;  // the shell itself is traced too, and makes no CUDA call
    ++with_cuda;
    EXPECT_EQ(name.rfind("gmemhook_scenario.", 0), 0u) << name;
    EXPECT_EQ(n, 1u) << name;
  }
  EXPECT_EQ(with_cuda, 2);
  EXPECT_NE(r.err.find("2 processes with CUDA calls recorded in " + (tmp_ / "two").string()),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(std::string("run: ") + GMEMHOOK_CLI + " summary " + (tmp_ / "two").string()),
            std::string::npos)
      << r.err;
}

// The summary names the command and each process by its executable: a name holding ESC [2J, BEL
// and CR reached the terminal raw.
TEST_F(RunCommandTest, SummaryShowsControlsInNamesEscaped) {
  const std::string evil = "evil\x1b[2J\a\rx";
  fs::copy_file(GMEMHOOK_TEST_SCENARIO, tmp_ / evil);
  ShellResult r = sh(kCli + " run -o r -- ./" + quote(evil) + " plain 0");
  ASSERT_EQ(r.status, 0) << r.err;
  for (char c : {'\x1b', '\a', '\r'}) EXPECT_EQ(r.err.find(c), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("evil\\x1b[2J\\x07\\x0dx exited with code 0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("  evil\\x1b[2J\\x07\\x0dx."), std::string::npos) << r.err;
}

TEST_F(RunCommandTest, SetsTheEnvironmentOfTheCommand) {
  ShellResult r = sh("LD_PRELOAD=/nonexistent/libother.so " + kCli +
                     " run -o rel/dir --depth 3 --no-python --free-stacks -- /bin/sh -c " +
                     quote("echo $GMEMHOOK_OUT; echo $LD_PRELOAD; echo $GMEMHOOK_DEPTH "
                           "$GMEMHOOK_PYTHON $GMEMHOOK_FREE_STACKS $GMEMHOOK_QUIET"));
  ASSERT_EQ(r.status, 0) << r.err;
  std::string lib = GMEMHOOK_CLI;
  lib = (fs::path(lib).parent_path().parent_path() / "lib" / "libgmemhook.so").string();
  EXPECT_EQ(r.out,
            (tmp_ / "rel" / "dir").string() + "\n" + lib + ":/nonexistent/libother.so\n3 0 1 1\n");
}

// LD_PRELOAD already names another copy of the hook (another build or install): the command runs
// with that one copy, which records into the run directory; a second copy would only forward.
TEST_F(RunCommandTest, UsesTheCopyOfTheHookAlreadyInLdPreload) {
  const fs::path lib =
      fs::path(GMEMHOOK_CLI).parent_path().parent_path() / "lib" / "libgmemhook.so";
  const fs::path other = tmp_ / "other" / "libgmemhook.so";
  fs::create_directories(other.parent_path());
  fs::copy_file(lib, other);
  ShellResult r = sh("LD_PRELOAD=" + quote(other.string()) + " " + kCli + " run -o pre -- " +
                     kScenario + " plain 0");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "hello from scenario\n");
  auto events = events_per_process(tmp_ / "pre");
  ASSERT_EQ(events.size(), 1u) << r.err;
  EXPECT_EQ(events.begin()->second, 1u);
  EXPECT_NE(r.err.find("LD_PRELOAD already names " + other.string()), std::string::npos) << r.err;
  EXPECT_EQ(nlohmann::json::parse(slurp(tmp_ / "pre" / "run.json"))["library"], other.string());
}

// No process directory and a command that died of a signal: it may have died before any CUDA
// call, so the summary does not guess that it was statically linked.
TEST_F(RunCommandTest, ACrashWithoutCudaCallsIsNotBlamedOnStaticLinking) {
  ShellResult r = sh(kCli + " run -o crash -- /bin/sh -c " + quote("kill -SEGV $$"));
  EXPECT_EQ(r.status, 128 + SIGSEGV) << r.err;
  EXPECT_NE(r.err.find("crashed (SIGSEGV)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("statically linked"), std::string::npos) << r.err;
}

TEST_F(RunCommandTest, MissingCommandExits127AndLeavesNothing) {
  ShellResult bare = sh(kCli + " run -o gone -- no-such-command-gmemhook x");
  EXPECT_EQ(bare.status, 127);
  EXPECT_NE(bare.err.find("no-such-command-gmemhook: command not found"), std::string::npos)
      << bare.err;
  EXPECT_FALSE(fs::exists(tmp_ / "gone"));
  ShellResult path = sh(kCli + " run -o gone -- ./no-such-file");
  EXPECT_EQ(path.status, 127);
  EXPECT_NE(path.err.find("./no-such-file: No such file or directory"), std::string::npos)
      << path.err;
}

TEST_F(RunCommandTest, RefusesANonEmptyRunDir) {
  fs::create_directories(tmp_ / "used" / "old.1");
  ShellResult r = sh(kCli + " run -o used -- true");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("is not empty"), std::string::npos) << r.err;
}

// An existing -o directory others could rename entries in, or reach through a symlink of theirs,
// is refused before anything is written there: run.json (argv, cwd) nor the logs.
TEST_F(RunCommandTest, RefusesARunDirOfAnotherUserOrWritableByOthersOrASymlink) {
  constexpr uid_t kNobody = 65534;  // another user: root bypasses permission bits, not ownership
  fs::create_directories(tmp_ / "theirs");
  ASSERT_EQ(chown((tmp_ / "theirs").c_str(), kNobody, kNobody), 0);
  fs::create_directories(tmp_ / "open");
  fs::permissions(tmp_ / "open", fs::perms::all);
  fs::create_directories(tmp_ / "target");
  fs::create_directory_symlink(tmp_ / "target", tmp_ / "link");
  ASSERT_EQ(lchown((tmp_ / "link").c_str(), kNobody, kNobody), 0);
  const std::pair<const char*, const char*> cases[] = {
      {"theirs", "it is owned by another user"},
      {"open", "it is writable by other users without the sticky bit"},
      {"link", "it is a symbolic link"},
  };
  for (const auto& [dir, why] : cases) {
    ShellResult r = sh(kCli + " run -o " + dir + " -- " + kScenario + " plain 0");
    EXPECT_EQ(r.status, 2) << dir << ": " << r.err;
    EXPECT_NE(
        r.err.find("gmemhook run: refusing to write into " + (tmp_ / dir).string() + ": " + why),
        std::string::npos)
        << r.err;
    EXPECT_EQ(r.out, "") << dir << ": the command ran";
  }
  EXPECT_TRUE(fs::is_empty(tmp_ / "theirs"));
  EXPECT_TRUE(fs::is_empty(tmp_ / "open"));
  EXPECT_TRUE(fs::is_empty(tmp_ / "target"));
  EXPECT_TRUE(fs::is_symlink(tmp_ / "link"));

  // Shared but sticky, like /tmp, and ours: others may not rename what is in it.
  fs::permissions(tmp_ / "open", fs::perms::all | fs::perms::sticky_bit);
  ShellResult sticky = sh(kCli + " run -o open -- " + kScenario + " plain 0");
  EXPECT_EQ(sticky.status, 0) << sticky.err;
  EXPECT_TRUE(fs::exists(tmp_ / "open" / "run.json"));
}

TEST_F(RunCommandTest, DefaultRunDirIsNamedAfterTheCommand) {
  ShellResult r = sh(kCli + " run -- " + kScenario + " plain 0");
  ASSERT_EQ(r.status, 0) << r.err;
  int runs = 0;
  for (const auto& e : fs::directory_iterator(tmp_)) {
    std::string name = e.path().filename().string();
    if (name.rfind("gmemhook.gmemhook_scenario.", 0) != 0) continue;
    ++runs;
    EXPECT_TRUE(fs::exists(e.path() / "run.json"));
  }
  EXPECT_EQ(runs, 1);
}

TEST_F(RunCommandTest, ExitsWith2WhenTheLibraryIsNotNextToIt) {
  fs::create_directories(tmp_ / "bin");
  fs::copy_file(GMEMHOOK_CLI, tmp_ / "bin" / "gmemhook");
  fs::permissions(tmp_ / "bin" / "gmemhook", fs::perms::owner_exec, fs::perm_options::add);
  ShellResult r = sh("./bin/gmemhook run -- true");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("libgmemhook.so not found"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find((tmp_ / "lib" / "libgmemhook.so").string()), std::string::npos) << r.err;
}

TEST(HookLibrary, LooksInLibThenLib64BesideBin) {
  auto c = hook_library_candidates("/opt/gmemhook/bin/gmemhook");
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0], "/opt/gmemhook/lib/libgmemhook.so");
  EXPECT_EQ(c[1], "/opt/gmemhook/lib/gmemhook/libgmemhook.so");
  EXPECT_EQ(c[2], "/opt/gmemhook/lib64/libgmemhook.so");
  EXPECT_EQ(c[3], "/opt/gmemhook/lib64/gmemhook/libgmemhook.so");
  EXPECT_EQ(find_hook_library(GMEMHOOK_CLI).value_or("").filename(), "libgmemhook.so");
}

TEST(TracedEnvironment, PrependsTheHookAndSetsTheRunDir) {
  TraceSettings s;
  s.library = "/p/lib/libgmemhook.so";
  s.run_dir = "/runs/a";
  auto env = traced_environment({"PATH=/bin", "LD_PRELOAD=/x.so /y.so", "GMEMHOOK_QUIET=0"}, s);
  EXPECT_EQ(env,
            (std::vector<std::string>{"PATH=/bin", "LD_PRELOAD=/p/lib/libgmemhook.so:/x.so /y.so",
                                      "GMEMHOOK_QUIET=1", "GMEMHOOK_OUT=/runs/a"}));
  // Already preloaded (a nested `gmemhook run`): not twice. Options only when asked for.
  s.depth = 0;
  s.no_python = true;
  s.free_stacks = true;
  env = traced_environment({"LD_PRELOAD=/x.so:/p/lib/libgmemhook.so"}, s);
  EXPECT_EQ(
      env, (std::vector<std::string>{"LD_PRELOAD=/x.so:/p/lib/libgmemhook.so",
                                     "GMEMHOOK_OUT=/runs/a", "GMEMHOOK_QUIET=1", "GMEMHOOK_DEPTH=0",
                                     "GMEMHOOK_PYTHON=0", "GMEMHOOK_FREE_STACKS=1"}));
  // Another install's copy: not a second one beside it.
  env = traced_environment({"LD_PRELOAD=/x.so /opt/old/lib/libgmemhook.so"}, s);
  EXPECT_EQ(env.front(), "LD_PRELOAD=/x.so /opt/old/lib/libgmemhook.so");
}

TEST(TracedEnvironment, FindsACopyOfTheHookInLdPreloadByNameOrFile) {
  EXPECT_EQ(hook_in_preload("/x.so:/opt/old/libgmemhook.so", "/p/lib/libgmemhook.so"),
            "/opt/old/libgmemhook.so");
  EXPECT_EQ(hook_in_preload("/x.so:/y/libgmemhook-other.so", "/p/lib/libgmemhook.so"),
            std::nullopt);
  EXPECT_EQ(hook_in_preload("", "/p/lib/libgmemhook.so"), std::nullopt);
  // The same file under another name (a symlink a wrapper script made).
  const fs::path dir = fs::temp_directory_path() / ("gmemhook-preload-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "libgmemhook.so") << "x";
  fs::create_symlink(dir / "libgmemhook.so", dir / "hook.so");
  EXPECT_EQ(hook_in_preload("/x.so " + (dir / "hook.so").string(), dir / "libgmemhook.so"),
            dir / "hook.so");
  fs::remove_all(dir);
}

// --jax-buffers: JAX allocates each buffer from CUDA instead of one 75% pool.
TEST(TracedEnvironment, JaxBuffersTurnsThePreallocatedPoolOff) {
  TraceSettings s;
  s.library = "/p/lib/libgmemhook.so";
  s.run_dir = "/runs/a";
  s.jax_buffers = true;
  const auto env = traced_environment({"XLA_PYTHON_CLIENT_ALLOCATOR=bfc"}, s);
  EXPECT_EQ(env.front(), "XLA_PYTHON_CLIENT_ALLOCATOR=platform");
}

TEST(RunRecord, SignalNamesAndVerdicts) {
  EXPECT_EQ(signal_name(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  EXPECT_EQ(signal_name(SIGRTMIN + 2), "SIGRTMIN+2");
  EXPECT_EQ(signal_verdict(SIGKILL), "killed");
  EXPECT_EQ(signal_verdict(SIGHUP), "killed");
  EXPECT_EQ(signal_verdict(SIGBUS), "crashed");
  EXPECT_EQ(signal_verdict(SIGABRT), "crashed");
  EXPECT_EQ(signal_verdict(SIGUSR1), std::nullopt);
}

TEST(RunRecord, JsonKeepsTheCommandExactAndWritesNullsForWhatIsUnknown) {
  RunRecord r;
  r.command = {"python", "-c", "print(\"a\\b\")\n", "caf\xc3\xa9"};
  r.cwd = "/w";
  r.library = "/l.so";
  r.start_realtime_ns = 1'700'000'000'123'456'789ull;
  std::string text = run_record_json(r);
  auto json = nlohmann::json::parse(text);
  EXPECT_EQ(json["command"], r.command);
  EXPECT_EQ(json["cwd"], "/w");
  EXPECT_EQ(json["library"], "/l.so");
  EXPECT_EQ(json["start_time"], "2023-11-14T22:13:20.123456Z");
  for (const char* k : {"pid", "exit_code", "signal", "signal_name", "end_time"})
    EXPECT_TRUE(json[k].is_null()) << k;
  // Keys in the documented order (docs/run.md).
  EXPECT_LT(text.find("\"command\""), text.find("\"pid\""));
  EXPECT_LT(text.find("\"pid\""), text.find("\"exit_code\""));
  EXPECT_LT(text.find("\"signal_name\""), text.find("\"end_time\""));

  r.pid = 42;
  r.signal = SIGKILL;
  r.end_realtime_ns = r.start_realtime_ns + 1000;
  json = nlohmann::json::parse(run_record_json(r));
  EXPECT_EQ(json["pid"], 42);
  EXPECT_EQ(json["signal"], 9);
  EXPECT_EQ(json["signal_name"], "SIGKILL");
  EXPECT_EQ(json["end_time"], "2023-11-14T22:13:20.123457Z");
}

TEST(NewRunDir, DefaultNameIsExeAndLocalTime) {
  std::string name = default_run_dir_name("/usr/bin/python3", 0);
  EXPECT_EQ(name.rfind("gmemhook.python3.19", 0), 0u) << name;  // 1969 or 1970, by time zone
  EXPECT_EQ(name.size(), std::string("gmemhook.python3.19700101-000000").size());
  EXPECT_EQ(default_run_dir_name("./my prog", 0).substr(0, 17), "gmemhook.my_prog.");
}

}  // namespace
}  // namespace gmemhook::analysis

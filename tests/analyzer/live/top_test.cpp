// gmemhook top on a job that is still running: a program on the simulated device allocates,
// answers, and blocks reading a pipe this test holds, so each snapshot is taken at a moment
// whose live set is known exactly. Also: growth between refreshes, exit and kill -9 shown as
// such, and a record half stored at a file's tail read as "not yet there", not as damage.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyzer/live/clocks.h"
#include "analyzer/live/run_watch.h"
#include "analyzer/log/process_follower.h"
#include "analyzer/log/record_cursor.h"
#include "analyzer/model/replay.h"
#include "report_scenario.h"

namespace gmemhook::test_logs {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
constexpr uint64_t kMiB = 1 << 20;

// The waiter program under the hook, talking through two pipes.
class Waiter {
 public:
  explicit Waiter(const fs::path& run) {
    int in[2], out[2];
    EXPECT_EQ(pipe(in), 0);
    EXPECT_EQ(pipe(out), 0);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      close(in[1]);
      close(out[0]);
      setenv("GMEMHOOK_OUT", run.c_str(), 1);
      setenv("GMEMHOOK_QUIET", "1", 1);
      setenv("LD_PRELOAD", GMEMHOOK_HOOK, 1);
      setenv("LD_LIBRARY_PATH", GMEMHOOK_FAKECUDA_DIR, 1);
      execl(GMEMHOOK_TOP_WAITER, GMEMHOOK_TOP_WAITER, static_cast<char*>(nullptr));
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = fdopen(out[0], "r");
  }
  ~Waiter() {
    if (to_ >= 0) close(to_);
    if (from_) fclose(from_);
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  // Sends one command and waits for its answer: the program is then blocked reading the pipe.
  std::string say(const std::string& command) {
    const std::string line = command + "\n";
    EXPECT_EQ(write(to_, line.data(), line.size()), static_cast<ssize_t>(line.size()));
    char buf[256] = {};
    if (!fgets(buf, sizeof buf, from_)) return "";
    return buf;
  }
  int quit(int status) {
    const std::string line = "q " + std::to_string(status) + "\n";
    EXPECT_EQ(write(to_, line.data(), line.size()), static_cast<ssize_t>(line.size()));
    return reap();
  }
  int kill9() {
    kill(pid_, SIGKILL);
    return reap();
  }
  pid_t pid() const { return pid_; }

 private:
  int reap() {
    int st = 0;
    waitpid(pid_, &st, 0);
    reaped_ = true;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  pid_t pid_ = -1;
  int to_ = -1;
  FILE* from_ = nullptr;
  bool reaped_ = false;
};

json snapshot(const fs::path& run) {
  const CliResult r = run_cli("top --once --json " + quote(run));
  EXPECT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

// The one process's device-0 memory in a snapshot.
const json& device0(const json& snap) {
  static const json none = json::object();
  if (snap["processes"].size() != 1) return none;
  for (const json& d : snap["processes"][0]["devices"])
    if (d["device"] == 0 && d["memory"] == "device") return d;
  return none;
}

uint64_t site_bytes(const json& device, const std::string& function) {
  uint64_t bytes = 0;
  for (const json& s : device["sites"])
    if (s["where"].get<std::string>().find(function) != std::string::npos)
      bytes += s["bytes"].get<uint64_t>();
  return bytes;
}

class Top : public ::testing::Test {
 protected:
  void SetUp() override { run_ = make_temp_dir("top"); }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(run_);
  }
  fs::path run_;
};

TEST_F(Top, SnapshotsWhileTheProgramWaitsShowExactlyItsLiveSet) {
  Waiter w(run_);
  ASSERT_EQ(w.say("w " + std::to_string(kMiB)), "ok 0\n");
  ASSERT_EQ(w.say("w " + std::to_string(2 * kMiB)), "ok 1\n");
  json snap = snapshot(run_);
  ASSERT_EQ(snap["processes"].size(), 1u) << snap.dump(2);
  EXPECT_EQ(snap["processes"][0]["state"], "running");
  EXPECT_EQ(snap["processes"][0]["pid"], w.pid());
  json d = device0(snap);
  EXPECT_EQ(d["live_bytes"], 3 * kMiB) << snap.dump(2);
  EXPECT_EQ(d["live_count"], 2u);
  EXPECT_EQ(d["peak_bytes"], 3 * kMiB);
  EXPECT_EQ(site_bytes(d, "alloc_weights"), 3 * kMiB) << d.dump(2);

  ASSERT_EQ(w.say("s " + std::to_string(4 * kMiB)), "ok 2\n");
  ASSERT_EQ(w.say("f 0"), "ok\n");
  snap = snapshot(run_);
  d = device0(snap);
  EXPECT_EQ(d["live_bytes"], 6 * kMiB) << snap.dump(2);
  EXPECT_EQ(d["live_count"], 2u);
  EXPECT_EQ(d["peak_bytes"], 7 * kMiB);
  EXPECT_EQ(site_bytes(d, "alloc_weights"), 2 * kMiB) << d.dump(2);
  EXPECT_EQ(site_bytes(d, "alloc_scratch"), 4 * kMiB);
  ASSERT_FALSE(d["sites"].empty());
  EXPECT_NE(d["sites"][0]["where"].get<std::string>().find("alloc_scratch"), std::string::npos)
      << "largest first";

  ASSERT_EQ(w.quit(3), 3);
  snap = snapshot(run_);
  EXPECT_EQ(snap["processes"][0]["state"], "exited");
  EXPECT_EQ(snap["processes"][0]["exit_status"], 3);
  EXPECT_EQ(device0(snap)["live_bytes"], 6 * kMiB) << "the end state of a finished run";
}

TEST_F(Top, OneWatchReadsOnlyWhatIsNewAndMeasuresGrowthBetweenRefreshes) {
  Waiter w(run_);
  ASSERT_EQ(w.say("w " + std::to_string(kMiB)), "ok 0\n");
  analysis::RunWatch watch(run_);
  analysis::WatchOptions options;
  auto refresh = [&] {
    watch.update(analysis::monotonic_now_ns(), options);
    return watch.view(analysis::monotonic_now_ns(), options);
  };
  analysis::TopView v = refresh();
  ASSERT_EQ(v.processes.size(), 1u);
  ASSERT_EQ(v.processes[0].devices.size(), 1u);
  EXPECT_EQ(v.processes[0].events, 1u);
  ASSERT_EQ(v.processes[0].devices[0].sites.size(), 1u);
  EXPECT_EQ(v.processes[0].devices[0].sites[0].growth, static_cast<int64_t>(kMiB));

  ASSERT_EQ(w.say("w " + std::to_string(2 * kMiB)), "ok 1\n");
  ASSERT_EQ(w.say("s " + std::to_string(kMiB)), "ok 2\n");
  v = refresh();
  EXPECT_EQ(v.processes[0].events, 3u) << "each event read once, never again from the start";
  const auto& sites = v.processes[0].devices[0].sites;
  ASSERT_EQ(sites.size(), 2u);
  EXPECT_NE(sites[0].where.find("alloc_weights"), std::string::npos);
  EXPECT_EQ(sites[0].bytes, 3 * kMiB);
  EXPECT_EQ(sites[0].growth, static_cast<int64_t>(2 * kMiB));
  EXPECT_EQ(sites[1].growth, static_cast<int64_t>(kMiB));

  ASSERT_EQ(w.say("f 1"), "ok\n");
  v = refresh();
  EXPECT_EQ(v.processes[0].devices[0].live_bytes, 2 * kMiB);
  EXPECT_EQ(v.processes[0].devices[0].sites[0].growth, -static_cast<int64_t>(2 * kMiB));
  EXPECT_EQ(v.processes[0].state, analysis::ProcessState::Running);

  EXPECT_EQ(w.kill9(), 128 + SIGKILL);
  v = refresh();
  EXPECT_EQ(v.processes[0].state, analysis::ProcessState::Killed);
  EXPECT_EQ(v.processes[0].devices[0].live_bytes, 2 * kMiB);
}

TEST_F(Top, KilledProcessIsShownAsKilledWithWhatItHeld) {
  Waiter w(run_);
  ASSERT_EQ(w.say("s " + std::to_string(5 * kMiB)), "ok 0\n");
  EXPECT_EQ(w.kill9(), 128 + SIGKILL);
  const json snap = snapshot(run_);
  ASSERT_EQ(snap["processes"].size(), 1u);
  EXPECT_EQ(snap["processes"][0]["state"], "killed");
  EXPECT_EQ(device0(snap)["live_bytes"], 5 * kMiB);
  const CliResult text = run_cli("top --once " + quote(run_));
  EXPECT_EQ(text.status, 0);
  EXPECT_NE(text.out.find("killed"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("alloc_scratch"), std::string::npos) << text.out;
}

TEST_F(Top, ProcessesThatStartWhileItWatchesAppear) {
  analysis::RunWatch watch(run_);
  analysis::WatchOptions options;
  auto refresh = [&] {
    watch.update(analysis::monotonic_now_ns(), options);
    return watch.view(analysis::monotonic_now_ns(), options);
  };
  EXPECT_TRUE(refresh().processes.empty());
  Waiter a(run_);
  ASSERT_EQ(a.say("w " + std::to_string(kMiB)), "ok 0\n");
  analysis::TopView v = refresh();
  ASSERT_EQ(v.processes.size(), 1u);
  Waiter b(run_);
  ASSERT_EQ(b.say("s " + std::to_string(2 * kMiB)), "ok 0\n");
  v = refresh();
  ASSERT_EQ(v.processes.size(), 2u);
  for (const analysis::ProcessView& p : v.processes) {
    ASSERT_EQ(p.devices.size(), 1u);
    EXPECT_EQ(p.devices[0].live_bytes, p.pid == static_cast<uint64_t>(a.pid()) ? kMiB : 2 * kMiB);
    EXPECT_EQ(p.state, analysis::ProcessState::Running);
  }
}

// The offset of the last record of a thread file (its header: what the writer stores last).
uint64_t last_record_offset(const fs::path& file) {
  analysis::LogBytes bytes = analysis::LogBytes::map(file, file.string());
  format::FileHeader header;
  std::memcpy(&header, bytes.bytes().data(), sizeof header);
  analysis::RecordCursor cursor(bytes, header);
  analysis::Record r, last;
  while (cursor.next(&r)) last = r;
  return last.offset;
}

struct CountEvents : analysis::EventVisitor {
  uint64_t events = 0;
  void on_event(const format::Event&, const analysis::ThreadFileReader&) override { ++events; }
};

// A writer stores a record's 2-byte header last; a store straddling a cache line can be seen one
// byte at a time. Either half alone is a record not yet committed: no error, no event — and the
// event is read once the rest arrives, without reading the file again from its start.
TEST_F(Top, HalfStoredRecordAtTheTailIsNotYetThere) {
  Scenario s(4242);
  const uint32_t st = s.stack(7, {Scenario::kModuleBias + 0x10});
  s.alloc(7, format::ApiId::cudaMalloc, 0x7f0000000000, kMiB, 0, st);
  s.alloc(7, format::ApiId::cudaMalloc, 0x7f0000100000, kMiB, 0, st);
  const fs::path dir = s.write(run_, false);
  fs::path thread;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().starts_with("thread.")) thread = e.path();
  ASSERT_FALSE(thread.empty());
  const uint64_t at = last_record_offset(thread);

  for (int keep : {0, 1}) {  // keep the type byte, or the length byte
    std::fstream f(thread, std::ios::in | std::ios::out | std::ios::binary);
    char header[2];
    f.seekg(static_cast<std::streamoff>(at));
    f.read(header, 2);
    const char torn[2] = {keep == 0 ? header[0] : char(0), keep == 1 ? header[1] : char(0)};
    f.seekp(static_cast<std::streamoff>(at));
    f.write(torn, 2);
    f.flush();

    analysis::ProcessFollower follower(dir);
    ASSERT_TRUE(follower.refresh());
    CountEvents count;
    EXPECT_EQ(follower.read_new_events(count, 0, UINT64_MAX, false), 1u);
    EXPECT_EQ(follower.read_new_events(count, 0, UINT64_MAX, false), 0u);

    f.seekp(static_cast<std::streamoff>(at));
    f.write(header, 2);
    f.flush();
    EXPECT_EQ(follower.read_new_events(count, 0, UINT64_MAX, false), 1u);
    EXPECT_EQ(count.events, 2u);
  }
}

// An event whose predecessor is not written yet waits (another thread may be storing it) until
// the wait is over or the process has ended.
TEST_F(Top, EventsAfterAMissingSequenceNumberWait) {
  Scenario s(4243);
  s.alloc(7, format::ApiId::cudaMalloc, 0x7f0000000000, kMiB, 0);
  s.skip_events(1);  // seq 2 never written
  s.alloc(7, format::ApiId::cudaMalloc, 0x7f0000100000, kMiB, 0);
  const fs::path dir = s.write(run_, false);
  analysis::ProcessFollower follower(dir);
  ASSERT_TRUE(follower.refresh());
  CountEvents count;
  EXPECT_EQ(follower.read_new_events(count, 1000, 500, false), 1u);
  EXPECT_TRUE(follower.waiting_at_gap());
  EXPECT_EQ(follower.read_new_events(count, 1400, 500, false), 0u) << "still within the wait";
  EXPECT_EQ(follower.read_new_events(count, 1500, 500, false), 1u) << "waited long enough";
  EXPECT_FALSE(follower.waiting_at_gap());

  analysis::ProcessFollower ended(dir);
  ASSERT_TRUE(ended.refresh());
  CountEvents all;
  EXPECT_EQ(ended.read_new_events(all, 0, UINT64_MAX, true), 2u) << "the writer is done";
}

}  // namespace
}  // namespace gmemhook::test_logs

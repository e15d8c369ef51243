// The recorder end to end on the simulated device: every entry point through every path,
// nesting, failures, threads, fork, crashes, and a traced program that stays untouched.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "harness.h"

namespace gmemhook::test {
namespace {

namespace fs = std::filesystem;
using format::EventKind;

struct Call {
  std::string api;
  uint64_t value;
  uint32_t result;
};

// The device the scenario put its VMM allocation on (1 when the machine has two devices).
int g_vmm_device = 1;

std::vector<Call> parse_calls(const std::string& out) {
  std::vector<Call> calls;
  std::istringstream in(out);
  std::string api, value;
  int64_t result;
  while (in >> api >> value >> result) {
    if (api == "vmm_device") {
      g_vmm_device = static_cast<int>(std::stoull(value, nullptr, 16));
      continue;
    }
    calls.push_back({api, std::stoull(value, nullptr, 16), static_cast<uint32_t>(result)});
  }
  return calls;
}

LoggedProcess only_process(const fs::path& run) {
  auto dirs = process_dirs(run);
  EXPECT_EQ(dirs.size(), 1u);
  return read_process(dirs.at(0));
}

// What the scenario printed for a call: the handle of handle calls, else the address.
uint64_t value_of(const LoggedEvent& e) {
  const bool by_handle = e.kind == EventKind::Create || e.kind == EventKind::Release ||
                         e.kind == EventKind::Retain || e.kind == EventKind::Export ||
                         (e.kind == EventKind::Import && !e.ev.f.has(format::kHasAddress));
  return by_handle ? e.ev.f.handle : e.ev.f.address;
}

class EntryPoints : public ::testing::TestWithParam<std::string> {};

// The log holds exactly the calls the program made, in order, each once, under the API the
// program called — runtime calls that nest into the driver included.
TEST_P(EntryPoints, EveryCallRecordedOnceWithItsApiAddressAndResult) {
  fs::path out = temp_dir("entry");
  RunResult r = run({scenario_path(), "entry-points", GetParam()}, traced_env(out));
  ASSERT_TRUE(r.exited(0)) << r.err;
  std::vector<Call> calls = parse_calls(r.out);
  ASSERT_GT(calls.size(), 10u);
  LoggedProcess p = only_process(out);
  ASSERT_EQ(p.events.size(), calls.size()) << "events recorded vs calls made";
  for (size_t i = 0; i < calls.size(); ++i) {
    SCOPED_TRACE("call " + std::to_string(i) + ": " + calls[i].api);
    const LoggedEvent& e = p.events[i];
    EXPECT_EQ(e.api, calls[i].api);
    EXPECT_EQ(e.ev.result, calls[i].result);
    if (calls[i].result == 0) {
      EXPECT_EQ(value_of(e), calls[i].value);
    }
    bool allocates = e.kind == EventKind::Alloc || e.kind == EventKind::Create ||
                     e.kind == EventKind::Reserve || e.kind == EventKind::Map;
    if (allocates) {
      ASSERT_FALSE(e.stack.empty());
      // Frame 0 is the caller in the program, not the recorder (its frames are stripped).
      const analysis::Module* m = module_of(p, e.stack[0]);
      ASSERT_NE(m, nullptr);
      EXPECT_TRUE(m->path.ends_with("gmemhook_scenario")) << m->path;
    }
    if (e.kind == EventKind::Alloc && calls[i].result != 0) {
      EXPECT_EQ(e.ev.f.size, uint64_t{1} << 50) << "a failed allocation keeps its size";
    }
    if (e.kind == EventKind::Alloc && calls[i].result == 0) {
      EXPECT_GT(e.ev.f.size, 0u);
      EXPECT_EQ(e.ev.f.device, 0);
    }
    if (e.kind == EventKind::Create) {
      EXPECT_EQ(e.ev.f.device, g_vmm_device) << "device from the VMM location";
    }
  }
}

// The exit summary's counts are those of the events in the log, by the recorder's rules: a
// failed call that would have made memory is a failed allocation (a failed release or graph
// bookkeeping call is not), allocations are Alloc, Create and graph allocation nodes, frees are
// Free and Release. The usual allocation and free have bodies of their own in the recorder
// (record_allocation, record_free), each with the counting folded for its kind: a wrong fold
// fails here.
TEST_P(EntryPoints, ExitSummaryCountsWhatTheLogHolds) {
  fs::path out = temp_dir("entry-counts");
  RunResult r = run({scenario_path(), "entry-points", GetParam()}, traced_env(out));
  ASSERT_TRUE(r.exited(0)) << r.err;
  using K = EventKind;
  const std::set<K> releases{K::Free,  K::Release,   K::AddressFree,
                             K::Unmap, K::BlockFree, K::ImportClose};
  const std::set<K> graph{K::CaptureBegin,     K::CaptureEnd,    K::GraphLaunch,
                          K::GraphUpload,      K::GraphFreeNode, K::GraphInstantiate,
                          K::GraphExecDestroy, K::GraphDestroy,  K::GraphChild,
                          K::GraphClone,       K::GraphMemTrim,  K::Export};
  uint64_t allocations = 0, frees = 0, failed = 0;
  for (const auto& e : only_process(out).events) {
    const K kind = format::event_kind_of(e.kind, e.ev.f.mask);  // e.kind is its api's
    if (e.ev.result != 0 && !releases.count(kind) && !graph.count(kind))
      ++failed;
    else if (kind == K::Alloc || kind == K::Create || kind == K::GraphAllocNode)
      ++allocations;
    else if (kind == K::Free || kind == K::Release)
      ++frees;
  }
  EXPECT_GT(failed, 0u) << "the scenario makes a failed allocation";
  std::string want = "gmemhook: " + std::to_string(allocations) + " allocations, " +
                     std::to_string(frees) + " frees, " + std::to_string(failed) +
                     " failed allocations recorded in ";
  EXPECT_TRUE(r.err.starts_with(want)) << r.err << "\nwanted: " << want;
}

INSTANTIATE_TEST_SUITE_P(AllPaths, EntryPoints,
                         ::testing::Values("runtime-symbol", "runtime-dlsym", "driver-symbol",
                                           "driver-dlsym", "driver-procaddress",
                                           "driver-entrypoint", "driver-entrypoint-version"));

// gmemhook_pause_events (include/gmemhook/control.h): while paused no call of any thread is
// recorded, and the calls after it are; each call returns the state before it.
TEST(PauseEvents, NothingIsRecordedWhilePaused) {
  fs::path out = temp_dir("pause-events");
  RunResult r = run({scenario_path(), "pause-events"}, traced_env(out));
  ASSERT_TRUE(r.exited(0)) << r.err;
  EXPECT_NE(r.out.find("pause 1 -> 0\npause 1 -> 1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pause 0 -> 1\n"), std::string::npos) << r.out;
  std::map<std::string, uint64_t> printed;
  std::istringstream lines(r.out);
  for (std::string name, value; lines >> name >> value;)
    if (value.starts_with("0x")) printed[name] = std::stoull(value, nullptr, 16);
  ASSERT_EQ(printed.size(), 3u) << r.out;
  std::vector<std::pair<std::string, uint64_t>> logged;
  for (const auto& e : only_process(out).events) logged.emplace_back(e.api, e.ev.f.address);
  const std::vector<std::pair<std::string, uint64_t>> want{{"cudaMalloc", printed["a"]},
                                                           {"cudaFree", printed["b"]},
                                                           {"cudaMalloc", printed["c"]},
                                                           {"cudaFree", printed["c"]}};
  EXPECT_EQ(logged, want);
}

// By default every event's time is the kernel's coarse clock, so a run has no more distinct
// times than the clock ticked while it ran (precise times: one per event, ~4000 here), and none
// lies before the process's start or after its end.
TEST(TimeSetting, CoarseByDefault) {
  timespec res{};
  ASSERT_EQ(clock_getres(CLOCK_MONOTONIC_COARSE, &res), 0);
  const uint64_t tick = static_cast<uint64_t>(res.tv_sec) * 1000000000ull + res.tv_nsec;
  fs::path out = temp_dir("coarse-time");
  RunResult r = run({scenario_path(), "threads", "4", "500"}, traced_env(out));
  ASSERT_TRUE(r.exited(0)) << r.err;
  LoggedProcess p = only_process(out);
  ASSERT_TRUE(p.end);
  ASSERT_GE(p.events.size(), 4000u);
  const uint64_t end_ns = p.start_ns + p.end->time_delta_ns;
  std::set<uint64_t> times;
  for (const auto& e : p.events) {
    EXPECT_GE(e.ev.time_ns, p.start_ns);
    EXPECT_LE(e.ev.time_ns, end_ns);
    times.insert(e.ev.time_ns);
  }
  // The log keeps times in 32 ns units: a tick's value may round into one of two.
  EXPECT_LE(times.size(), 2 * ((end_ns - p.start_ns) / tick + 2)) << "tick " << tick << " ns";
  // The header says so, and reports show times no finer than it.
  EXPECT_EQ(p.time_step_ns, tick);
}

// The distinct times of one thread's 600 events: each event's own with GMEMHOOK_TIME=precise.
// `step_ns`: the time step the process file's header gives.
size_t distinct_times(const char* setting, std::string* err, uint64_t* step_ns = nullptr) {
  auto env = traced_env(temp_dir("time-setting"));
  env["GMEMHOOK_TIME"] = setting;
  RunResult r = run({scenario_path(), "threads", "1", "300"}, env);
  EXPECT_TRUE(r.exited(0)) << r.err;
  *err = r.err;
  std::set<uint64_t> times;
  const LoggedProcess p = only_process(env["GMEMHOOK_OUT"]);
  for (const auto& e : p.events) times.insert(e.ev.time_ns);
  if (step_ns) *step_ns = p.time_step_ns;
  return times.size();
}

TEST(TimeSetting, PreciseTimesAreEachEventsOwn) {
  std::string err;
  uint64_t step_ns = 0;
  EXPECT_GT(distinct_times("precise", &err, &step_ns), 100u);
  EXPECT_EQ(step_ns, 1u);  // each event its own time
  EXPECT_EQ(err.find("GMEMHOOK_TIME"), std::string::npos) << err;
}

TEST(TimeSetting, UnknownValueIsWarnedAboutAndCoarseUsed) {
  std::string err;
  EXPECT_LT(distinct_times("sometimes", &err), 50u);
  EXPECT_NE(err.find("GMEMHOOK_TIME=sometimes: expected coarse or precise; using coarse"),
            std::string::npos)
      << err;
}

// Without the hook the program finds no such function (and runs the same).
TEST(PauseEvents, AbsentWithoutTheHook) {
  auto env = traced_env(temp_dir("pause-events-plain"));
  env["LD_PRELOAD"] = "";
  RunResult r = run({scenario_path(), "pause-events"}, env);
  ASSERT_TRUE(r.exited(0)) << r.err;
  EXPECT_EQ(r.out, "no gmemhook_pause_events\n");
}

// Every CUDA entry point of the table is reached by the scenarios above: a table entry nobody
// exercises fails here. (Allocator-layer entries: blocks_test.cpp.)
TEST(EntryPointCoverage, EveryTableEntryIsExercised) {
  std::set<std::string> seen;
  for (const char* path : {"runtime-symbol", "driver-symbol"}) {
    fs::path out = temp_dir("coverage");
    RunResult r = run({scenario_path(), "entry-points", path}, traced_env(out));
    ASSERT_TRUE(r.exited(0)) << r.err;
    for (const auto& e : only_process(out).events) seen.insert(e.api);
  }
  for (const auto& api : format::kApis) {
    if (api.layer == format::Layer::Allocator) continue;
    EXPECT_TRUE(seen.count(api.name)) << api.name;
  }
}

TEST(Threads, SixteenThreadsFiftyThousandPairsExactCounts) {
  fs::path out = temp_dir("threads");
  RunResult r = run({scenario_path(), "threads", "16", "50000"}, traced_env(out));
  ASSERT_TRUE(r.exited(0)) << r.err << r.out;
  LoggedProcess p = only_process(out);
  std::unordered_map<uint64_t, std::pair<int, int>> per_thread;
  std::unordered_map<uint64_t, uint64_t> live;
  uint64_t allocs = 0, frees = 0, bad_frees = 0;
  for (const auto& e : p.events) {
    if (e.kind == EventKind::Alloc) {
      ++allocs;
      ++per_thread[e.tid].first;
      EXPECT_TRUE(live.emplace(e.ev.f.address, e.ev.seq).second) << "address live twice";
    } else if (e.kind == EventKind::Free) {
      ++frees;
      ++per_thread[e.tid].second;
      bad_frees += live.erase(e.ev.f.address) != 1;
    }
  }
  EXPECT_EQ(allocs, 800000u);
  EXPECT_EQ(frees, 800000u);
  EXPECT_EQ(bad_frees, 0u) << "every free matches an earlier allocation in sequence order";
  EXPECT_TRUE(live.empty());
  ASSERT_EQ(per_thread.size(), 16u);
  for (auto& [tid, c] : per_thread) {
    EXPECT_EQ(c.first, 50000) << tid;
    EXPECT_EQ(c.second, 50000) << tid;
  }
  double per_event = static_cast<double>(p.committed_bytes) / static_cast<double>(p.events.size());
  std::printf("log size: %.2f bytes per event\n", per_event);
  EXPECT_LE(per_event, 24.0) << "log compactness target";
}

TEST(Fork, ChildForkedWhileThreadsAllocateHasItsOwnLog) {
  fs::path out = temp_dir("fork");
  RunResult r = run({scenario_path(), "fork", "10"}, traced_env(out));
  ASSERT_TRUE(r.exited(0)) << r.err << r.out;
  std::map<std::string, std::vector<uint64_t>> child_ptrs;  // pid → pointers it printed
  std::istringstream in(r.out);
  std::string word, pid, ptr;
  while (in >> word) {
    if (word == "child" && in >> pid >> ptr)
      child_ptrs[pid].push_back(std::stoull(ptr, nullptr, 16));
  }
  ASSERT_EQ(child_ptrs.size(), 5u);
  auto dirs = process_dirs(out);
  ASSERT_EQ(dirs.size(), 6u) << "parent + 5 children";
  int children_seen = 0;
  for (const auto& d : dirs) {
    LoggedProcess p = read_process(d);
    auto it = child_ptrs.find(std::to_string(p.info.pid));
    if (it == child_ptrs.end()) {
      EXPECT_GT(p.events.size(), 0u) << "parent's threads recorded";
      continue;
    }
    ++children_seen;
    std::vector<uint64_t> allocs;
    for (const auto& e : p.events)
      if (e.kind == EventKind::Alloc) allocs.push_back(e.ev.f.address);
    EXPECT_EQ(allocs, it->second) << "child log holds exactly the child's allocations";
    ASSERT_TRUE(p.end.has_value());
    EXPECT_EQ(p.end->status, 0);
  }
  EXPECT_EQ(children_seen, 5);
}

struct DeathCase {
  std::string how;
  int signal;  // 0: exits
};

class Death : public ::testing::TestWithParam<DeathCase> {};

// Once cudaMalloc has returned, its record is in the log — whatever kills the process next.
TEST_P(Death, EveryReturnedAllocationSurvives) {
  const DeathCase& c = GetParam();
  fs::path out = temp_dir("death");
  auto env = traced_env(out);
  env["GMEMHOOK_QUIET"] = "1";
  TracedProcess proc({scenario_path(), "die", c.how, "500"}, env);
  std::vector<uint64_t> printed;
  while (auto line = proc.read_line()) {
    printed.push_back(std::stoull(*line, nullptr, 16));
    if (c.how == "kill" && printed.size() == 3000) {
      proc.kill(SIGKILL);
      break;
    }
  }
  int st = proc.wait();
  if (c.signal) {
    ASSERT_TRUE(WIFSIGNALED(st)) << st;
    EXPECT_EQ(WTERMSIG(st), c.signal);
  } else {
    ASSERT_TRUE(WIFEXITED(st));
  }
  LoggedProcess p = only_process(out);
  std::vector<uint64_t> logged;
  for (const auto& e : p.events)
    if (e.kind == EventKind::Alloc) logged.push_back(e.ev.f.address);
  ASSERT_GE(logged.size(), printed.size());
  logged.resize(printed.size());
  EXPECT_EQ(logged, printed);
  EXPECT_EQ(p.end.has_value(), c.signal == 0) << "only a process that exited has an end record";
  if (c.how == "_exit") {
    EXPECT_EQ(p.end->status, 5);
  }
}

INSTANTIATE_TEST_SUITE_P(Ways, Death,
                         ::testing::Values(DeathCase{"kill", SIGKILL}, DeathCase{"abort", SIGABRT},
                                           DeathCase{"segv", SIGSEGV}, DeathCase{"_exit", 0}),
                         [](const auto& info) {
                           return info.param.how == "_exit" ? std::string("underscore_exit")
                                                            : info.param.how;
                         });

TEST(Untouched, UnwritableOutputLeavesOutputAndExitCodeAlone) {
  RunResult plain =
      run({scenario_path(), "plain", "7"}, {{"LD_LIBRARY_PATH", GMEMHOOK_TEST_FAKECUDA_DIR}});
  auto env = traced_env("/etc/passwd/cannot-be-a-directory");
  RunResult traced = run({scenario_path(), "plain", "7"}, env);
  ASSERT_TRUE(plain.exited(7));
  EXPECT_TRUE(traced.exited(7));
  EXPECT_EQ(traced.out, plain.out);
  EXPECT_EQ(plain.err, "");
  // Exactly one warning line, and it says what failed.
  EXPECT_EQ(std::count(traced.err.begin(), traced.err.end(), '\n'), 1) << traced.err;
  EXPECT_TRUE(traced.err.starts_with("gmemhook: cannot create")) << traced.err;
}

TEST(Untouched, ExitStatusRecordedAndSummaryLinePrinted) {
  fs::path out = temp_dir("exit");
  RunResult r = run({scenario_path(), "plain", "3"}, traced_env(out));
  ASSERT_TRUE(r.exited(3));
  EXPECT_EQ(r.out, "hello from scenario\n");
  LoggedProcess p = only_process(out);
  ASSERT_TRUE(p.end.has_value());
  EXPECT_EQ(p.end->status, 3);
  EXPECT_TRUE(p.end->cuda_used);
  EXPECT_TRUE(r.err.starts_with("gmemhook: 1 allocations, 0 frees recorded in ")) << r.err;
  EXPECT_NE(r.err.find("(run: gmemhook summary "), std::string::npos);
  // Private by default: the log may hold paths and arguments.
  struct stat st {};
  ASSERT_EQ(stat(p.dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(stat((p.dir / "process.gmh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

// The fast unwinder (and its shadow stack) records exactly the stacks libunwind does.
// The training scenario makes 66 captures on one thread: the first 32 step through libunwind
// either way, the rest are the fast walk's, so both halves are compared.
TEST(Stacks, FastUnwinderRecordsWhatLibunwindRecords) {
  auto stacks_with = [](const std::string& fast, const std::string& recent = "1") {
    fs::path out = temp_dir("fast-unwind-" + fast + "-" + recent);
    auto env = traced_env(out);
    env["GMEMHOOK_FAST_UNWIND"] = fast;
    env["GMEMHOOK_RECENT_WALKS"] = recent;
    RunResult r = run({scenario_path(), "training", "1"}, env);
    EXPECT_TRUE(r.exited(0)) << r.err;
    LoggedProcess p = only_process(out);
    // Module and offset: the two runs load their objects at different addresses.
    std::vector<std::vector<std::string>> stacks;
    for (const LoggedEvent& e : p.events) {
      std::vector<std::string> frames;
      for (uint64_t a : e.stack) {
        const analysis::Module* m = module_of(p, a);
        frames.push_back(m ? m->path + "+" + std::to_string(a - m->load_bias) : "?");
      }
      stacks.push_back(frames);
    }
    return stacks;
  };
  auto libunwind = stacks_with("0");
  auto fast = stacks_with("1");
  auto frame_by_frame = stacks_with("1", "0");  // GMEMHOOK_RECENT_WALKS=0
  ASSERT_GT(libunwind.size(), 60u);
  ASSERT_EQ(fast.size(), libunwind.size());
  ASSERT_EQ(frame_by_frame.size(), libunwind.size());
  size_t with_stack = 0;
  for (size_t i = 0; i < fast.size(); ++i) {
    EXPECT_EQ(fast[i], libunwind[i]) << "event " << i;
    EXPECT_EQ(frame_by_frame[i], libunwind[i]) << "event " << i << ", no recent walks";
    with_stack += !fast[i].empty();
  }
  EXPECT_GT(with_stack, 60u);
}

// A free has no stack unless GMEMHOOK_FREE_STACKS=1 asks for one; then it has the stack of the
// call (the training scenario frees its activations in run_step and its weights in training).
// Frees are recorded apart from allocations (record_release), which hands them to the recorder
// of stacks only when asked: without that, this fails.
TEST(Stacks, FreesHaveStacksOnlyWhenAsked) {
  auto events_with = [](const std::string& free_stacks) {
    fs::path out = temp_dir("free-stacks-" + free_stacks);
    auto env = traced_env(out);
    env["GMEMHOOK_FREE_STACKS"] = free_stacks;
    RunResult r = run({scenario_path(), "training", "1"}, env);
    EXPECT_TRUE(r.exited(0)) << r.err;
    return only_process(out);
  };
  for (const std::string& free_stacks : {std::string("0"), std::string("1")}) {
    LoggedProcess p = events_with(free_stacks);
    size_t frees = 0, frees_with_stack = 0, allocations_without_stack = 0;
    for (const LoggedEvent& e : p.events) {
      if (e.kind == format::EventKind::Free) {
        ++frees;
        frees_with_stack += !e.stack.empty();
      } else if (e.kind == format::EventKind::Alloc && e.ev.result == 0) {
        allocations_without_stack += e.stack.empty();
      }
    }
    ASSERT_GE(frees, 60u) << free_stacks;
    EXPECT_EQ(allocations_without_stack, 0u) << free_stacks;
    EXPECT_EQ(frees_with_stack, free_stacks == "1" ? frees : 0u) << free_stacks;
  }
}

// A recent walk carries the stack id interned for it, and an event whose walk is found
// again takes that id without looking at its frames. Twelve call sites at the same depth, one
// every other time and the rest in turn between (more walks competing for the same places than
// the recent walks keep: they replace each other), on three threads one after another (each takes
// over the last one's log, whose stack table starts again): every event of a site has that site's
// stack, no two sites share one, and every stack is the one libunwind records. 200 allocations a
// thread: past the 32 that step through libunwind.
TEST(Stacks, KeptStackIdsStayWithTheirWalks) {
  auto stacks_with = [](const std::string& fast) {
    fs::path out = temp_dir("sites-" + fast);
    auto env = traced_env(out);
    env["GMEMHOOK_FAST_UNWIND"] = fast;
    RunResult r = run({scenario_path(), "sites", "3", "200"}, env);
    EXPECT_TRUE(r.exited(0)) << r.err;
    LoggedProcess p = only_process(out);
    EXPECT_EQ(p.thread_files, 3u);
    std::vector<std::pair<uint64_t, std::vector<std::string>>> stacks;  // size, frames
    for (const LoggedEvent& e : p.events) {
      if (e.kind != format::EventKind::Alloc) continue;
      std::vector<std::string> frames;
      for (uint64_t a : e.stack) {
        const analysis::Module* m = module_of(p, a);
        frames.push_back(m ? m->path + "+" + std::to_string(a - m->load_bias) : "?");
      }
      stacks.emplace_back(e.ev.f.size, frames);
    }
    return stacks;
  };
  const auto fast = stacks_with("1");
  const auto libunwind = stacks_with("0");
  ASSERT_EQ(fast.size(), 600u);
  ASSERT_EQ(libunwind.size(), fast.size());
  std::map<uint64_t, std::vector<std::string>> by_site;
  for (size_t i = 0; i < fast.size(); ++i) {
    const auto& [size, frames] = fast[i];
    ASSERT_FALSE(frames.empty()) << "event " << i;
    EXPECT_EQ(frames, libunwind[i].second) << "event " << i;
    auto [site, first] = by_site.emplace(size, frames);
    if (!first) {
      EXPECT_EQ(frames, site->second) << "event " << i << " (" << size << " bytes)";
    }
  }
  ASSERT_EQ(by_site.size(), 12u);
  std::set<std::vector<std::string>> distinct;
  for (const auto& [size, frames] : by_site) distinct.insert(frames);
  EXPECT_EQ(distinct.size(), 12u);
}

// GMEMHOOK_STACK_STATS=1: one line at exit, even when quiet, counting every stack the
// process captured (here its one allocation's) and every event it timed; nothing without it.
TEST(Untouched, StackStatsLineCountsEveryCapture) {
  auto run_with_stats = [](const std::string& value) {
    auto env = traced_env(temp_dir("stack-stats-" + (value.empty() ? "unset" : value)));
    env["GMEMHOOK_QUIET"] = "1";
    env["GMEMHOOK_STACK_STATS"] = value;  // empty: unset
    return run({scenario_path(), "plain", "0"}, env);
  };
  const RunResult on = run_with_stats("1");
  ASSERT_TRUE(on.exited(0)) << on.err;
  EXPECT_TRUE(on.err.starts_with("gmemhook: stack stats: 1 captures; native ")) << on.err;
  EXPECT_NE(on.err.find(" frames each on average ("), std::string::npos) << on.err;
  // The one stack is new: its id came from the table.
  EXPECT_NE(on.err.find("; stack ids from notes 0, memo 0, table 1 (new 1)"), std::string::npos)
      << on.err;
  EXPECT_NE(on.err.find("; events recorded "), std::string::npos) << on.err;
  EXPECT_EQ(std::count(on.err.begin(), on.err.end(), '\n'), 1) << on.err;
  const RunResult off = run_with_stats("");
  ASSERT_TRUE(off.exited(0)) << off.err;
  EXPECT_EQ(off.err, "");
  // "events": the events' time only, no capture figures (none timed, none counted).
  const RunResult events = run_with_stats("events");
  ASSERT_TRUE(events.exited(0)) << events.err;
  // The one allocation opened the logs: over 100 us, or else the usual kind.
  EXPECT_TRUE(events.err.starts_with("gmemhook: stack stats: 0 captures; events recorded 1, ") ||
              events.err.starts_with("gmemhook: stack stats: 0 captures; events recorded 0, "))
      << events.err;
  EXPECT_NE(events.err.find(" more over 100 us ("), std::string::npos) << events.err;
  EXPECT_NE(events.err.find(" ns each in the recorder ("), std::string::npos) << events.err;
  EXPECT_EQ(std::count(events.err.begin(), events.err.end(), '\n'), 1) << events.err;
}

TEST(Untouched, DisabledIsAPassThrough) {
  fs::path out = temp_dir("disabled");
  auto env = traced_env(out);
  env["GMEMHOOK_DISABLE"] = "1";
  RunResult r = run({scenario_path(), "entry-points", "runtime-symbol"}, env);
  EXPECT_TRUE(r.exited(0)) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(fs::is_empty(out)) << "nothing written when disabled";
}

// A process that never calls CUDA leaves no directory and prints nothing.
TEST(Untouched, ProgramWithoutCudaLeavesNoTrace) {
  fs::path out = temp_dir("nocuda");
  RunResult r = run({"/bin/sh", "-c", "echo hi; /bin/true; exit 4"}, traced_env(out));
  EXPECT_TRUE(r.exited(4));
  EXPECT_EQ(r.out, "hi\n");
  EXPECT_EQ(r.err, "") << "nothing on stderr when CUDA was never used";
  EXPECT_TRUE(fs::is_empty(out)) << "no directory for a process that never used CUDA";
}

// An image replaced by exec ends its log with how = Exec; a shell that only execs the CUDA
// program leaves nothing, and the program's own directory is the only one.
TEST(Untouched, ExecIsRecordedAsSuchAndShellsLeaveNothing) {
  fs::path out = temp_dir("exec");
  RunResult r = run({"/bin/sh", "-c", "/bin/true; exec \"$0\" exec-after-cuda", scenario_path()},
                    traced_env(out));
  ASSERT_TRUE(r.exited(0)) << r.err;
  EXPECT_EQ(r.out, "replaced\n");
  LoggedProcess p = only_process(out);
  ASSERT_TRUE(p.end.has_value());
  EXPECT_EQ(p.end->how, format::EndHow::Exec);
  EXPECT_TRUE(p.end->cuda_used);
  EXPECT_EQ(p.events.size(), 1u);
}

TEST(SelfContained, OnlyGlibcDependenciesAndOnlyHookedSymbolsExported) {
  FILE* f = popen(("readelf -dW " + hook_path()).c_str(), "r");
  ASSERT_NE(f, nullptr);
  char line[1024];
  int needed = 0;
  while (fgets(line, sizeof(line), f)) {
    std::string l = line;
    if (l.find("(NEEDED)") == std::string::npos) continue;
    ++needed;
    bool glibc =
        l.find("[libc.so") != std::string::npos || l.find("[libdl.so") != std::string::npos ||
        l.find("[libpthread.so") != std::string::npos || l.find("[libm.so") != std::string::npos ||
        l.find("[ld-linux") != std::string::npos;
    EXPECT_TRUE(glibc) << l;
  }
  pclose(f);
  EXPECT_GT(needed, 0);
  f = popen(("nm -D --defined-only " + hook_path()).c_str(), "r");
  ASSERT_NE(f, nullptr);
  int exported = 0;
  while (fgets(line, sizeof(line), f)) {
    std::string name = line;
    name = name.substr(name.rfind(' ') + 1);
    name.pop_back();
    ++exported;
    bool ours = name.starts_with("cu") || name == "dlsym" || name == "dlclose" || name == "_exit" ||
                name == "_Exit" || name.starts_with("exec") || name == "fexecve" ||
                name == "gmemhook_pause_events" ||
                std::any_of(std::begin(format::kApis), std::end(format::kApis),
                            [&](const format::ApiInfo& a) { return name == a.name; });
    EXPECT_TRUE(ours) << "unexpected export " << name;
  }
  pclose(f);
  EXPECT_GE(exported, static_cast<int>(std::size(format::kApis)));
}

// Graph launches, uploads and trims carry the driver's graph-pool figures: the pool
// reserves physical memory inside cuGraphLaunch and cuGraphUpload, where no hook sees a call of
// its own. The simulated pool keeps 32 MiB chunks and, like the H200's driver, counts each live
// allocation in whole chunks as used. scenario_memory_kinds.cpp launches a 1 MiB node twice
// (auto-free relaunch), then a graph that allocates and frees 2 MiB, then a captured 4 KiB
// allocation (twice through the driver), frees everything and trims. The runtime path first
// launches two graphs without memory nodes (scenario.cpp).
TEST(GraphPool, LaunchesUploadsAndTrimsCarryUsedAndReservedBytes) {
  constexpr uint64_t kChunk = 32 << 20;
  constexpr uint64_t kUploadFlag = 2;  // CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD
  using Figures = std::vector<std::pair<uint64_t, uint64_t>>;
  // scenario_graph_nodes.cpp: a moved child's 1 MiB node, (runtime only: a 2 MiB node freed in
  // its graph), two captures into existing graphs, each 4 KiB freed after its launch, a trim.
  const Figures runtime = {{0, 0},      {0, 0},           {kChunk, kChunk}, {kChunk, kChunk},
                           {0, kChunk}, {kChunk, kChunk}, {0, 0},           {kChunk, kChunk},
                           {0, kChunk}, {kChunk, kChunk}, {kChunk, kChunk}, {0, 0}};
  const Figures driver = {
      {kChunk, kChunk}, {kChunk, kChunk}, {0, kChunk},      {kChunk, kChunk}, {kChunk, kChunk},
      {0, 0},           {kChunk, kChunk}, {kChunk, kChunk}, {kChunk, kChunk}, {0, 0}};
  // scenario_graph_upload.cpp: an 8 MiB node uploaded (allocated there: a chunk used), launched
  // (on that memory: the same figures), freed and trimmed, uploaded again (used again; the exec's
  // destruction frees it, leaving the chunk reserved); a 40 MiB node instantiated with the upload
  // flag (two chunks used), freed with its exec; a trim.
  const Figures uploads = {{kChunk, kChunk}, {kChunk, kChunk},         {0, 0},
                           {kChunk, kChunk}, {2 * kChunk, 2 * kChunk}, {0, 0}};
  for (auto [path, expected] :
       {std::pair{"runtime-symbol", runtime}, std::pair{"driver-symbol", driver}}) {
    SCOPED_TRACE(path);
    expected.insert(expected.end(), uploads.begin(), uploads.end());
    fs::path out = temp_dir("graph-pool");
    RunResult r = run({scenario_path(), "entry-points", path}, traced_env(out));
    ASSERT_TRUE(r.exited(0)) << r.err;
    Figures seen;
    for (const auto& e : only_process(out).events) {
      const bool pool_call = e.kind == EventKind::GraphLaunch || e.kind == EventKind::GraphUpload ||
                             e.kind == EventKind::GraphMemTrim;
      if (e.ev.result != 0) continue;
      if (e.kind == EventKind::GraphInstantiate) {
        // Only an instantiation that uploads asks the pool.
        const bool uploads_too = e.ev.f.flags & kUploadFlag;
        EXPECT_EQ(e.ev.f.has(format::kHasTotals), uploads_too) << e.api;
        if (!uploads_too) continue;
      } else if (!pool_call) {
        continue;
      }
      ASSERT_TRUE(e.ev.f.has(format::kHasTotals)) << e.api;
      EXPECT_EQ(e.ev.f.device, 0) << e.api;
      seen.emplace_back(e.ev.f.allocated, e.ev.f.reserved);
    }
    EXPECT_EQ(seen, expected);
  }
}

}  // namespace
}  // namespace gmemhook::test

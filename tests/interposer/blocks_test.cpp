// PyTorch's caching-allocator blocks, recorded through c10::reportMemoryUsageToProfiler
// on the simulated device with the fake libc10.so / libc10_cuda.so: every CUDA block with its
// totals, segments still as cudaMalloc, every call forwarded unchanged, CPU calls left alone.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <sstream>

#include "analyzer/log/event_info.h"
#include "harness.h"

namespace gmemhook::test {
namespace {

namespace fs = std::filesystem;
using format::EventKind;

// What the fake allocator sent or libc10.so received (blocks_scenario.cpp prints both).
struct Report {
  char what;  // 'b' block report, 'm' segment cudaMalloc'd, 'f' segment cudaFree'd
  uint64_t ptr;
  int64_t size;
  uint64_t allocated, reserved;
  int type, index;
  bool operator==(const Report&) const = default;
};

struct BlocksRun {
  std::vector<Report> sent, received;
  std::string err;
};

std::vector<std::string> blocks_command(const std::string& mode) {
  return {GMEMHOOK_TEST_BLOCKS_SCENARIO, mode};
}

BlocksRun parse(const std::string& out) {
  BlocksRun run;
  std::istringstream in(out);
  std::string tag, ptr;
  Report r;
  while (in >> tag) {
    if (tag != "sent" && tag != "received") {
      std::getline(in, tag);
      continue;
    }
    in >> r.what >> ptr >> r.size >> r.allocated >> r.reserved >> r.type >> r.index;
    r.ptr = std::stoull(ptr, nullptr, 16);
    (tag == "sent" ? run.sent : run.received).push_back(r);
  }
  return run;
}

const std::string& report_api() {
  static const std::string name =
      format::find_api(static_cast<uint8_t>(
                           format::ApiId::_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE))
          ->name;
  return name;
}

std::vector<const LoggedEvent*> block_events(const LoggedProcess& p) {
  std::vector<const LoggedEvent*> blocks;
  for (const auto& e : p.events)
    if (e.api == report_api()) blocks.push_back(&e);
  return blocks;
}

class TorchBlocks : public ::testing::Test {
 protected:
  void SetUp() override {
    if (on_real_gpu()) GTEST_SKIP() << "the fake libc10 runs on the simulated device only";
  }
};

// One run of the blocks scenario, shared by the tests that only read it.
struct SharedRun {
  BlocksRun run;
  LoggedProcess log;
  RunResult result;
};
const SharedRun& blocks_run() {
  static const SharedRun shared = [] {
    SharedRun s;
    fs::path out = temp_dir("blocks");
    s.result = run(blocks_command("blocks"), traced_env(out));
    s.run = parse(s.result.out);
    auto dirs = process_dirs(out);
    if (dirs.size() == 1) s.log = read_process(dirs[0]);
    return s;
  }();
  return shared;
}

TEST_F(TorchBlocks, EveryCudaBlockRecordedWithItsSizeTotalsDeviceAndStack) {
  const SharedRun& s = blocks_run();
  ASSERT_TRUE(s.result.exited(0)) << s.result.err;
  std::vector<Report> sent;
  for (const Report& r : s.run.sent)
    if (r.what == 'b') sent.push_back(r);
  ASSERT_GT(sent.size(), 400u);
  auto blocks = block_events(s.log);
  ASSERT_EQ(blocks.size(), sent.size()) << "block events recorded vs blocks reported";
  size_t allocs = 0;
  for (size_t i = 0; i < sent.size(); ++i) {
    SCOPED_TRACE("block report " + std::to_string(i));
    const format::Event& ev = blocks[i]->ev;
    const bool alloc = sent[i].size > 0;
    allocs += alloc;
    EXPECT_EQ(analysis::event_kind(ev), alloc ? EventKind::BlockAlloc : EventKind::BlockFree);
    EXPECT_EQ(ev.f.address, sent[i].ptr);
    EXPECT_EQ(ev.f.size, static_cast<uint64_t>(alloc ? sent[i].size : -sent[i].size));
    EXPECT_EQ(ev.f.device, sent[i].index);
    ASSERT_TRUE(ev.f.has(format::kHasTotals));
    EXPECT_EQ(ev.f.allocated, sent[i].allocated);
    EXPECT_EQ(ev.f.reserved, sent[i].reserved);
    EXPECT_EQ(ev.result, 0u);
    if (alloc) {
      // Frame 0 is the caching allocator that called the report, as for any allocation.
      ASSERT_FALSE(blocks[i]->stack.empty());
      const analysis::Module* m = module_of(s.log, blocks[i]->stack[0]);
      ASSERT_NE(m, nullptr);
      EXPECT_TRUE(m->path.ends_with("libc10_cuda.so")) << m->path;
    }
  }
  EXPECT_GT(allocs, 200u);
  EXPECT_LT(allocs, sent.size());
  // The exit line counts them apart from the segments' allocations.
  EXPECT_NE(s.result.err.find(" frees, " + std::to_string(allocs) + " PyTorch blocks recorded in "),
            std::string::npos)
      << s.result.err;
}

// The caching allocator's segments keep their own events, and the two layers interleave in the
// log exactly as the allocator did things under its lock.
TEST_F(TorchBlocks, SegmentsStillRecordedAsCudaMallocInTheAllocatorsOrder) {
  const SharedRun& s = blocks_run();
  ASSERT_TRUE(s.result.exited(0)) << s.result.err;
  std::string did, logged;
  std::vector<Report> segments;
  for (const Report& r : s.run.sent) {
    did += r.what;
    if (r.what != 'b') segments.push_back(r);
  }
  std::vector<const LoggedEvent*> segment_events;
  for (const auto& e : s.log.events) {
    if (e.api == "cudaMalloc" || e.api == "cudaFree") segment_events.push_back(&e);
    logged += e.api == "cudaMalloc"   ? 'm'
              : e.api == "cudaFree"   ? 'f'
              : e.api == report_api() ? 'b'
                                      : '?';
  }
  EXPECT_EQ(logged, did);
  ASSERT_EQ(segment_events.size(), segments.size());
  EXPECT_NE(did.find('f'), std::string::npos) << "empty_cache gave segments back";
  for (size_t i = 0; i < segments.size(); ++i) {
    SCOPED_TRACE("segment action " + std::to_string(i));
    EXPECT_EQ(segment_events[i]->ev.f.address, segments[i].ptr);
    if (segments[i].what == 'm') {
      EXPECT_EQ(segment_events[i]->ev.f.size, static_cast<uint64_t>(segments[i].size));
      EXPECT_EQ(segment_events[i]->ev.f.device, segments[i].index);
    }
  }
}

// libc10.so received every call exactly as sent, CPU reports included; those left no event.
TEST_F(TorchBlocks, EveryCallForwardedUnchangedAndCpuCallsNotRecorded) {
  const SharedRun& s = blocks_run();
  ASSERT_TRUE(s.result.exited(0)) << s.result.err;
  std::vector<Report> sent, received_cuda, received_cpu;
  for (const Report& r : s.run.sent)
    if (r.what == 'b') sent.push_back(r);
  for (const Report& r : s.run.received) (r.type == 1 ? received_cuda : received_cpu).push_back(r);
  EXPECT_EQ(received_cuda, sent);
  ASSERT_EQ(received_cpu.size(), 2u);
  EXPECT_EQ(received_cpu[0].size, 4096);
  EXPECT_EQ(received_cpu[0].allocated, 4096u);
  EXPECT_EQ(received_cpu[1].size, -4096);
  EXPECT_EQ(received_cpu[1].ptr, received_cpu[0].ptr);
  EXPECT_EQ(received_cpu[1].index, -1);
  EXPECT_EQ(block_events(s.log).size(), received_cuda.size());
}

// Every Allocator-layer entry point of the table is reached by this scenario (the CUDA layers
// are covered by recorder_test.cpp's EntryPointCoverage).
TEST_F(TorchBlocks, EveryAllocatorEntryPointIsExercised) {
  const SharedRun& s = blocks_run();
  for (const auto& api : format::kApis) {
    if (api.layer != format::Layer::Allocator) continue;
    bool seen = false;
    for (const auto& e : s.log.events) seen = seen || e.api == api.name;
    EXPECT_TRUE(seen) << api.name;
  }
}

// Totals are stored as corrections to what the block's size predicts: a block event costs
// little more than a cudaMalloc event.
TEST_F(TorchBlocks, BlockEventsStayCompact) {
  const SharedRun& s = blocks_run();
  ASSERT_FALSE(s.log.events.empty());
  double per_event =
      static_cast<double>(s.log.committed_bytes) / static_cast<double>(s.log.events.size());
  std::printf("log size: %.2f bytes per event (stacks included)\n", per_event);
  EXPECT_LE(per_event, 24.0);
}

TEST_F(TorchBlocks, CpuOnlyProcessRecordsNothing) {
  fs::path out = temp_dir("blocks-cpu");
  RunResult r = run(blocks_command("cpu-only"), traced_env(out));
  ASSERT_TRUE(r.exited(0)) << r.err;
  EXPECT_EQ(r.out, "received 20\n") << "every CPU report forwarded";
  EXPECT_EQ(r.err, "") << "no summary line: CUDA was never used";
  EXPECT_TRUE(fs::is_empty(out)) << "no directory: CUDA was never used";
}

// Without PyTorch the symbol has no definition behind ours: calls do nothing and never crash.
TEST_F(TorchBlocks, NoNextDefinitionIsANoOp) {
  fs::path out = temp_dir("blocks-no-next");
  RunResult r = run(blocks_command("no-next"), traced_env(out));
  ASSERT_TRUE(r.exited(0)) << r.err;
  EXPECT_EQ(r.out, "called\n") << "the hook defines the symbol";
  EXPECT_TRUE(fs::is_empty(out)) << "nothing recorded, so no directory";
  RunResult plain =
      run(blocks_command("no-next"), {{"LD_LIBRARY_PATH", GMEMHOOK_TEST_FAKECUDA_DIR}});
  EXPECT_EQ(plain.out, "absent\n");
}

// Once the allocator's call has returned, its block is in the log, whatever kills the process.
TEST_F(TorchBlocks, KilledRunKeepsEveryPrintedBlock) {
  fs::path out = temp_dir("blocks-kill");
  auto env = traced_env(out);
  env["GMEMHOOK_QUIET"] = "1";
  TracedProcess proc(blocks_command("loop"), env);
  std::vector<std::pair<EventKind, uint64_t>> printed;
  while (auto line = proc.read_line()) {
    std::istringstream in(*line);
    std::string what, ptr;
    in >> what >> ptr;
    printed.emplace_back(what == "alloc" ? EventKind::BlockAlloc : EventKind::BlockFree,
                         std::stoull(ptr, nullptr, 16));
    if (printed.size() == 3000) {
      proc.kill(SIGKILL);
      break;
    }
  }
  int st = proc.wait();
  ASSERT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) << st;
  auto dirs = process_dirs(out);
  ASSERT_EQ(dirs.size(), 1u);
  LoggedProcess p = read_process(dirs[0]);
  EXPECT_FALSE(p.end.has_value());
  std::vector<std::pair<EventKind, uint64_t>> logged;
  for (const LoggedEvent* e : block_events(p))
    logged.emplace_back(*analysis::event_kind(e->ev), e->ev.f.address);
  ASSERT_GE(logged.size(), printed.size());
  logged.resize(printed.size());
  EXPECT_EQ(logged, printed);
}

}  // namespace
}  // namespace gmemhook::test

// The replay's own path for usual events (Replay::on_usual_event: an allocation or a free read from
// its few numbers, no Event filled) against the whole Event's path (on_event) on the same log:
// every count, peak, timeline, site, live allocation and anomaly must come out the same.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "analyzer/log/thread_file_reader.h"
#include "analyzer/model/pool_tracker.h"
#include "analyzer/model/replay.h"
#include "analyzer/model/segment_calls.h"
#include "report_scenario.h"

namespace gmemhook::test_logs {
namespace {

using analysis::Replay;
using format::ApiId;

// The replay as it is, counting the usual events the reader hands it, and by api those it applied
// on its own path (not handed on whole to on_event).
struct CountingReplay : Replay {
  using Replay::Replay;
  uint64_t usual = 0;
  std::map<ApiId, uint64_t> own_path;
  bool in_usual = false, handed_on = false;
  void on_usual_event(const analysis::ThreadFileReader& t) override {
    ++usual;
    in_usual = true;
    handed_on = false;
    Replay::on_usual_event(t);
    in_usual = false;
    if (!handed_on) ++own_path[static_cast<ApiId>(t.usual().api())];
  }
  void on_event(const format::Event& ev, const analysis::ThreadFileReader& t) override {
    if (in_usual) handed_on = true;
    Replay::on_event(ev, t);
  }
};

// The replay with every usual event given whole to on_event, as before it had a path of its own.
struct WholeEventReplay : Replay {
  using Replay::Replay;
  void on_usual_event(const analysis::ThreadFileReader& t) override { on_event(t.current(), t); }
};

// Everything a report reads of a pass, as one comparable value.
std::string state_of(const Replay& r) {
  std::string out = "events " + std::to_string(r.events()) + " last " +
                    std::to_string(r.last_seq()) + " " + std::to_string(r.last_time_ns()) + "\n";
  auto add = [&out](auto... v) {
    ((out += std::to_string(v) + " "), ...);
    out += "\n";
  };
  for (const analysis::Series& s : r.series()) {
    add(s.key.device, static_cast<int>(s.key.memory), s.allocations, s.frees, s.allocated_bytes,
        s.freed_bytes, s.live_bytes, s.live_count, s.peak_bytes, s.peak_seq, s.peak_time_ns,
        s.failed, s.failures.size(), s.physical_bytes, s.max_physical_bytes);
    for (size_t api = 0; api < 256; ++api)
      if (s.allocations_by_api[api] || s.frees_by_api[api])
        add(api, s.allocations_by_api[api], s.frees_by_api[api]);
    for (const analysis::TimelinePoint& p : s.timeline.points()) add(p.seq, p.time_ns, p.bytes);
  }
  for (const analysis::Site& st : r.sites())
    add(st.stack, st.series, st.api, static_cast<int>(st.kind), st.bytes, st.count);
  std::map<uint64_t, std::tuple<uint64_t, uint32_t, uint16_t, uint16_t>> live;
  r.live().for_each([&](uint64_t address, const analysis::LiveAllocation& a) {
    live[address] = {a.size, a.site, a.pool, a.series};
  });
  for (const auto& [address, a] : live)
    add(address, std::get<0>(a), std::get<1>(a), std::get<2>(a), std::get<3>(a));
  for (const analysis::PoolKey& p : r.pools()) add(p.handle, p.device);
  const analysis::Anomalies& an = r.anomalies();
  add(an.unknown_frees, an.null_frees, an.reused_addresses, an.failed_frees, an.unknown_releases,
      an.unknown_api_events);
  for (const analysis::Unmatched& u : an.examples) add(u.seq, u.address, u.stack, u.api);
  return out;
}

// Allocations and frees of every plain api, with and without stacks and devices, at addresses
// handed out again (a missed free), of zero bytes (a null pointer), freed twice, never allocated,
// null; stream-ordered ones, failed ones and cuMemCreate handles among them (those the usual path
// hands on), on two threads.
ProcessLogs mixed_log() {
  Scenario s(10);
  std::mt19937_64 rng(14);
  std::vector<uint32_t> stacks[2];
  for (uint64_t t = 0; t < 2; ++t)
    for (uint64_t i = 0; i < 5; ++i) stacks[t].push_back(s.stack(11 + t, {0x401000 + i * 16}));
  const std::pair<ApiId, ApiId> kinds[] = {{ApiId::cudaMalloc, ApiId::cudaFree},
                                           {ApiId::cuMemAlloc_v2, ApiId::cuMemFree_v2},
                                           {ApiId::cudaMallocManaged, ApiId::cudaFree},
                                           {ApiId::cudaMallocHost, ApiId::cudaFreeHost}};
  std::vector<std::tuple<uint64_t, ApiId, uint64_t>> live;  // address, free api, thread
  uint64_t next = 0x10000000, handle = 1;
  for (int i = 0; i < 6000; ++i) {
    const uint64_t tid = 11 + rng() % 2;
    const uint32_t stack = rng() % 4 ? stacks[tid - 11][rng() % 5] : 0;
    const uint64_t r = rng() % 100;
    if (live.empty() || r < 45) {
      const auto& [api, free_api] = kinds[rng() % 4];
      const int32_t device = rng() % 10 ? static_cast<int32_t>(rng() % 3) : -2;  // -2: none
      const uint32_t result = rng() % 200 == 0 ? 2 : 0;
      uint64_t address = next;
      if (!live.empty() && rng() % 50 == 0) address = std::get<0>(live[rng() % live.size()]);
      if (rng() % 100 == 0) address = 0;  // a zero-byte request
      s.alloc(tid, api, address, rng() % 100 ? 256 + rng() % 4096 : 0, device, stack, result);
      if (!result && address == next) live.push_back({next, free_api, tid});
      next += 8192;
    } else if (r < 52) {
      format::Event& ev = s.event(tid, ApiId::cudaMallocAsync, stack);
      ev.f.set_address(next);
      ev.f.set_size(512 + rng() % 512);
      ev.f.set_device(0);
      ev.f.set_stream(0x1000 + tid);
      live.push_back({next, ApiId::cudaFreeAsync, tid});
      next += 8192;
    } else if (r < 55) {
      s.create(tid, handle, 2 << 20, 0, stack);
      if (rng() % 2) s.release(tid, handle);
      ++handle;
    } else if (r < 58) {
      s.free(tid, ApiId::cudaFree, rng() % 2 ? 0 : 0xdead0000 + rng() % 64 * 8, stack);
    } else {
      const size_t k = rng() % live.size();
      const auto [address, free_api, owner] = live[k];
      if (free_api == ApiId::cudaFreeAsync) {
        format::Event& ev = s.event(owner, ApiId::cudaFreeAsync);
        ev.f.set_address(address);
        ev.f.set_stream(0x1000 + owner);
      } else {
        s.free(rng() % 4 ? owner : 11 + rng() % 2, free_api, address);
        if (rng() % 30 == 0) s.free(owner, free_api, address);  // twice
      }
      live[k] = live.back();
      live.pop_back();
    }
  }
  return s.build(true);
}

// An observer like BlockLayer before its first block: it declines allocations, frees and maps but
// needs those a list of segments would follow otherwise (segment_calls.h). It notes every call
// it gets.
struct SegmentWatcher : analysis::ReplayObserver {
  SegmentWatcher() : ReplayObserver(kCalls) {}
  std::string seen;
  bool calls_of(format::EventKind kind) const override { return !analysis::is_segment_call(kind); }
  bool needs_odd_segment_calls() const override { return true; }
  void call(const Replay&, const format::Event& ev, const format::ApiInfo&) override {
    seen += std::to_string(ev.seq) + " ";
  }
};

std::string pools_of(const analysis::PoolTracker& t) {
  std::string out;
  for (const analysis::Pool& p : t.pools())
    for (const uint64_t v : {p.handle, static_cast<uint64_t>(p.device), p.live_bytes, p.live_count,
                             p.high_water_bytes, p.high_water_seq, p.allocations})
      out += std::to_string(v) + " ";
  return out;
}

TEST(UsualEvents, ReplayAsTheirWholeEventsDo) {
  const ProcessLogs logs = mixed_log();
  auto reader = read_in_memory(logs);
  for (const std::vector<std::string>& only :
       {std::vector<std::string>{}, std::vector<std::string>{"cudaMalloc", "cudaFree"}}) {
    analysis::StackInterner stacks_one, stacks_two;
    CountingReplay usual(stacks_one, only);
    WholeEventReplay whole(stacks_two, only);
    reader.read_events(usual);
    usual.finish();
    reader.read_events(whole);
    whole.finish();
    // Over half the events are usual ones: the path under test was taken.
    EXPECT_GT(usual.usual, 3000u);
    EXPECT_GT(usual.events(), 5000u);
    EXPECT_EQ(state_of(usual), state_of(whole)) << only.size();
  }
}

// With an observer of odd segment calls and a pool tracker attached, through a stretch with
// memory mapped and one with a stream under capture: the usual path gives both what the whole
// events give, and takes pinned host allocations and frees (even with such an observer attached)
// and stream-ordered ones itself, rather than handing them on to the whole-event path.
TEST(UsualEvents, ObserversSeeWhatTheWholeEventsGive) {
  Scenario s(10);
  std::mt19937_64 rng(15);
  uint64_t next = 0x10000000;
  std::vector<std::pair<uint64_t, ApiId>> live;
  const std::pair<ApiId, ApiId> kinds[] = {{ApiId::cudaMalloc, ApiId::cudaFree},
                                           {ApiId::cudaMallocHost, ApiId::cudaFreeHost},
                                           {ApiId::cudaMallocAsync, ApiId::cudaFreeAsync}};
  const auto stream_of = [](uint64_t tid) { return 0x1000 + tid; };
  for (int i = 0; i < 4000; ++i) {
    const uint64_t tid = 11 + rng() % 2;
    // A capture of thread 11's stream: its stream-ordered calls are graph nodes meanwhile.
    if (i == 2000) s.event(11, ApiId::cudaStreamBeginCapture).f.set_stream(stream_of(11));
    if (i == 2200) {
      format::Event& end = s.event(11, ApiId::cudaStreamEndCapture);
      end.f.set_stream(stream_of(11));
      end.f.set_handle(0x900);
    }
    if (i == 1000) {  // a stretch with memory mapped: every call may be an odd segment call
      s.create(tid, 0x77, 2 << 20);
      s.map(tid, 0x7f000000, 2 << 20, 0x77);
    }
    if (i == 1500) s.unmap(tid, 0x7f000000, 2 << 20);
    if (live.empty() || rng() % 100 < 50) {
      const auto& [api, free_api] = kinds[rng() % 3];
      uint64_t address = next;
      // Handed out again (pinned over a live device allocation is an odd call); on the mapping.
      if (!live.empty() && rng() % 20 == 0) address = live[rng() % live.size()].first;
      if (i > 1000 && i < 1500 && rng() % 50 == 0) address = 0x7f000000;
      format::Event& ev = s.event(tid, api);
      ev.f.set_address(address);
      ev.f.set_size(256 + rng() % 4096);
      ev.f.set_device(rng() % 40 ? 0 : -5);  // below -1: an odd call
      if (api == ApiId::cudaMallocAsync) ev.f.set_stream(stream_of(tid));
      if (address == next) live.push_back({next, free_api});
      next += 8192;
    } else {
      const size_t k = rng() % live.size();
      format::Event& ev = s.event(tid, live[k].second);
      ev.f.set_address(live[k].first);
      if (live[k].second == ApiId::cudaFreeAsync) ev.f.set_stream(stream_of(tid));
      live[k] = live.back();
      live.pop_back();
    }
  }
  const ProcessLogs logs = s.build(true);
  auto reader = read_in_memory(logs);
  analysis::StackInterner stacks_one, stacks_two;
  CountingReplay usual(stacks_one);
  WholeEventReplay whole(stacks_two);
  SegmentWatcher usual_odd, whole_odd;
  analysis::PoolTracker usual_pools, whole_pools;
  usual.observe(usual_odd);
  usual.observe(usual_pools);
  whole.observe(whole_odd);
  whole.observe(whole_pools);
  reader.read_events(usual);
  usual.finish();
  reader.read_events(whole);
  whole.finish();
  EXPECT_EQ(state_of(usual), state_of(whole));
  EXPECT_EQ(usual_odd.seen, whole_odd.seen);
  EXPECT_NE(whole_odd.seen.find(' '), std::string::npos) << "no odd call was made";
  EXPECT_EQ(pools_of(usual_pools), pools_of(whole_pools));
  EXPECT_GT(usual.own_path[ApiId::cudaMallocHost], 300u);
  EXPECT_GT(usual.own_path[ApiId::cudaMalloc], 300u);
  EXPECT_GT(usual.own_path[ApiId::cudaMallocAsync], 300u);
  EXPECT_GT(usual.own_path[ApiId::cudaFreeAsync], 300u);
}

}  // namespace
}  // namespace gmemhook::test_logs

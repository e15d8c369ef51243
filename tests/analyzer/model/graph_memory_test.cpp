// The replay of CUDA graph memory nodes and imported memory, on processes whose
// answers are known by construction: memory comes into being at the launch that runs a node (or
// the upload ahead of it), is freed by free nodes, cudaFree and auto-free relaunches, and
// imported memory is mapped, never this process's allocation and never "unknown".
#include <gtest/gtest.h>

#include <ostream>

#include "analyzer/model/live_view.h"
#include "analyzer/model/replay.h"
#include "report_scenario.h"

namespace gmemhook::test_logs {
namespace {

using analysis::Replay;
using analysis::Series;
using format::ApiId;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kGraph = 0x900, kExec = 0x901, kStream = 0x77;

const Series& device0(const Replay& r) {
  for (const Series& s : r.series())
    if (s.key.device == 0 && s.key.memory == format::MemoryType::Device) return s;
  static const Series none;
  return none;
}

void alloc_node(Scenario& s, uint64_t address, uint64_t size, uint32_t stack = 0,
                ApiId api = ApiId::cudaGraphAddMemAllocNode, uint64_t graph = kGraph) {
  format::Event& ev = s.event(11, api, stack);
  ev.f.set_graph(graph);
  ev.f.set_address(address);
  ev.f.set_size(size);
  ev.f.set_device(0);
}
void free_node(Scenario& s, uint64_t address) {
  format::Event& ev = s.event(11, ApiId::cudaGraphAddMemFreeNode);
  ev.f.set_graph(kGraph);
  ev.f.set_address(address);
}
void instantiate(Scenario& s, uint64_t flags = 0) {
  format::Event& ev = s.event(11, ApiId::cudaGraphInstantiateWithFlags);
  ev.f.set_handle(kExec);
  ev.f.set_graph(kGraph);
  ev.f.set_flags(flags);
}
void launch(Scenario& s, uint32_t stack = 0) {
  format::Event& ev = s.event(11, ApiId::cudaGraphLaunch, stack);
  ev.f.set_handle(kExec);
  ev.f.set_stream(kStream);
}

// What the H200 showed: eight 64 MiB allocation nodes, launched once, freed later
// with cudaFree. Nothing is memory before the launch; after it all eight are, under the nodes'
// call site with the launch's stack beside it; the frees match them.
TEST(GraphMemory, AllocationNodesBecomeLiveAtTheLaunchAndCudaFreeFreesThem) {
  Scenario s(10);
  const uint32_t made_at = s.stack(11, {0x10, 0x20});
  const uint32_t launched_at = s.stack(11, {0x30, 0x40});
  for (uint64_t i = 0; i < 8; ++i) alloc_node(s, 0x10000000 + i * 64 * kMiB, 64 * kMiB, made_at);
  instantiate(s);
  {
    const auto run = replay(s);
    EXPECT_EQ(device0(run->replay).live_bytes, 0u) << "nodes are not memory yet";
  }
  launch(s, launched_at);
  {
    const auto run = replay(s);
    const Replay& r = run->replay;
    EXPECT_EQ(device0(r).live_bytes, 8 * 64 * kMiB);
    EXPECT_EQ(device0(r).allocations_by_api[uint8_t(ApiId::cudaGraphAddMemAllocNode)], 8u);
    const auto groups = r.sites_now([](const analysis::SeriesKey&) { return true; });
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups[0].count, 8u);
    EXPECT_EQ(groups[0].stack, r.stacks().id(0, made_at));
    EXPECT_NE(groups[0].launch_stack, 0u);
    EXPECT_NE(groups[0].launch_stack, groups[0].stack);
  }
  for (uint64_t i = 0; i < 8; ++i) s.free(11, ApiId::cudaFree, 0x10000000 + i * 64 * kMiB);
  const auto run = replay(s);
  const Replay& r = run->replay;
  EXPECT_EQ(r.anomalies().unknown_frees, 0u);
  EXPECT_EQ(device0(r).live_bytes, 0u);
  EXPECT_EQ(device0(r).peak_bytes, 8 * 64 * kMiB);
  EXPECT_EQ(device0(r).frees, 8u);
}

// Launched and never freed: a leak of the whole node, once however often the exec is destroyed.
TEST(GraphMemory, UnfreedGraphMemoryOutlivesItsExecAndGraph) {
  Scenario s(10);
  alloc_node(s, 0x10000000, 4 * kMiB);
  instantiate(s);
  launch(s);
  s.event(11, ApiId::cudaGraphExecDestroy).f.set_handle(kExec);
  s.event(11, ApiId::cudaGraphDestroy).f.set_graph(kGraph);
  launch(s);  // an exec that is gone: nothing more
  const auto run = replay(s);
  EXPECT_EQ(device0(run->replay).live_bytes, 4 * kMiB);
  EXPECT_EQ(device0(run->replay).allocations, 1u);
}

// Auto-free on launch: each relaunch frees what the previous one left, then allocates again.
TEST(GraphMemory, AutoFreeRelaunchFreesThePreviousLaunchsMemory) {
  Scenario s(10);
  alloc_node(s, 0x10000000, 2 * kMiB);
  instantiate(s, 1);  // cudaGraphInstantiateFlagAutoFreeOnLaunch
  for (int i = 0; i < 3; ++i) launch(s);
  const auto run = replay(s);
  const Series& d = device0(run->replay);
  EXPECT_EQ(d.allocations, 3u);
  EXPECT_EQ(d.frees_by_api[uint8_t(ApiId::cudaGraphLaunch)], 2u);
  EXPECT_EQ(d.live_bytes, 2 * kMiB);
  EXPECT_EQ(d.peak_bytes, 2 * kMiB) << "freed before it is allocated again";
  EXPECT_EQ(run->replay.anomalies().reused_addresses, 0u);
}

// An allocation node and its free node in one graph: memory for the length of each launch.
TEST(GraphMemory, AFreeNodeInTheSameGraphFreesAtEachLaunch) {
  Scenario s(10);
  alloc_node(s, 0x10000000, 2 * kMiB);
  alloc_node(s, 0x20000000, 1 * kMiB);
  free_node(s, 0x10000000);
  instantiate(s);
  launch(s);
  s.free(11, ApiId::cudaFree, 0x20000000);  // the one without a free node, by hand
  launch(s);
  const auto run = replay(s);
  const Series& d = device0(run->replay);
  EXPECT_EQ(d.allocations, 4u);
  EXPECT_EQ(d.frees_by_api[uint8_t(ApiId::cudaGraphAddMemFreeNode)], 2u);
  EXPECT_EQ(d.live_bytes, 1 * kMiB);
  EXPECT_EQ(d.peak_bytes, 3 * kMiB);
  EXPECT_EQ(run->replay.anomalies().unknown_frees, 0u);
}

// cudaMallocAsync / cudaFreeAsync on a stream under capture are nodes of the captured graph.
TEST(GraphMemory, CapturedStreamOrderedCallsAreNodesOfTheCapturedGraph) {
  Scenario s(10);
  auto on_stream = [&](ApiId api) -> format::Event& {
    format::Event& ev = s.event(11, api);
    ev.f.set_stream(kStream);
    return ev;
  };
  on_stream(ApiId::cudaStreamBeginCapture);
  format::Event& a = on_stream(ApiId::cudaMallocAsync);
  a.f.set_address(0x1000000);
  a.f.set_size(4096);
  a.f.set_device(0);
  format::Event& b = on_stream(ApiId::cudaMallocAsync);
  b.f.set_address(0x2000000);
  b.f.set_size(512);
  b.f.set_device(0);
  on_stream(ApiId::cudaFreeAsync).f.set_address(0x2000000);  // freed inside the graph
  on_stream(ApiId::cudaStreamEndCapture).f.set_graph(kGraph);
  {
    const auto run = replay(s);
    EXPECT_EQ(device0(run->replay).allocations, 0u) << "capturing allocates nothing";
    EXPECT_EQ(run->graphs.activity().capture_allocations, 2u);
  }
  instantiate(s);
  launch(s);
  on_stream(ApiId::cudaFreeAsync).f.set_address(0x1000000);  // after the capture: real memory
  const auto run = replay(s);
  const Series& d = device0(run->replay);
  EXPECT_EQ(d.allocations, 2u);
  EXPECT_EQ(d.peak_bytes, 4096u + 512);
  EXPECT_EQ(d.live_bytes, 0u);
  EXPECT_EQ(run->replay.anomalies().unknown_frees, 0u);
}

// The generic node API (cudaGraphAddNode): an allocation node, a free node (IsFree) and a child
// graph (its handle) in one entry point. A child moved into its parent runs with the parent.
TEST(GraphMemory, GenericNodesAndAMovedChildGraphRunWithTheParent) {
  constexpr uint64_t kChild = 0x910, kParent = kGraph;
  Scenario s(10);
  alloc_node(s, 0x10000000, 2 * kMiB, 0, ApiId::cudaGraphAddNode, kChild);
  format::Event& f = s.event(11, ApiId::cudaGraphAddNode);
  f.f.set_graph(kChild);
  f.f.set_address(0x10000000);
  f.f.set_free();
  alloc_node(s, 0x20000000, kMiB, 0, ApiId::cudaGraphAddNode, kChild);
  format::Event& child = s.event(11, ApiId::cudaGraphAddNode);
  child.f.set_graph(kParent);
  child.f.set_handle(kChild);
  instantiate(s);  // the parent
  launch(s);
  const auto run = replay(s);
  const Series& d = device0(run->replay);
  EXPECT_EQ(d.allocations, 2u);
  EXPECT_EQ(d.frees_by_api[uint8_t(ApiId::cudaGraphAddNode)], 1u) << "the free node";
  EXPECT_EQ(d.live_bytes, kMiB);
  EXPECT_EQ(d.peak_bytes, 2 * kMiB) << "the nodes run in the order they were added";
  EXPECT_EQ(run->replay.anomalies().failed_other, 0u);
}

// cudaGraphAddChildGraphNode and cudaGraphClone: the parent and the clone run the nodes of the
// graph they were made from; a refused clone (CUDA 13 refuses memory nodes) makes nothing.
TEST(GraphMemory, ChildNodesAndClonesRunTheirGraphsNodes) {
  constexpr uint64_t kChild = 0x910, kClone = 0x920, kCloneExec = 0x921;
  Scenario s(10);
  alloc_node(s, 0x10000000, kMiB, 0, ApiId::cuGraphAddMemAllocNode, kChild);
  format::Event& refused = s.event(11, ApiId::cudaGraphClone);
  refused.f.set_graph(kChild);
  refused.result = 1;  // cudaErrorInvalidValue
  format::Event& c = s.event(11, ApiId::cuGraphClone);
  c.f.set_graph(kChild);
  c.f.set_handle(kClone);
  format::Event& e = s.event(11, ApiId::cuGraphAddChildGraphNode);
  e.f.set_graph(kGraph);
  e.f.set_handle(kChild);
  instantiate(s);
  launch(s);
  s.free(11, ApiId::cudaFree, 0x10000000);
  format::Event& i = s.event(11, ApiId::cudaGraphInstantiateWithFlags);
  i.f.set_handle(kCloneExec);
  i.f.set_graph(kClone);
  s.event(11, ApiId::cudaGraphLaunch).f.set_handle(kCloneExec);
  const auto run = replay(s);
  const Series& d = device0(run->replay);
  EXPECT_EQ(d.allocations, 2u) << "the parent's launch, then the clone's";
  EXPECT_EQ(d.live_bytes, kMiB);
  EXPECT_EQ(run->replay.anomalies().unknown_frees, 0u);
}

// cudaStreamBeginCaptureToGraph: what is captured joins the graph's own nodes.
TEST(GraphMemory, CaptureIntoAnExistingGraphAddsToItsNodes) {
  Scenario s(10);
  alloc_node(s, 0x10000000, kMiB);
  format::Event& begin = s.event(11, ApiId::cudaStreamBeginCaptureToGraph);
  begin.f.set_stream(kStream);
  begin.f.set_graph(kGraph);
  format::Event& m = s.event(11, ApiId::cudaMallocAsync);
  m.f.set_stream(kStream);
  m.f.set_address(0x20000000);
  m.f.set_size(4096);
  m.f.set_device(0);
  format::Event& end = s.event(11, ApiId::cudaStreamEndCapture);
  end.f.set_stream(kStream);
  end.f.set_graph(kGraph);
  instantiate(s);
  launch(s);
  const auto run = replay(s);
  EXPECT_EQ(device0(run->replay).live_bytes, kMiB + 4096);
  EXPECT_EQ(device0(run->replay).allocations, 2u);
}

// A free of a node's address whose launch the log never saw is said as such, not as unknown.
TEST(GraphMemory, FreeOfGraphMemoryNeverLaunchedIsNotUnknown) {
  Scenario s(10);
  alloc_node(s, 0x10000000, kMiB);
  s.free(11, ApiId::cudaFree, 0x10000000);
  const auto run = replay(s);
  EXPECT_EQ(run->replay.anomalies().unknown_frees, 0u);
  EXPECT_EQ(run->replay.anomalies().unlaunched_graph_frees, 1u);
}

void upload(Scenario& s, uint32_t stack = 0) {
  format::Event& ev = s.event(11, ApiId::cudaGraphUpload, stack);
  ev.f.set_handle(kExec);
  ev.f.set_stream(kStream);
}
void destroy_exec(Scenario& s) { s.event(11, ApiId::cudaGraphExecDestroy).f.set_handle(kExec); }

// Device 0's allocations, frees, live bytes and peak after replaying `s`, compared in one go.
struct Counts {
  uint64_t allocations = 0, frees = 0, live = 0, peak = 0;
  bool operator==(const Counts&) const = default;
};
void PrintTo(const Counts& c, std::ostream* os) {
  *os << "{allocations " << c.allocations << ", frees " << c.frees << ", live " << c.live
      << ", peak " << c.peak << "}";
}
Counts counts(const Scenario& s) {
  const auto run = replay(s);
  const Series& d = device0(run->replay);
  return {d.allocations, d.frees, d.live_bytes, d.peak_bytes};
}

// An upload allocates the exec's allocation nodes before its first launch (the H200's
// driver counted 52 MiB of nodes as 64 MiB used right after cudaGraphUpload). The first launch
// runs on that memory: nothing is allocated twice, and the upload's stack is kept beside the node.
TEST(GraphUpload, UploadMakesTheNodesLiveAndTheFirstLaunchRunsOnThem) {
  Scenario s(10);
  const uint32_t uploaded_at = s.stack(11, {0x30, 0x40});
  alloc_node(s, 0x10000000, 4 * kMiB);
  alloc_node(s, 0x20000000, 40 * kMiB);
  instantiate(s);
  upload(s, uploaded_at);
  const uint64_t upload_seq = s.last_seq();
  {
    const auto run = replay(s);
    EXPECT_EQ(device0(run->replay).live_bytes, 44 * kMiB);
    EXPECT_EQ(device0(run->replay).peak_seq, upload_seq);
    const auto groups = run->replay.sites_now([](const analysis::SeriesKey&) { return true; });
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups[0].launch_stack, run->replay.stacks().id(0, uploaded_at));
    EXPECT_EQ(groups[0].launch_api, uint8_t(ApiId::cudaGraphUpload));
  }
  launch(s);
  s.free(11, ApiId::cudaFree, 0x20000000);
  EXPECT_EQ(counts(s), (Counts{2, 1, 4 * kMiB, 44 * kMiB})) << "the launch allocates nothing more";
  const auto run = replay(s);
  EXPECT_EQ(device0(run->replay).peak_seq, upload_seq);
  EXPECT_EQ(run->replay.anomalies().reused_addresses, 0u);
}

// With auto-free on launch: the first launch after an upload keeps the upload's memory (it is its
// own), the next one frees it and allocates again, as any relaunch does.
TEST(GraphUpload, AutoFreeSparesWhatTheUploadMadeAndFreesAtTheNextLaunch) {
  Scenario s(10);
  alloc_node(s, 0x10000000, 2 * kMiB);
  instantiate(s, 1);  // cudaGraphInstantiateFlagAutoFreeOnLaunch
  upload(s);
  launch(s);
  EXPECT_EQ(counts(s), (Counts{1, 0, 2 * kMiB, 2 * kMiB}));
  launch(s);
  EXPECT_EQ(counts(s), (Counts{2, 1, 2 * kMiB, 2 * kMiB}));
  const auto run = replay(s);
  EXPECT_EQ(device0(run->replay).frees_by_api[uint8_t(ApiId::cudaGraphLaunch)], 1u);
}

// An exec destroyed before any launch gives back what its upload made (the H200's used figure
// fell back once the unlaunched exec was destroyed): no leak, and no unknown free. What a launch
// made stays live past the exec, however often it is uploaded again.
TEST(GraphUpload, AnExecDestroyedUnlaunchedFreesWhatItsUploadMade) {
  Scenario s(10);
  alloc_node(s, 0x10000000, 16 * kMiB);
  instantiate(s);
  upload(s);
  upload(s);  // again: nothing more
  destroy_exec(s);
  EXPECT_EQ(counts(s), (Counts{1, 1, 0, 16 * kMiB}));
  {
    const auto run = replay(s);
    EXPECT_EQ(device0(run->replay).frees_by_api[uint8_t(ApiId::cudaGraphExecDestroy)], 1u);
    EXPECT_EQ(run->replay.anomalies().unknown_frees, 0u);
  }
  instantiate(s);
  launch(s);
  upload(s);  // the launch's memory is still live: the upload makes nothing
  destroy_exec(s);
  EXPECT_EQ(counts(s), (Counts{2, 1, 16 * kMiB, 16 * kMiB}))
      << "a launch's memory outlives its exec";
}

// Re-uploading after the launch's memory was freed by hand makes it live again for the next
// launch; that launch runs on it, and a destruction after the launch frees nothing.
TEST(GraphUpload, ReuploadAfterAFreeAllocatesAgainForTheNextLaunch) {
  Scenario s(10);
  alloc_node(s, 0x10000000, 8 * kMiB);
  instantiate(s);
  upload(s);
  launch(s);
  s.free(11, ApiId::cudaFree, 0x10000000);
  upload(s);
  EXPECT_EQ(counts(s), (Counts{2, 1, 8 * kMiB, 8 * kMiB}));
  launch(s);
  destroy_exec(s);
  EXPECT_EQ(counts(s), (Counts{2, 1, 8 * kMiB, 8 * kMiB}));
}

// The driver's figures after each graph call are kept per device, only when they change, and
// found again for any moment; they are the pool's, never added to the series. After the upload
// the pool's used figure already counts the node (in whole granules), as on the H200.
TEST(GraphPool, UploadAllocatesFiguresKeptPerMoment) {
  constexpr uint64_t kChunk = 32 * kMiB;
  Scenario s(10);
  alloc_node(s, 0x10000000, 40 * kMiB);
  instantiate(s);
  const auto pool_call = [&](ApiId api, uint64_t used, uint64_t reserved) {
    return s.graph_pool_call(11, api, kExec, used, reserved);
  };
  const uint64_t uploaded = pool_call(ApiId::cudaGraphUpload, 2 * kChunk, 2 * kChunk);
  {
    const auto run = replay(s);
    EXPECT_EQ(device0(run->replay).live_bytes, 40 * kMiB) << "the upload allocates the node";
    EXPECT_EQ(run->graphs.activity().uploads, 1u);
  }
  const uint64_t launched = pool_call(ApiId::cudaGraphLaunch, 2 * kChunk, 2 * kChunk);
  s.free(11, ApiId::cudaFree, 0x10000000);
  const uint64_t trimmed = pool_call(ApiId::cudaDeviceGraphMemTrim, 0, 0);
  // PyTorch's totals ride on the same fields of block events: never the pool's.
  format::Event& block = s.event(11, ApiId::_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE);
  block.f.set_address(0x20000000);
  block.f.set_size(kMiB);
  block.f.set_device(0);
  block.f.set_totals(kMiB, 8 * kChunk);
  const auto run = replay(s);
  const Series& d = device0(run->replay);
  EXPECT_EQ(d.peak_bytes, 40 * kMiB) << "the pool's figures are not added to the series";
  EXPECT_EQ(d.peak_seq, uploaded);
  const analysis::GraphPoolFigures& pool = run->graph_pool;
  const analysis::GraphPoolDevice* d0 = pool.device(0);
  ASSERT_NE(d0, nullptr);
  EXPECT_EQ(pool.device(1), nullptr);
  EXPECT_EQ(d0->records, 3u);
  EXPECT_EQ(d0->changes.size(), 2u) << "the launch's figures are the upload's";
  EXPECT_EQ(d0->reserved_high, 2 * kChunk);
  EXPECT_EQ(d0->reserved_high_seq, uploaded);
  EXPECT_EQ(d0->used_high, 2 * kChunk);
  EXPECT_EQ(d0->last.seq, trimmed);
  EXPECT_EQ(d0->last.reserved, 0u);
  EXPECT_FALSE(pool.at(0, uploaded - 1)) << "nothing recorded before the upload";
  EXPECT_EQ(pool.at(0, d.peak_seq)->used, 2 * kChunk);
  EXPECT_EQ(pool.at(0, launched)->seq, uploaded);
  EXPECT_EQ(pool.at(0, trimmed)->reserved, 0u);
}

// NCCL's pattern: a peer's handle imported, mapped, released, unmapped; our own handle retained
// through its address and released once more. Imported memory is mapped, not ours.
TEST(ImportedMemory, ImportedHandlesAreMappedNeverOursAndNeverUnknown) {
  Scenario s(10);
  s.create(11, 1, 2 * kMiB);
  s.map(11, 0x10000000, 2 * kMiB, 1);
  format::Event& retain = s.event(11, ApiId::cuMemRetainAllocationHandle);
  retain.f.set_handle(1);
  retain.f.set_address(0x10000000);
  s.event(11, ApiId::cuMemExportToShareableHandle).f.set_handle(1);
  s.release(11, 1);  // the retained reference: handle 1 stays
  s.event(11, ApiId::cuMemImportFromShareableHandle).f.set_handle(7);
  format::Event& peer_map = s.event(11, ApiId::cuMemMap);  // as recorded: with the device
  peer_map.f.set_address(0x20000000);
  peer_map.f.set_size(2 * kMiB);
  peer_map.f.set_handle(7);
  peer_map.f.set_device(0);
  s.release(11, 7);
  s.unmap(11, 0x20000000, 2 * kMiB);
  s.event(11, ApiId::cuMemImportFromShareableHandle).f.set_handle(8);  // still held at the end
  const auto mid = replay(s);
  EXPECT_EQ(device0(mid->replay).live_bytes, 2 * kMiB) << "handle 1 is still ours";
  EXPECT_EQ(device0(mid->replay).max_mapped_bytes, 4 * kMiB);
  // The views over live memory skip imported handles (they have no call site of ours): this
  // crashed `gmemhook summary` on the two-process sample before.
  const analysis::Fragmentation f = analysis::measure_fragmentation(mid->replay, mid->pools, 0);
  EXPECT_EQ(f.live_bytes, 2 * kMiB);
  s.unmap(11, 0x10000000, 2 * kMiB);
  s.release(11, 1);
  const auto run = replay(s);
  const Replay& r = run->replay;
  const auto& a = r.anomalies();
  EXPECT_EQ(a.unknown_releases, 0u);
  EXPECT_EQ(a.unknown_handle_maps, 0u);
  EXPECT_EQ(a.unknown_unmaps, 0u);
  EXPECT_EQ(device0(r).allocations, 1u) << "the import is not an allocation";
  EXPECT_EQ(device0(r).frees, 1u);
  EXPECT_EQ(device0(r).peak_bytes, 2 * kMiB);
  EXPECT_EQ(device0(r).live_bytes, 0u);
  EXPECT_EQ(r.handles().size(), 1u) << "handle 8, imported and never released";
}

// IPC handles and pool pointers: mapped from open to close (or free), never unknown.
TEST(ImportedMemory, IpcAndPoolPointersAreMappedUntilClosedOrFreed) {
  Scenario s(10);
  auto import = [&](ApiId api, uint64_t address, uint64_t size) {
    format::Event& ev = s.event(11, api);
    ev.f.set_address(address);
    ev.f.set_size(size);
    ev.f.set_device(0);
  };
  import(ApiId::cudaIpcOpenMemHandle, 0x30000000, 8 * kMiB);
  import(ApiId::cuMemPoolImportPointer, 0x40000000, 1 * kMiB);
  {
    const auto run = replay(s);
    EXPECT_EQ(device0(run->replay).mapped_bytes, 9 * kMiB);
    EXPECT_EQ(device0(run->replay).live_bytes, 0u) << "not this process's memory";
  }
  s.event(11, ApiId::cudaIpcCloseMemHandle).f.set_address(0x30000000);
  s.free(11, ApiId::cuMemFreeAsync, 0x40000000);
  const auto run = replay(s);
  EXPECT_EQ(device0(run->replay).mapped_bytes, 0u);
  EXPECT_EQ(device0(run->replay).allocations, 0u);
  EXPECT_EQ(run->replay.anomalies().unknown_frees, 0u);
  EXPECT_TRUE(run->replay.imports().empty());
}

}  // namespace
}  // namespace gmemhook::test_logs

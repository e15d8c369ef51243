// graph_memory.cu — CUDA graph memory nodes: memory that no malloc-family call
// returns, made by the launch of a graph.
//
// explicit_nodes() adds eight 64 MiB allocation nodes to a graph with cudaGraphAddMemAllocNode,
// instantiates and launches it once, then frees six of the addresses with cudaFree: two stay
// allocated (the leak). captured() captures a cudaMallocAsync of 16 MiB on a stream, launches
// the graph and frees the memory with cudaFreeAsync after the capture (freed). generic_nodes()
// makes a 32 MiB allocation node with cudaGraphAddNode in a child graph moved into its parent,
// launches the parent and frees the memory with cudaFree (freed). relaunched() instantiates a graph
// holding a 4 MiB allocation node with cudaGraphInstantiateFlagAutoFreeOnLaunch and launches it
// three times: each relaunch frees the previous launch's memory; the last one's stays (the second
// leak). Finally cudaDeviceGraphMemTrim gives the freed memory back.
//
// What the report should show (`gmemhook run build/bin/samples/graph_memory`, then `gmemhook
// leaks`): 2 × 64 MiB under cudaGraphAddMemAllocNode from explicit_nodes() and 4 MiB from
// relaunched(), each made live by a cudaGraphLaunch (whose stack is shown beside it); nothing
// from captured(); no "frees of addresses that were not live". compute-sanitizer --leak-check
// full attributes the same leaked memory to cuGraphLaunch. The program prints the bytes it
// leaks ("expected leaked N bytes") so a check can compare, and the driver's own figures for its
// graph memory pool (cudaDeviceGetGraphMemAttribute) before and after the trim: "used" is what
// the allocation nodes hold now (the independent figure the leak must equal: compute-sanitizer
// counts differently, see scripts/gpu_memory_kinds.py), "reserved" the physical memory the pool
// keeps, which only a trim gives back.
#include "graph_sample.h"

namespace {

constexpr std::size_t kNodeBytes = 64 * kMiB;
constexpr int kNodes = 8;
constexpr int kFreed = 6;
constexpr std::size_t kCapturedBytes = 16 * kMiB;
constexpr std::size_t kRelaunchedBytes = 4 * kMiB;
constexpr std::size_t kGenericBytes = 32 * kMiB;
}  // namespace

SAMPLE_FRAME void explicit_nodes(int device, cudaStream_t s) {
  void* addresses[kNodes];
  cudaGraph_t graph = graph_of_alloc_nodes(device, kNodeBytes, kNodes, addresses);
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  CHECK_CUDA(cudaGraphLaunch(exec, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  for (int i = 0; i < kNodes; ++i) fill(addresses[i], kNodeBytes, i, s);
  CHECK_CUDA(cudaStreamSynchronize(s));
  for (int i = 0; i < kFreed; ++i) CHECK_CUDA(cudaFree(addresses[i]));
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
}

SAMPLE_FRAME void captured(cudaStream_t s) {
  cudaGraph_t graph;
  void* buffer = nullptr;
  CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CHECK_CUDA(cudaMallocAsync(&buffer, kCapturedBytes, s));
  fill(buffer, kCapturedBytes, 7, s);
  CHECK_CUDA(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  CHECK_CUDA(cudaGraphLaunch(exec, s));
  CHECK_CUDA(cudaFreeAsync(buffer, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
}

// The generic node API and a child graph (CUDA 12.3+). Leaks nothing; says "generic graph
// nodes: ok" or which call CUDA refused (then the rest is skipped, so the leak figures stay as
// they are). Returns the bytes it freed with cudaFree.
SAMPLE_FRAME std::size_t generic_nodes(int device, cudaStream_t s) {
  cudaGraph_t child, parent;
  CHECK_CUDA(cudaGraphCreate(&child, 0));
  CHECK_CUDA(cudaGraphCreate(&parent, 0));
  cudaGraphNodeParams alloc{};
  alloc.type = cudaGraphNodeTypeMemAlloc;
  alloc.alloc.poolProps.allocType = cudaMemAllocationTypePinned;
  alloc.alloc.poolProps.location = {cudaMemLocationTypeDevice, device};
  alloc.alloc.bytesize = kGenericBytes;
  cudaGraphNodeParams sub{};
  sub.type = cudaGraphNodeTypeGraph;
  sub.graph.graph = child;
  sub.graph.ownership = cudaGraphChildGraphOwnershipMove;
  cudaGraphNode_t node;
  cudaGraphExec_t exec = nullptr;
  const char* refused = nullptr;
  cudaError_t e = cudaGraphAddNode(&node, child, nullptr, nullptr, 0, &alloc);
  if (e != cudaSuccess) refused = "cudaGraphAddNode (allocation node)";
  if (!refused && (e = cudaGraphAddNode(&node, parent, nullptr, nullptr, 0, &sub)) != cudaSuccess)
    refused = "cudaGraphAddNode (child graph, moved)";
  if (!refused && (e = cudaGraphInstantiate(&exec, parent, 0)) != cudaSuccess)
    refused = "cudaGraphInstantiate";
  if (!refused && (e = cudaGraphLaunch(exec, s)) != cudaSuccess) refused = "cudaGraphLaunch";
  if (!refused) {
    CHECK_CUDA(cudaStreamSynchronize(s));
    fill(alloc.alloc.dptr, kGenericBytes, 9, s);
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaFree(alloc.alloc.dptr));
  }
  if (exec) CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(parent));  // owns the moved child
  if (refused) {
    std::printf("generic graph nodes: %s refused: %s\n", refused, cudaGetErrorString(e));
    return 0;
  }
  std::printf("generic graph nodes: ok\n");
  return kGenericBytes;
}

SAMPLE_FRAME void* relaunched(int device, cudaStream_t s) {
  cudaGraph_t graph;
  CHECK_CUDA(cudaGraphCreate(&graph, 0));
  cudaMemAllocNodeParams p = node_params(kRelaunchedBytes, device);
  cudaGraphNode_t node;
  CHECK_CUDA(cudaGraphAddMemAllocNode(&node, graph, nullptr, 0, &p));
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch));
  for (int i = 0; i < 3; ++i) CHECK_CUDA(cudaGraphLaunch(exec, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  return p.dptr;  // the last launch's memory: never freed
}

int main() {
  const int device = 0;
  cudaStream_t s = graph_stream(device);
  explicit_nodes(device, s);
  captured(s);
  const std::size_t generic_freed = generic_nodes(device, s);
  void* kept = relaunched(device, s);
  print_graph_pool(device, "before trim");
  CHECK_CUDA(cudaDeviceGraphMemTrim(device));
  print_graph_pool(device, "after trim");
  CHECK_CUDA(cudaStreamDestroy(s));
  std::printf("graph_memory: %d allocation nodes of %zu bytes, %d freed by cudaFree; captured %zu "
              "bytes freed; relaunched node %p kept\n",
              kNodes, kNodeBytes, kFreed, kCapturedBytes, kept);
  std::printf("expected leaked %zu bytes\n", (kNodes - kFreed) * kNodeBytes + kRelaunchedBytes);
  std::printf("graph memory freed by cudaFree %zu bytes\n", kFreed * kNodeBytes + generic_freed);
  return 0;
}

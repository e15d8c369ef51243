// The scenario's part for graphs made of graphs: memory nodes made with the generic
// node API (cudaGraphAddNode / cuGraphAddNode), a child graph holding an allocation node moved
// into its parent, a child graph and a clone without memory nodes (CUDA refuses both with
// memory nodes: a refused clone is recorded as failed), a capture into an existing graph. Each
// hooked call is announced with say() just as in scenario.cpp; calls about nodes that are not
// memory nodes are not hooked events and are not announced.
#include <dlfcn.h>

#include <initializer_list>

#include "scenario.h"

void exercise_runtime_graph_nodes(void* runtime) {
  struct {
    decltype(&cudaGraphAddNode) add_node;
    decltype(&cudaGraphAddChildGraphNode) add_child;
    decltype(&cudaGraphClone) clone;
    decltype(&cudaStreamBeginCaptureToGraph) begin_to_graph, begin_to_graph_ptsz;
    decltype(&cudaGraphInstantiate) instantiate;
    decltype(&cudaGraphLaunch) launch;
    decltype(&cudaGraphExecDestroy) exec_destroy;
    decltype(&cudaGraphDestroy) destroy;
    decltype(&cudaStreamEndCapture) end;
    decltype(&cudaMallocAsync) malloc_async;
    decltype(&cudaFree) free_;
    decltype(&cudaDeviceGraphMemTrim) trim;
  } r{};
  rt(r.add_node, runtime, "cudaGraphAddNode");
  rt(r.add_child, runtime, "cudaGraphAddChildGraphNode");
  rt(r.clone, runtime, "cudaGraphClone");
  rt(r.begin_to_graph, runtime, "cudaStreamBeginCaptureToGraph");
  rt(r.begin_to_graph_ptsz, runtime, "cudaStreamBeginCaptureToGraph_ptsz");
  rt(r.instantiate, runtime, "cudaGraphInstantiate");
  rt(r.launch, runtime, "cudaGraphLaunch");
  rt(r.exec_destroy, runtime, "cudaGraphExecDestroy");
  rt(r.destroy, runtime, "cudaGraphDestroy");
  rt(r.end, runtime, "cudaStreamEndCapture");
  rt(r.malloc_async, runtime, "cudaMallocAsync");
  rt(r.free_, runtime, "cudaFree");
  rt(r.trim, runtime, "cudaDeviceGraphMemTrim");

  // A child graph with a 1 MiB allocation node (made with the generic API) and a node that is
  // not about memory, moved into its parent; the parent's launch makes the memory live.
  cudaGraph_t child, parent;
  CHECK_RT(cudaGraphCreate(&child, 0));
  CHECK_RT(cudaGraphCreate(&parent, 0));
  cudaGraphNodeParams alloc{};
  alloc.type = cudaGraphNodeTypeMemAlloc;
  alloc.alloc.poolProps.allocType = cudaMemAllocationTypePinned;
  alloc.alloc.poolProps.location = {cudaMemLocationTypeDevice, 0};
  alloc.alloc.bytesize = 1 << 20;
  cudaGraphNode_t node, empty;
  CHECK_RT(r.add_node(&node, child, nullptr, nullptr, 0, &alloc));
  say("cudaGraphAddNode", u(alloc.alloc.dptr), 0);
  cudaGraphNodeParams other{};
  other.type = cudaGraphNodeTypeEmpty;
  CHECK_RT(r.add_node(&empty, child, &node, nullptr, 1, &other));  // no memory: not recorded
  cudaGraph_t copy = nullptr;
  cudaError_t rc = r.clone(&copy, child);  // CUDA does not clone memory nodes
  say("cudaGraphClone", 0, rc);
  cudaGraphNodeParams sub{};
  sub.type = cudaGraphNodeTypeGraph;
  sub.graph.graph = child;
  sub.graph.ownership = cudaGraphChildGraphOwnershipMove;
  CHECK_RT(r.add_node(&node, parent, nullptr, nullptr, 0, &sub));
  say("cudaGraphAddNode", 0, 0);
  cudaGraphExec_t exec;
  say("cudaGraphInstantiate", 0, 0);
  CHECK_RT(r.instantiate(&exec, parent, 0));
  say("cudaGraphLaunch", 0, 0);
  CHECK_RT(r.launch(exec, nullptr));
  say("cudaFree", u(alloc.alloc.dptr), 0);
  CHECK_RT(r.free_(alloc.alloc.dptr));
  say("cudaGraphExecDestroy", 0, 0);
  CHECK_RT(r.exec_destroy(exec));
  say("cudaGraphDestroy", 0, 0);
  CHECK_RT(r.destroy(parent));

  // An allocation and its free node, both through the generic API, in a graph cloned first (no
  // memory nodes yet: allowed) and embedded in another as a cloned child.
  cudaGraph_t g, holder;
  CHECK_RT(cudaGraphCreate(&g, 0));
  CHECK_RT(cudaGraphCreate(&holder, 0));
  CHECK_RT(r.clone(&copy, g));
  say("cudaGraphClone", 0, 0);
  CHECK_RT(r.add_child(&node, holder, nullptr, 0, copy));
  say("cudaGraphAddChildGraphNode", 0, 0);
  alloc.alloc.bytesize = 2 << 20;
  CHECK_RT(r.add_node(&node, g, nullptr, nullptr, 0, &alloc));
  say("cudaGraphAddNode", u(alloc.alloc.dptr), 0);
  cudaGraphNodeParams free_node{};
  free_node.type = cudaGraphNodeTypeMemFree;
  free_node.free.dptr = alloc.alloc.dptr;
  CHECK_RT(r.add_node(&node, g, &node, nullptr, 1, &free_node));
  say("cudaGraphAddNode", u(alloc.alloc.dptr), 0);
  say("cudaGraphInstantiate", 0, 0);
  CHECK_RT(r.instantiate(&exec, g, 0));
  say("cudaGraphLaunch", 0, 0);
  CHECK_RT(r.launch(exec, nullptr));
  say("cudaGraphExecDestroy", 0, 0);
  CHECK_RT(r.exec_destroy(exec));
  say("cudaGraphDestroy", 0, 0);
  CHECK_RT(r.destroy(g));

  // Captured into an existing graph, with each capture ABI: 4 KiB each, freed after launch.
  cudaStream_t s;
  CHECK_RT(cudaStreamCreate(&s));
  for (bool ptsz : {false, true}) {
    CHECK_RT(cudaGraphCreate(&g, 0));
    say(ptsz ? "cudaStreamBeginCaptureToGraph_ptsz" : "cudaStreamBeginCaptureToGraph", 0, 0);
    CHECK_RT((ptsz ? r.begin_to_graph_ptsz : r.begin_to_graph)(s, g, nullptr, nullptr, 0,
                                                               cudaStreamCaptureModeGlobal));
    void* captured = nullptr;
    CHECK_RT(r.malloc_async(&captured, 4096, s));
    say("cudaMallocAsync", u(captured), 0);
    cudaGraph_t same;
    say("cudaStreamEndCapture", 0, 0);
    CHECK_RT(r.end(s, &same));
    say("cudaGraphInstantiate", 0, 0);
    CHECK_RT(r.instantiate(&exec, same, 0));
    say("cudaGraphLaunch", 0, 0);
    CHECK_RT(r.launch(exec, s));
    say("cudaFree", u(captured), 0);
    CHECK_RT(r.free_(captured));
    say("cudaGraphExecDestroy", 0, 0);
    CHECK_RT(r.exec_destroy(exec));
    say("cudaGraphDestroy", 0, 0);
    CHECK_RT(r.destroy(g));
  }
  CHECK_RT(cudaStreamDestroy(s));
  say("cudaDeviceGraphMemTrim", 0, 0);
  CHECK_RT(r.trim(0));
}

void exercise_driver_graph_nodes(Resolve r) {
  struct {
    decltype(&cuGraphAddNode_v2) add_node;
    decltype(&cuGraphAddChildGraphNode) add_child;
    decltype(&cuGraphClone) clone;
    decltype(&cuStreamBeginCaptureToGraph) begin_to_graph, begin_to_graph_ptsz;
    decltype(&cuGraphInstantiateWithFlags) instantiate;
    decltype(&cuGraphLaunch) launch;
    decltype(&cuGraphExecDestroy) exec_destroy;
    decltype(&cuGraphDestroy) destroy;
    decltype(&cuStreamEndCapture) end;
    decltype(&cuMemAllocAsync) alloc_async;
    decltype(&cuMemFree_v2) free_;
    decltype(&cuDeviceGraphMemTrim) trim;
  } d{};
  get(d.add_node, r, "cuGraphAddNode_v2", "cuGraphAddNode");
  get(d.add_child, r, "cuGraphAddChildGraphNode", "cuGraphAddChildGraphNode");
  get(d.clone, r, "cuGraphClone", "cuGraphClone");
  get(d.begin_to_graph, r, "cuStreamBeginCaptureToGraph", "cuStreamBeginCaptureToGraph");
  get(d.begin_to_graph_ptsz, r, "cuStreamBeginCaptureToGraph_ptsz", "cuStreamBeginCaptureToGraph",
      true);
  get(d.instantiate, r, "cuGraphInstantiateWithFlags", "cuGraphInstantiate");
  get(d.launch, r, "cuGraphLaunch", "cuGraphLaunch");
  get(d.exec_destroy, r, "cuGraphExecDestroy", "cuGraphExecDestroy");
  get(d.destroy, r, "cuGraphDestroy", "cuGraphDestroy");
  get(d.end, r, "cuStreamEndCapture", "cuStreamEndCapture");
  get(d.alloc_async, r, "cuMemAllocAsync", "cuMemAllocAsync");
  get(d.free_, r, "cuMemFree_v2", "cuMemFree");
  get(d.trim, r, "cuDeviceGraphMemTrim", "cuDeviceGraphMemTrim");

  // As the runtime's: a child with an allocation node moved into its parent.
  CUgraph child, parent;
  CHECK_DRV(cuGraphCreate(&child, 0));
  CHECK_DRV(cuGraphCreate(&parent, 0));
  CUgraphNodeParams alloc{};
  alloc.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  alloc.alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  alloc.alloc.poolProps.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  alloc.alloc.bytesize = 1 << 20;
  CUgraphNode node;
  CHECK_DRV(d.add_node(&node, child, nullptr, nullptr, 0, &alloc));
  say("cuGraphAddNode_v2", alloc.alloc.dptr, 0);
  CUgraph copy = nullptr;
  CUresult rc = d.clone(&copy, child);
  say("cuGraphClone", 0, rc);
  CUgraphNodeParams sub{};
  sub.type = CU_GRAPH_NODE_TYPE_GRAPH;
  sub.graph.graph = child;
  sub.graph.ownership = CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE;
  CHECK_DRV(d.add_node(&node, parent, nullptr, nullptr, 0, &sub));
  say("cuGraphAddNode_v2", 0, 0);
  CUgraphExec exec;
  say("cuGraphInstantiateWithFlags", 0, 0);
  CHECK_DRV(d.instantiate(&exec, parent, 0));
  say("cuGraphLaunch", 0, 0);
  CHECK_DRV(d.launch(exec, nullptr));
  say("cuMemFree_v2", alloc.alloc.dptr, 0);
  CHECK_DRV(d.free_(alloc.alloc.dptr));
  say("cuGraphExecDestroy", 0, 0);
  CHECK_DRV(d.exec_destroy(exec));
  say("cuGraphDestroy", 0, 0);
  CHECK_DRV(d.destroy(parent));

  // A clone and a cloned child without memory nodes, then captures into existing graphs.
  CUgraph g, holder;
  CHECK_DRV(cuGraphCreate(&g, 0));
  CHECK_DRV(cuGraphCreate(&holder, 0));
  CHECK_DRV(d.clone(&copy, g));
  say("cuGraphClone", 0, 0);
  CHECK_DRV(d.add_child(&node, holder, nullptr, 0, copy));
  say("cuGraphAddChildGraphNode", 0, 0);
  say("cuGraphDestroy", 0, 0);
  CHECK_DRV(d.destroy(g));
  CUstream s;
  CHECK_DRV(cuStreamCreate(&s, 0));
  for (bool ptsz : {false, true}) {
    CHECK_DRV(cuGraphCreate(&g, 0));
    say(ptsz ? "cuStreamBeginCaptureToGraph_ptsz" : "cuStreamBeginCaptureToGraph", 0, 0);
    CHECK_DRV((ptsz ? d.begin_to_graph_ptsz : d.begin_to_graph)(s, g, nullptr, nullptr, 0,
                                                                CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr captured = 0;
    CHECK_DRV(d.alloc_async(&captured, 4096, s));
    say("cuMemAllocAsync", captured, 0);
    CUgraph same;
    say("cuStreamEndCapture", 0, 0);
    CHECK_DRV(d.end(s, &same));
    say("cuGraphInstantiateWithFlags", 0, 0);
    CHECK_DRV(d.instantiate(&exec, same, 0));
    say("cuGraphLaunch", 0, 0);
    CHECK_DRV(d.launch(exec, s));
    say("cuMemFree_v2", captured, 0);
    CHECK_DRV(d.free_(captured));
    say("cuGraphExecDestroy", 0, 0);
    CHECK_DRV(d.exec_destroy(exec));
    say("cuGraphDestroy", 0, 0);
    CHECK_DRV(d.destroy(g));
  }
  CHECK_DRV(cuStreamDestroy(s));
  say("cuDeviceGraphMemTrim", 0, 0);
  CHECK_DRV(d.trim(0));
}

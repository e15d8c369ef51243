// CUDA graphs on the simulated device, as far as memory goes: stream capture, memory nodes
// (explicit or captured from cuMemAllocAsync / cuMemFreeAsync), instantiation, launch. Kernels
// never run here, so a graph is just its memory nodes in the order they were added. Like CUDA,
// an allocation node's address is fixed when the node is made and its memory is allocated by
// each launch that finds it free; it stays allocated until a free node, cuMemFree or an
// auto-free-on-launch relaunch gives it back. The device's graph memory pool keeps physical
// memory in 32 MiB chunks (as CUPTI shows on an H200): a launch, or an upload before it
// (cuGraphUpload allocates the exec's nodes ahead of its first launch: the H200's driver counts
// them as used right after it), reserves what its nodes need beyond what the pool already
// holds, frees leave it reserved, and only a trim gives back the chunks no live allocation needs.
// cuDeviceGetGraphMemAttribute reports both figures; its used figure counts whole chunks, packing
// the live allocations of one graph's nodes together (see graph_memory_used). An uploaded exec
// destroyed before any launch gives back what its upload allocated.
#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "cuda_decls.h"
#include "device_state.h"

using namespace fakecuda;

struct MemNode {
  bool alloc = true;
  uintptr_t address = 0;
  size_t size = 0, charged = 0;
  int device = 0;
  uint64_t graph = 0;  // id of the graph the node was made in: its nodes share pool chunks
};

namespace {
// Made under state().mu, like every graph. Ids, not pointers: a new graph may reuse a freed one's.
uint64_t next_graph_id() {
  static uint64_t last = 0;
  return ++last;
}
}  // namespace

struct CUgraph_st {
  std::vector<MemNode> nodes;
  uint64_t id = next_graph_id();
};

struct CUgraphExec_st {
  std::vector<MemNode> nodes;
  unsigned long long flags = 0;
  // Addresses an upload allocated that no launch has run since: the next launch runs on them,
  // and destroying the exec before that gives them back.
  std::set<uintptr_t> uploaded;
};

struct CUgraphNode_st {};

namespace {

// Guarded by state().mu, like the allocations the launches touch.
std::set<CUgraph> g_graphs;
std::set<CUgraphExec> g_execs;
std::map<CUstream, CUgraph> g_capturing;
// Addresses of every allocation node ever made: what a free node may name.
std::map<uintptr_t, MemNode> g_node_memory;
// Node handles are only ever compared; one object serves them all.
CUgraphNode_st g_node;

constexpr size_t kGraphPoolChunk = 32u << 20;
struct GraphPool {
  size_t reserved = 0, used_high = 0, reserved_high = 0;
};
std::map<int, GraphPool> g_pools;  // by device

// Bytes that allocation nodes hold now on `device`, in the pool's chunks, the live allocations of
// one graph's nodes packed together. What the H200 showed (driver 580, gpu-check row graphupload):
// 64 MiB used right after uploading a graph of 3 x 4 MiB + 40 MiB nodes (52 MiB
// packed, not 32 + 32 + 32 + 64 rounded one by one); 64 MiB once the 40 MiB was freed and another
// graph's 16 MiB node was uploaded (12 and 16 MiB in two graphs: a chunk each, not 28 MiB in one);
// 32 MiB after that second exec was destroyed unlaunched and the pool trimmed. Row graphmem's
// figure (160 MiB for 2 x 64 MiB of one graph + 4 MiB of another) fits the same rule.
size_t graph_memory_used(int device) {
  std::map<uint64_t, size_t> by_graph;
  for (const auto& [base, a] : state().allocations)
    if (a.kind == AllocKind::Graph && a.device == device)
      by_graph[g_node_memory[base].graph] += a.size;
  size_t used = 0;
  for (const auto& [graph, bytes] : by_graph) used += round_up(bytes, kGraphPoolChunk);
  return used;
}

// After a launch or an upload (grow = true) or a trim: the pool holds whole chunks covering what
// is used. (The H200 reserved 96 MiB for the 64 MiB used after the upload above, in three 32 MiB
// records; how it splits them is not modelled: here it reserves what is used.)
void settle_graph_pool(int device, bool grow) {
  GraphPool& p = g_pools[device];
  const size_t used = graph_memory_used(device);
  p.reserved = grow ? std::max(p.reserved, used) : used;
  p.used_high = std::max(p.used_high, used);
  p.reserved_high = std::max(p.reserved_high, p.reserved);
}

CUresult add_alloc_node(CUgraph graph, int device, size_t size, uintptr_t* out) {
  if (size == 0 || !valid_device(device)) return CUDA_ERROR_INVALID_VALUE;
  MemNode n;
  n.address = 0;
  n.graph = graph->id;
  n.size = size;
  n.charged = round_up(size, kAllocAlignment);
  n.device = device;
  if (n.charged > state().devices[device].capacity) return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = map_backing(n.charged);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  n.address = reinterpret_cast<uintptr_t>(p);
  graph->nodes.push_back(n);
  g_node_memory[n.address] = n;
  *out = n.address;
  return CUDA_SUCCESS;
}

// An allocation node as cuGraphAddMemAllocNode and cuGraphAddNode make one: only pinned device
// memory. The caller holds state().mu.
CUresult add_alloc_node_from(CUgraph graph, const CUmemPoolProps& pool, size_t size, CUdeviceptr* out) {
  if (pool.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      pool.location.type != CU_MEM_LOCATION_TYPE_DEVICE || !g_graphs.count(graph))
    return CUDA_ERROR_INVALID_VALUE;
  uintptr_t p = 0;
  CUresult r = add_alloc_node(graph, pool.location.id, size, &p);
  if (r == CUDA_SUCCESS) *out = p;
  return r;
}

CUresult add_free_node(CUgraph graph, uintptr_t address) {
  auto it = g_node_memory.find(address);
  if (it == g_node_memory.end()) return CUDA_ERROR_INVALID_VALUE;
  MemNode n = it->second;
  n.alloc = false;
  graph->nodes.push_back(n);
  return CUDA_SUCCESS;
}

bool has_memory_nodes(CUgraph graph) { return !graph->nodes.empty(); }

// Capture into `into` (cuStreamBeginCaptureToGraph), or into a new graph (nullptr).
CUresult begin_capture(CUstream stream, CUgraph into = nullptr) {
  if (CUresult r = require_init()) return r;
  // Like CUDA: the legacy default stream cannot be captured.
  if (stream == nullptr || stream == CU_STREAM_LEGACY) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  std::lock_guard lock(state().mu);
  if (stream != CU_STREAM_PER_THREAD && !state().streams.count(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (g_capturing.count(stream)) return CUDA_ERROR_ILLEGAL_STATE;
  if (into && !g_graphs.count(into)) return CUDA_ERROR_INVALID_VALUE;
  CUgraph g = into ? into : new CUgraph_st;
  g_graphs.insert(g);
  g_capturing[stream] = g;
  return CUDA_SUCCESS;
}

CUresult end_capture(CUstream stream, CUgraph* graph) {
  if (!graph) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  auto it = g_capturing.find(stream);
  if (it == g_capturing.end()) return CUDA_ERROR_ILLEGAL_STATE;
  *graph = it->second;
  g_capturing.erase(it);
  return CUDA_SUCCESS;
}

CUresult instantiate(CUgraphExec* exec, CUgraph graph, unsigned long long flags) {
  if (!exec) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  if (!g_graphs.count(graph)) return CUDA_ERROR_INVALID_VALUE;
  auto* e = new CUgraphExec_st{graph->nodes, flags, {}};
  g_execs.insert(e);
  *exec = e;
  return CUDA_SUCCESS;
}

void free_graph_memory(uintptr_t address) {
  auto it = state().allocations.find(address);
  if (it != state().allocations.end() && it->second.kind == AllocKind::Graph) remove_allocation(it);
}

// Allocates the exec's allocation nodes that are not allocated now (a launch, or an upload ahead
// of it), all or none; `made` gets their addresses. A launch passes `refuse_live`: CUDA refuses to
// launch a graph whose allocation an earlier launch left allocated, unless the upload since made
// it (`exec->uploaded`). The caller holds state().mu and settles the pool.
CUresult allocate_nodes(CUgraphExec exec, CUctx_st* ctx, bool refuse_live,
                        std::vector<uintptr_t>& made) {
  State& s = state();
  std::map<int, size_t> wanted;  // by device; checked before anything changes
  for (const MemNode& n : exec->nodes)
    if (n.alloc) {
      if (s.allocations.count(n.address)) {
        if (refuse_live && !exec->uploaded.count(n.address)) return CUDA_ERROR_INVALID_VALUE;
        continue;
      }
      wanted[n.device] += n.charged;
    }
  for (const auto& [device, bytes] : wanted)
    if (bytes > s.devices[device].capacity - s.devices[device].used) return CUDA_ERROR_OUT_OF_MEMORY;
  for (const MemNode& n : exec->nodes) {
    if (!n.alloc || s.allocations.count(n.address)) continue;
    s.devices[n.device].used += n.charged;
    Allocation a;
    a.base = n.address;
    a.size = n.size;
    a.charged = n.charged;
    a.kind = AllocKind::Graph;
    a.device = n.device;
    a.ctx = ctx;
    a.id = s.next_id++;
    s.allocations.emplace(a.base, a);
    made.push_back(n.address);
  }
  return CUDA_SUCCESS;
}

void settle_graph_pools(const CUgraphExec_st& exec) {
  std::set<int> devices;
  for (const MemNode& n : exec.nodes) devices.insert(n.device);
  for (int device : devices) settle_graph_pool(device, true);
}

// What a launch or an upload needs first: an initialized driver and a current context.
CUresult initialized_context(CUctx_st** ctx) {
  if (CUresult r = require_init()) return r;
  return current_context(ctx);
}

CUresult launch(CUgraphExec exec) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = initialized_context(&ctx)) return r;
  std::lock_guard lock(state().mu);
  if (!g_execs.count(exec)) return CUDA_ERROR_INVALID_VALUE;
  // Auto-free on launch: what the previous launch left allocated goes first; what an upload
  // allocated since is this launch's own memory already.
  if (exec->flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)
    for (const MemNode& n : exec->nodes)
      if (n.alloc && !exec->uploaded.count(n.address)) free_graph_memory(n.address);
  std::vector<uintptr_t> made;
  if (CUresult r = allocate_nodes(exec, ctx, true, made)) return r;
  exec->uploaded.clear();  // from now on the launch's, as if it had allocated them
  for (const MemNode& n : exec->nodes)
    if (!n.alloc) free_graph_memory(n.address);
  settle_graph_pools(*exec);
  return CUDA_SUCCESS;
}

// An upload allocates the exec's allocation nodes that are not allocated now, ahead of its first
// launch: the H200's driver counts them as used right after cuGraphUpload (gpu-check row
// graphupload). Free nodes wait for the launch. One an earlier launch left allocated
// stays as it is: the next launch treats it as that launch's.
CUresult upload(CUgraphExec exec) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = initialized_context(&ctx)) return r;
  std::lock_guard lock(state().mu);
  if (!g_execs.count(exec)) return CUDA_ERROR_INVALID_VALUE;
  std::vector<uintptr_t> made;
  if (CUresult r = allocate_nodes(exec, ctx, false, made)) return r;
  exec->uploaded.insert(made.begin(), made.end());
  settle_graph_pools(*exec);
  return CUDA_SUCCESS;
}

}  // namespace

namespace fakecuda {

CUgraph capturing_graph(CUstream stream) {
  auto it = g_capturing.find(stream);
  return it == g_capturing.end() ? nullptr : it->second;
}

CUresult capture_alloc_node(CUgraph graph, int device, size_t size, uintptr_t* out) {
  return add_alloc_node(graph, device, size, out);
}

CUresult capture_free_node(CUgraph graph, uintptr_t address) { return add_free_node(graph, address); }

}  // namespace fakecuda

FAKECUDA_API CUresult cuGraphCreate(CUgraph* graph, unsigned int flags) {
  if (CUresult r = require_init()) return r;
  if (!graph || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  *graph = new CUgraph_st;
  g_graphs.insert(*graph);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode) {
  return begin_capture(stream);
}
FAKECUDA_API CUresult cuStreamBeginCapture_ptsz(CUstream stream, CUstreamCaptureMode) {
  return begin_capture(stream);
}
FAKECUDA_API CUresult cuStreamEndCapture(CUstream stream, CUgraph* graph) {
  return end_capture(stream, graph);
}
FAKECUDA_API CUresult cuStreamEndCapture_ptsz(CUstream stream, CUgraph* graph) {
  return end_capture(stream, graph);
}

FAKECUDA_API CUresult cuGraphAddMemAllocNode(CUgraphNode* node, CUgraph graph, const CUgraphNode*,
                                             size_t, CUDA_MEM_ALLOC_NODE_PARAMS* params) {
  if (CUresult r = require_init()) return r;
  if (!node || !params) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  CUresult r = add_alloc_node_from(graph, params->poolProps, params->bytesize, &params->dptr);
  if (r == CUDA_SUCCESS) *node = &g_node;
  return r;
}

FAKECUDA_API CUresult cuGraphAddMemFreeNode(CUgraphNode* node, CUgraph graph, const CUgraphNode*,
                                            size_t, CUdeviceptr dptr) {
  if (CUresult r = require_init()) return r;
  if (!node) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  if (!g_graphs.count(graph)) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = add_free_node(graph, dptr);
  if (r == CUDA_SUCCESS) *node = &g_node;
  return r;
}

FAKECUDA_API CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph,
                                                  unsigned long long flags) {
  return instantiate(exec, graph, flags);
}
FAKECUDA_API CUresult cuGraphInstantiateWithParams(CUgraphExec* exec, CUgraph graph,
                                                   CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  if (!params) return CUDA_ERROR_INVALID_VALUE;
  params->result_out = CUDA_GRAPH_INSTANTIATE_SUCCESS;
  CUresult r = instantiate(exec, graph, params->flags);
  // Instantiation may upload at once (into params->hUploadStream), as cuGraphUpload would.
  if (r == CUDA_SUCCESS && (params->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD)) r = upload(*exec);
  return r;
}
FAKECUDA_API CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec* exec, CUgraph graph,
                                                        CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  return cuGraphInstantiateWithParams(exec, graph, params);
}

FAKECUDA_API CUresult cuGraphLaunch(CUgraphExec exec, CUstream) { return launch(exec); }
FAKECUDA_API CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream) { return launch(exec); }
FAKECUDA_API CUresult cuGraphUpload(CUgraphExec exec, CUstream) { return upload(exec); }
FAKECUDA_API CUresult cuGraphUpload_ptsz(CUgraphExec exec, CUstream) { return upload(exec); }

// Destroying an exec or a graph frees nothing a launch allocated: that memory stays until it is
// freed (CUDA's rule too). What an upload allocated for a launch that never came goes with the
// exec: on the H200 the used figure fell back to the first graph's 32 MiB after such an exec was
// destroyed (row graphupload).
FAKECUDA_API CUresult cuGraphExecDestroy(CUgraphExec exec) {
  std::lock_guard lock(state().mu);
  if (g_execs.erase(exec) == 0) return CUDA_ERROR_INVALID_VALUE;
  for (uintptr_t address : exec->uploaded) free_graph_memory(address);
  delete exec;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuGraphDestroy(CUgraph graph) {
  std::lock_guard lock(state().mu);
  if (g_graphs.erase(graph) == 0) return CUDA_ERROR_INVALID_VALUE;
  delete graph;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceGraphMemTrim(CUdevice device) {
  if (CUresult r = require_init()) return r;
  if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(state().mu);
  settle_graph_pool(device, false);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                                   void* value) {
  if (CUresult r = require_init()) return r;
  if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  const GraphPool p = g_pools[device];
  cuuint64_t v = 0;
  switch (attr) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
      v = graph_memory_used(device);
      break;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
      v = p.used_high;
      break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
      v = p.reserved;
      break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
      v = p.reserved_high;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  *static_cast<cuuint64_t*>(value) = v;
  return CUDA_SUCCESS;
}

// The generic node API, as far as memory goes: allocation and free nodes as their own entry
// points make them, a child graph node (memory nodes only when the child is moved into the
// parent, as CUDA requires), and any other node type as a node without memory.
FAKECUDA_API CUresult cuGraphAddNode_v2(CUgraphNode* node, CUgraph graph, const CUgraphNode*,
                                        const CUgraphEdgeData*, size_t, CUgraphNodeParams* params) {
  if (CUresult r = require_init()) return r;
  if (!node || !params) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  if (!g_graphs.count(graph)) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = CUDA_SUCCESS;
  switch (params->type) {
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      r = add_alloc_node_from(graph, params->alloc.poolProps, params->alloc.bytesize,
                              &params->alloc.dptr);
      break;
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      r = add_free_node(graph, params->free.dptr);
      break;
    case CU_GRAPH_NODE_TYPE_GRAPH: {
      CUgraph child = params->graph.graph;
      if (!g_graphs.count(child) || child == graph) return CUDA_ERROR_INVALID_VALUE;
      if (has_memory_nodes(child) && params->graph.ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE)
        return CUDA_ERROR_INVALID_VALUE;
      graph->nodes.insert(graph->nodes.end(), child->nodes.begin(), child->nodes.end());
      break;
    }
    default:
      break;
  }
  if (r == CUDA_SUCCESS) *node = &g_node;
  return r;
}

// Clones the child, which therefore may hold no memory nodes (CUDA's rule).
FAKECUDA_API CUresult cuGraphAddChildGraphNode(CUgraphNode* node, CUgraph graph, const CUgraphNode*,
                                               size_t, CUgraph child) {
  if (CUresult r = require_init()) return r;
  if (!node) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  if (!g_graphs.count(graph) || !g_graphs.count(child) || has_memory_nodes(child))
    return CUDA_ERROR_INVALID_VALUE;
  *node = &g_node;
  return CUDA_SUCCESS;
}

// CUDA does not clone graphs with memory nodes.
FAKECUDA_API CUresult cuGraphClone(CUgraph* copy, CUgraph original) {
  if (CUresult r = require_init()) return r;
  if (!copy) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  if (!g_graphs.count(original) || has_memory_nodes(original)) return CUDA_ERROR_INVALID_VALUE;
  *copy = new CUgraph_st;
  g_graphs.insert(*copy);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuStreamBeginCaptureToGraph(CUstream stream, CUgraph graph,
                                                  const CUgraphNode*, const CUgraphEdgeData*,
                                                  size_t, CUstreamCaptureMode) {
  if (!graph) return CUDA_ERROR_INVALID_VALUE;
  return begin_capture(stream, graph);
}
FAKECUDA_API CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream stream, CUgraph graph,
                                                       const CUgraphNode* deps,
                                                       const CUgraphEdgeData* edges, size_t n,
                                                       CUstreamCaptureMode mode) {
  return cuStreamBeginCaptureToGraph(stream, graph, deps, edges, n, mode);
}

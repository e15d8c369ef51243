// The replay of CUDA graph memory nodes and of imported memory (the model is in
// replay.h, the graphs' bookkeeping in graph_memory.h).
#include "analyzer/model/replay.h"

#include <algorithm>
#include <utility>

namespace gmemhook::analysis {

using format::EventKind;
using format::MemoryType;

// A stream-ordered allocation or free on a stream under capture allocates nothing: it is a node
// of the graph being captured. (A failed one is an ordinary failed call.)
void Replay::capture_node(const format::Event& ev, const format::ApiInfo& api, uint32_t stack) {
  if (ev.result != 0) return api.kind == EventKind::Alloc ? alloc(ev, api, stack) : free(ev, stack);
  graphs_.add_node(0, ev.f.stream, GraphNode{api.kind == EventKind::Alloc, ev, stack});
}

void Replay::end_capture(const format::Event& ev) {
  if (ev.result != 0) return;
  // Logs written before format version 4 do not say which graph a capture made, and have no
  // instantiations: their captured allocations count as they did then, once, here.
  const bool graph_known = ev.f.has(format::kHasGraph);
  std::vector<GraphNode> nodes = graphs_.end_capture(ev.f.stream, ev.f.graph, graph_known);
  for (GraphNode& n : nodes) {
    n.made.f.mask &= static_cast<uint16_t>(~format::kHasStream);  // or it would be a node again
    if (n.alloc)
      alloc(n.made, *apis_[n.made.api], n.stack);
    else
      free(n.made, n.stack);
  }
}

void Replay::graph_call(const format::Event& ev, const format::ApiInfo& api, uint32_t stack) {
  // cudaGraphAddNode makes either kind of memory node: a free node is marked IsFree.
  const EventKind kind = format::event_kind_of(api.kind, ev.f.mask);
  if (ev.result != 0) {
    if (kind == EventKind::GraphAllocNode) ++anomalies_.failed_other;
    return;
  }
  switch (kind) {
    case EventKind::GraphAllocNode:
    case EventKind::GraphFreeNode:
      return graphs_.add_node(ev.f.graph, 0,
                              GraphNode{kind == EventKind::GraphAllocNode, ev, stack});
    case EventKind::GraphChild:
      return graphs_.embed(ev.f.graph, ev.f.handle);
    case EventKind::GraphClone:
      return graphs_.clone(ev.f.handle, ev.f.graph);
    case EventKind::GraphInstantiate:
      return graphs_.instantiate(ev.f.handle, ev.f.graph,
                                 ev.f.flags & 1);  // cudaGraphInstantiateFlagAutoFreeOnLaunch
    case EventKind::GraphExecDestroy:
      destroy_exec(ev, stack);
      return graphs_.destroy_exec(ev.f.handle);  // what its launches allocated stays live
    case EventKind::GraphDestroy:
      return graphs_.destroy_graph(ev.f.graph);
    default:
      return;
  }
}

namespace {
// A node's allocation as the call that runs it (a launch or an upload) makes it.
format::Event as_run_by(const GraphNode& n, const format::Event& ev) {
  format::Event e = n.made;
  e.seq = ev.seq;
  e.time_ns = ev.time_ns;
  e.result = 0;
  // Graph memory comes from the graph's own pool, not from the stream's.
  e.f.mask &= static_cast<uint16_t>(~(format::kHasStream | format::kHasPool));
  return e;
}
}  // namespace

// An upload (cudaGraphUpload, or an instantiation with the upload flag) allocates the exec's
// allocation nodes ahead of its first launch: the H200's driver counts them as used right after
// cudaGraphUpload (gpu-check row graphupload, driver 580: 64 MiB used for 52 MiB of nodes, in
// whole 32 MiB granules). They become live under the node's call site with the upload's stack
// beside it. Free nodes wait for the launch; a node an earlier launch left live stays that
// launch's.
void Replay::upload(const format::Event& ev, uint32_t stack) {
  if (ev.result != 0) return;
  const GraphExec* exec = graphs_.exec(ev.f.handle);
  if (!exec) return;
  launch_stack_ = stack;
  launch_api_ = ev.api;
  std::vector<uint64_t>& made = uploaded_[ev.f.handle];
  for (const GraphNode& n : exec->nodes) {
    const format::Event e = as_run_by(n, ev);
    if (n.alloc && !live_.find(e.f.address)) {
      alloc(e, *apis_[e.api], n.stack);
      made.push_back(e.f.address);
    }
  }
  if (made.empty()) uploaded_.erase(ev.f.handle);
  launch_stack_ = 0;
}

// What an upload made live for a launch that never came goes with the exec: on the H200 the used
// figure fell back to the other graph's granule once such an exec was destroyed (row
// graphupload). What launches made live stays (CUDA's rule for graph memory).
void Replay::destroy_exec(const format::Event& ev, uint32_t stack) {
  auto it = uploaded_.find(ev.f.handle);
  if (it == uploaded_.end()) return;
  for (uint64_t address : it->second) {
    if (!live_.find(address)) continue;  // freed by hand meanwhile
    format::Event e = ev;
    e.f.address = address;
    free(e, stack);
  }
  uploaded_.erase(it);
}

// A launch runs its exec's memory nodes in order: an allocation node whose memory is not live
// becomes live (under the node's call site, with this launch's stack beside it); a free node
// frees. With auto-free on launch, what the previous launch left live is freed first. What an
// upload made live since the last launch is this launch's memory already.
void Replay::launch(const format::Event& ev, uint32_t stack) {
  if (ev.result != 0) return;
  const GraphExec* exec = graphs_.exec(ev.f.handle);
  if (!exec) return;
  std::vector<uint64_t> uploaded;
  if (auto it = uploaded_.find(ev.f.handle); it != uploaded_.end()) {
    uploaded = std::move(it->second);
    uploaded_.erase(it);
  }
  auto made_by_upload = [&](uint64_t address) {
    return std::find(uploaded.begin(), uploaded.end(), address) != uploaded.end();
  };
  launch_stack_ = stack;  // kept beside the sites of the memory this launch makes live
  launch_api_ = ev.api;
  if (exec->auto_free)
    for (const GraphNode& n : exec->nodes)
      if (n.alloc && live_.find(n.made.f.address) && !made_by_upload(n.made.f.address)) {
        format::Event e = as_run_by(n, ev);
        e.api = ev.api;  // freed by this launch
        free(e, stack);
      }
  for (const GraphNode& n : exec->nodes) {
    const format::Event e = as_run_by(n, ev);
    const bool live = live_.find(e.f.address) != nullptr;
    if (n.alloc && !live) {
      alloc(e, *apis_[e.api], n.stack);
    } else if (!n.alloc && live) {
      free(e, n.stack);
    }
  }
  launch_stack_ = 0;
}

// IPC handles and pool pointers arrive as an address (and the size the driver gave for it);
// cuMemImportFromShareableHandle as a handle, whose size only its mappings tell.
void Replay::import(const format::Event& ev, uint32_t stack) {
  if (ev.result != 0) {
    ++anomalies_.failed_other;
    return;
  }
  if (!ev.f.has(format::kHasAddress)) {
    // Importing a handle this process made and exported gives it back: one more reference.
    auto [it, added] = handles_.try_emplace(ev.f.handle);
    if (added)
      it->second.imported = true;
    else
      ++it->second.retains;
    return;
  }
  const uint16_t index = series_index(ev.f.device, MemoryType::Device);
  Series& s = series_[index];
  s.mapped_bytes += ev.f.size;
  s.max_mapped_bytes = std::max(s.max_mapped_bytes, s.mapped_bytes);
  imports_[ev.f.address] = {ev.f.size, 0, ev.seq, stack, index, ev.api};
}

void Replay::import_close(const format::Event& ev, uint32_t stack) {
  if (ev.result != 0) {
    ++anomalies_.failed_frees;
    return;
  }
  if (!free_imported_or_node(ev)) unmatched(ev, ev.f.address, stack, anomalies_.unknown_frees);
}

// The handle of memory mapped here, one reference more; a handle this log never saw made (an
// import, or made before the log began) is another allocation's memory.
void Replay::retain(const format::Event& ev) {
  if (ev.result != 0) return;
  auto [it, added] = handles_.try_emplace(ev.f.handle);
  if (added) {
    it->second.imported = true;
    return;
  }
  ++it->second.retains;
}

// A free of an address that is not live: imported memory given back (a pool pointer freed, an
// IPC handle closed), or graph memory whose launch the log never saw. True when it was either.
bool Replay::free_imported_or_node(const format::Event& ev) {
  auto it = imports_.find(ev.f.address);
  if (it != imports_.end()) {
    series_[it->second.series].mapped_bytes -= it->second.size;
    imports_.erase(it);
    return true;
  }
  if (graphs_.is_node_address(ev.f.address)) {
    ++anomalies_.unlaunched_graph_frees;
    return true;
  }
  return false;
}

}  // namespace gmemhook::analysis

// The memory nodes of CUDA graphs, as the replay needs them. An allocation node's
// address is fixed when the node is made (cudaGraphAddMemAllocNode, or a cudaMallocAsync on a
// stream under capture), but its memory only comes into being when a launch (or an upload of the
// exec ahead of it) runs the node, and stays until a free node, a cudaFree, or a relaunch of an
// exec instantiated with auto-free on launch gives it back. Graphs and execs only say which
// nodes a launch runs, in the order they were added (a valid order: a node's dependencies exist
// before it).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gmemhook/codec.h"

namespace gmemhook::analysis {

struct GraphNode {
  bool alloc = true;  // else a free node
  format::Event made;  // the event that made the node (its address, size, device, memory, api)
  uint32_t stack = 0;  // StackInterner id of where the node was made
};

struct GraphExec {
  std::vector<GraphNode> nodes;
  bool auto_free = false;  // cudaGraphInstantiateFlagAutoFreeOnLaunch
};

class GraphMemory {
 public:
  void begin_capture(uint64_t stream) { capturing_[stream]; }
  // Asked per stream-ordered allocation and free: an empty map is answered without hashing.
  bool capturing(uint64_t stream) const {
    return !capturing_.empty() && capturing_.count(stream) != 0;
  }
  bool capturing_any() const { return !capturing_.empty(); }
  // The nodes captured on `stream` become graph `graph`'s. Returns them as well, for a log that
  // does not say which graph (written before format version 4): the caller decides.
  std::vector<GraphNode> end_capture(uint64_t stream, uint64_t graph, bool graph_known);
  // A node of graph `graph`, or of the graph being captured on `stream` (graph 0).
  void add_node(uint64_t graph, uint64_t stream, GraphNode node);
  // A child graph node: `parent` now also runs `child`'s memory nodes. CUDA refuses a child with
  // memory nodes when it clones the child (cudaGraphAddChildGraphNode), and moves them into the
  // parent with cudaGraphChildGraphOwnershipMove (cudaGraphAddNode): either way the parent's
  // launches run them.
  void embed(uint64_t parent, uint64_t child);
  // cudaGraphClone: the clone runs the original's nodes (CUDA 13 refuses to clone a graph with
  // memory nodes; should it ever allow it, the clone's launches make the same memory live).
  void clone(uint64_t copy, uint64_t original);
  void instantiate(uint64_t exec, uint64_t graph, bool auto_free);
  void destroy_exec(uint64_t exec) { execs_.erase(exec); }
  void destroy_graph(uint64_t graph) { graphs_.erase(graph); }

  // The exec a launch runs, or nullptr when it was instantiated before the log began (or holds
  // no memory nodes worth knowing).
  const GraphExec* exec(uint64_t handle) const;
  // Whether `address` is the address of an allocation node seen so far.
  bool is_node_address(uint64_t address) const { return node_addresses_.count(address) != 0; }

 private:
  std::unordered_map<uint64_t, std::vector<GraphNode>> capturing_;  // by stream
  std::unordered_map<uint64_t, std::vector<GraphNode>> graphs_;
  std::unordered_map<uint64_t, GraphExec> execs_;
  std::unordered_set<uint64_t> node_addresses_;
};

}  // namespace gmemhook::analysis

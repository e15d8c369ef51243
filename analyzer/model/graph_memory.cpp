// Graph memory nodes (see graph_memory.h).
#include "analyzer/model/graph_memory.h"

namespace gmemhook::analysis {

std::vector<GraphNode> GraphMemory::end_capture(uint64_t stream, uint64_t graph, bool graph_known) {
  auto it = capturing_.find(stream);
  if (it == capturing_.end()) return {};
  std::vector<GraphNode> nodes = std::move(it->second);
  capturing_.erase(it);
  if (!graph_known) return nodes;
  auto& g = graphs_[graph];
  g.insert(g.end(), nodes.begin(), nodes.end());
  return {};
}

void GraphMemory::add_node(uint64_t graph, uint64_t stream, GraphNode node) {
  if (node.alloc) node_addresses_.insert(node.made.f.address);
  if (graph == 0) {
    auto it = capturing_.find(stream);
    if (it != capturing_.end()) it->second.push_back(std::move(node));
    return;
  }
  graphs_[graph].push_back(std::move(node));
}

void GraphMemory::embed(uint64_t parent, uint64_t child) {
  auto c = graphs_.find(child);
  if (c == graphs_.end() || c->second.empty()) return;
  std::vector<GraphNode> nodes = c->second;  // a copy: graphs_[parent] may rehash
  auto& p = graphs_[parent];
  p.insert(p.end(), nodes.begin(), nodes.end());
}

void GraphMemory::clone(uint64_t copy, uint64_t original) {
  auto o = graphs_.find(original);
  if (o == graphs_.end() || o->second.empty()) return;
  std::vector<GraphNode> nodes = o->second;
  graphs_[copy] = std::move(nodes);
}

void GraphMemory::instantiate(uint64_t exec, uint64_t graph, bool auto_free) {
  auto g = graphs_.find(graph);
  if (g == graphs_.end() || g->second.empty()) {
    execs_.erase(exec);  // a graph without memory nodes: its launches change nothing
    return;
  }
  execs_[exec] = GraphExec{g->second, auto_free};
}

const GraphExec* GraphMemory::exec(uint64_t handle) const {
  auto it = execs_.find(handle);
  return it == execs_.end() ? nullptr : &it->second;
}

}  // namespace gmemhook::analysis

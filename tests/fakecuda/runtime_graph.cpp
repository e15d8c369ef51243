// CUDA graphs on the simulated device: stream capture, instantiation and launch. Nothing is
// recorded into the graph (kernels never run here); what matters to the recorder's tests is that
// the calls exist with CUDA's return codes, and allocations made while capturing are ordinary.
#include <mutex>
#include <set>

#include "runtime_state.h"

using namespace fakecudart;

namespace {
struct FakeGraph {
  cudaStream_t origin;
};
struct FakeGraphExec {
  FakeGraph* graph;
};

std::mutex g_mu;
std::set<cudaStream_t> g_capturing;
std::set<FakeGraph*> g_graphs;
std::set<FakeGraphExec*> g_execs;
}  // namespace

extern "C" {

FAKECUDA_API cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
  if (cudaError_t e = ensure_context()) return record(e);
  // Like CUDA: the legacy default stream cannot be captured.
  if (stream == nullptr || stream == cudaStreamLegacy) return record(cudaErrorStreamCaptureUnsupported);
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_capturing.insert(stream).second) return record(cudaErrorIllegalState);
  return cudaSuccess;
}

FAKECUDA_API cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  if (!pGraph) return record(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_capturing.erase(stream) == 0) return record(cudaErrorIllegalState);
  auto* g = new FakeGraph{stream};
  g_graphs.insert(g);
  *pGraph = reinterpret_cast<cudaGraph_t>(g);
  return cudaSuccess;
}

FAKECUDA_API cudaError_t cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                              unsigned long long) {
  if (!pGraphExec) return record(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(g_mu);
  auto* g = reinterpret_cast<FakeGraph*>(graph);
  if (!g_graphs.count(g)) return record(cudaErrorInvalidValue);
  auto* e = new FakeGraphExec{g};
  g_execs.insert(e);
  *pGraphExec = reinterpret_cast<cudaGraphExec_t>(e);
  return cudaSuccess;
}

FAKECUDA_API cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_execs.count(reinterpret_cast<FakeGraphExec*>(graphExec)))
    return record(cudaErrorInvalidValue);
  return cudaSuccess;
}

FAKECUDA_API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto* e = reinterpret_cast<FakeGraphExec*>(graphExec);
  if (g_execs.erase(e) == 0) return record(cudaErrorInvalidValue);
  delete e;
  return cudaSuccess;
}

FAKECUDA_API cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto* g = reinterpret_cast<FakeGraph*>(graph);
  if (g_graphs.erase(g) == 0) return record(cudaErrorInvalidValue);
  delete g;
  return cudaSuccess;
}

}  // extern "C"

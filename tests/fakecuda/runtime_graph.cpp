// CUDA graphs through the runtime: each call is carried out by the driver's (driver_graph.cpp),
// as real cudart does, so capture, memory nodes and launches behave the same on both layers and
// an interposer sees runtime calls nested over driver calls.
#include "runtime_state.h"

using namespace fakecudart;

namespace {

CUstream as_stream(cudaStream_t s) { return reinterpret_cast<CUstream>(s); }

cudaError_t begin_capture(cudaStream_t stream, bool per_thread) {
  if (cudaError_t e = ensure_context()) return record(e);
  const auto& d = driver();
  auto fn = per_thread ? d.cuStreamBeginCapture_ptsz : d.cuStreamBeginCapture_v2;
  return record(to_runtime_error(fn(as_stream(stream), CU_STREAM_CAPTURE_MODE_GLOBAL)));
}

cudaError_t end_capture(cudaStream_t stream, cudaGraph_t* graph, bool per_thread) {
  if (!graph) return record(cudaErrorInvalidValue);
  if (cudaError_t e = load_driver()) return record(e);
  const auto& d = driver();
  auto fn = per_thread ? d.cuStreamEndCapture_ptsz : d.cuStreamEndCapture;
  return record(to_runtime_error(fn(as_stream(stream), graph)));
}

cudaError_t instantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  if (cudaError_t e = ensure_context()) return record(e);
  return record(to_runtime_error(driver().cuGraphInstantiateWithFlags(exec, graph, flags)));
}

cudaError_t instantiate_with_params(cudaGraphExec_t* exec, cudaGraph_t graph,
                                    cudaGraphInstantiateParams* params, bool per_thread) {
  if (!params) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context()) return record(e);
  CUDA_GRAPH_INSTANTIATE_PARAMS p{};
  p.flags = params->flags;
  p.hUploadStream = as_stream(params->uploadStream);
  const auto& d = driver();
  auto fn = per_thread ? d.cuGraphInstantiateWithParams_ptsz : d.cuGraphInstantiateWithParams;
  CUresult r = fn(exec, graph, &p);
  params->result_out = static_cast<cudaGraphInstantiateResult>(p.result_out);
  params->errNode_out = nullptr;
  return record(to_runtime_error(r));
}

cudaError_t launch(cudaGraphExec_t exec, cudaStream_t stream, bool per_thread) {
  if (cudaError_t e = ensure_context()) return record(e);
  const auto& d = driver();
  auto fn = per_thread ? d.cuGraphLaunch_ptsz : d.cuGraphLaunch;
  return record(to_runtime_error(fn(exec, as_stream(stream))));
}

cudaError_t upload(cudaGraphExec_t exec, cudaStream_t stream, bool per_thread) {
  if (cudaError_t e = ensure_context()) return record(e);
  const auto& d = driver();
  auto fn = per_thread ? d.cuGraphUpload_ptsz : d.cuGraphUpload;
  return record(to_runtime_error(fn(exec, as_stream(stream))));
}

}  // namespace

extern "C" {

FAKECUDA_API cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
  return begin_capture(stream, false);
}
FAKECUDA_API cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, cudaStreamCaptureMode) {
  return begin_capture(stream, true);
}
FAKECUDA_API cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  return end_capture(stream, pGraph, false);
}
FAKECUDA_API cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t* pGraph) {
  return end_capture(stream, pGraph, true);
}

FAKECUDA_API cudaError_t cudaGraphCreate(cudaGraph_t* pGraph, unsigned int flags) {
  if (cudaError_t e = ensure_context()) return record(e);
  return record(to_runtime_error(driver().cuGraphCreate(pGraph, flags)));
}

FAKECUDA_API cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                  const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                                  cudaMemAllocNodeParams* nodeParams) {
  if (!nodeParams) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context()) return record(e);
  CUDA_MEM_ALLOC_NODE_PARAMS p{};
  p.poolProps.allocType = static_cast<CUmemAllocationType>(nodeParams->poolProps.allocType);
  p.poolProps.handleTypes = static_cast<CUmemAllocationHandleType>(nodeParams->poolProps.handleTypes);
  p.poolProps.location.type = static_cast<CUmemLocationType>(nodeParams->poolProps.location.type);
  p.poolProps.location.id = nodeParams->poolProps.location.id;
  p.bytesize = nodeParams->bytesize;
  CUresult r = driver().cuGraphAddMemAllocNode(pGraphNode, graph, pDependencies, numDependencies, &p);
  nodeParams->dptr = r == CUDA_SUCCESS ? reinterpret_cast<void*>(p.dptr) : nullptr;
  return record(to_runtime_error(r));
}

FAKECUDA_API cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                 const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                                 void* dptr) {
  if (cudaError_t e = ensure_context()) return record(e);
  return record(to_runtime_error(driver().cuGraphAddMemFreeNode(pGraphNode, graph, pDependencies, numDependencies,
                                                                reinterpret_cast<CUdeviceptr>(dptr))));
}

FAKECUDA_API cudaError_t cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                              unsigned long long flags) {
  return instantiate(pGraphExec, graph, flags);
}
FAKECUDA_API cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                                       unsigned long long flags) {
  return instantiate(pGraphExec, graph, flags);
}
FAKECUDA_API cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                                        cudaGraphInstantiateParams* params) {
  return instantiate_with_params(pGraphExec, graph, params, false);
}
FAKECUDA_API cudaError_t cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                                             cudaGraphInstantiateParams* params) {
  return instantiate_with_params(pGraphExec, graph, params, true);
}

FAKECUDA_API cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  return launch(graphExec, stream, false);
}
FAKECUDA_API cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream) {
  return launch(graphExec, stream, true);
}
FAKECUDA_API cudaError_t cudaGraphUpload(cudaGraphExec_t graphExec, cudaStream_t stream) {
  return upload(graphExec, stream, false);
}
FAKECUDA_API cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream) {
  return upload(graphExec, stream, true);
}

FAKECUDA_API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  if (cudaError_t e = load_driver()) return record(e);
  return record(to_runtime_error(driver().cuGraphExecDestroy(graphExec)));
}

FAKECUDA_API cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  if (cudaError_t e = load_driver()) return record(e);
  return record(to_runtime_error(driver().cuGraphDestroy(graph)));
}

FAKECUDA_API cudaError_t cudaDeviceGraphMemTrim(int device) {
  if (cudaError_t e = load_driver()) return record(e);
  return record(to_runtime_error(driver().cuDeviceGraphMemTrim(device)));
}

// The runtime's node parameters, for the node types that are about memory, in the driver's
// spelling (real cudart converts the same way); other types carry only their type here.
CUgraphNodeParams to_driver(const cudaGraphNodeParams& p) {
  CUgraphNodeParams d{};
  d.type = static_cast<CUgraphNodeType>(p.type);
  if (p.type == cudaGraphNodeTypeMemAlloc) {
    d.alloc.poolProps.allocType = static_cast<CUmemAllocationType>(p.alloc.poolProps.allocType);
    d.alloc.poolProps.location.type =
        static_cast<CUmemLocationType>(p.alloc.poolProps.location.type);
    d.alloc.poolProps.location.id = p.alloc.poolProps.location.id;
    d.alloc.bytesize = p.alloc.bytesize;
  } else if (p.type == cudaGraphNodeTypeMemFree) {
    d.free.dptr = reinterpret_cast<CUdeviceptr>(p.free.dptr);
  } else if (p.type == cudaGraphNodeTypeGraph) {
    d.graph.graph = p.graph.graph;
    d.graph.ownership = static_cast<CUgraphChildGraphNodeOwnership>(p.graph.ownership);
  }
  return d;
}

FAKECUDA_API cudaError_t cudaGraphAddNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                          const cudaGraphNode_t* deps, const cudaGraphEdgeData*,
                                          size_t n, cudaGraphNodeParams* params) {
  if (!params) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context()) return record(e);
  CUgraphNodeParams d = to_driver(*params);
  CUresult r = driver().cuGraphAddNode_v2(node, graph, deps, nullptr, n, &d);
  if (r == CUDA_SUCCESS && params->type == cudaGraphNodeTypeMemAlloc)
    params->alloc.dptr = reinterpret_cast<void*>(d.alloc.dptr);
  return record(to_runtime_error(r));
}

FAKECUDA_API cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                                    const cudaGraphNode_t* deps, size_t n,
                                                    cudaGraph_t child) {
  if (cudaError_t e = ensure_context()) return record(e);
  return record(to_runtime_error(driver().cuGraphAddChildGraphNode(node, graph, deps, n, child)));
}

FAKECUDA_API cudaError_t cudaGraphClone(cudaGraph_t* copy, cudaGraph_t original) {
  if (cudaError_t e = ensure_context()) return record(e);
  return record(to_runtime_error(driver().cuGraphClone(copy, original)));
}

FAKECUDA_API cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph,
                                                       const cudaGraphNode_t* deps,
                                                       const cudaGraphEdgeData*, size_t n,
                                                       cudaStreamCaptureMode mode) {
  if (cudaError_t e = ensure_context()) return record(e);
  return record(to_runtime_error(
      driver().cuStreamBeginCaptureToGraph(reinterpret_cast<CUstream>(stream), graph, deps, nullptr,
                                           n, static_cast<CUstreamCaptureMode>(mode))));
}
FAKECUDA_API cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t stream, cudaGraph_t graph,
                                                            const cudaGraphNode_t* deps,
                                                            const cudaGraphEdgeData*, size_t n,
                                                            cudaStreamCaptureMode mode) {
  if (cudaError_t e = ensure_context()) return record(e);
  return record(to_runtime_error(driver().cuStreamBeginCaptureToGraph_ptsz(
      reinterpret_cast<CUstream>(stream), graph, deps, nullptr, n,
      static_cast<CUstreamCaptureMode>(mode))));
}

// The runtime's attribute ids and values are the driver's.
FAKECUDA_API cudaError_t cudaDeviceGetGraphMemAttribute(int device, cudaGraphMemAttributeType attr,
                                                        void* value) {
  if (cudaError_t e = load_driver()) return record(e);
  return record(to_runtime_error(driver().cuDeviceGetGraphMemAttribute(
      device, static_cast<CUgraphMem_attribute>(attr), value)));
}

}  // extern "C"

// The scenario's part for graph uploads: cudaGraphUpload / cuGraphUpload and their
// _ptsz twins allocate an exec's allocation nodes before its first launch, and an instantiation
// with the upload flag does the same at once; destroying the exec before a launch gives that
// memory back (as the H200 showed). recorder_test.cpp checks the pool's figures each call
// records. Each hooked call is announced with say() just as in scenario.cpp.
#include "scenario.h"

namespace {
constexpr size_t kMiB = size_t{1} << 20;
}  // namespace

void exercise_runtime_graph_upload(void* runtime) {
  struct {
    decltype(&cudaGraphAddMemAllocNode) add_alloc;
    decltype(&cudaGraphInstantiate) instantiate;
    decltype(&cudaGraphInstantiateWithParams) instantiate_params;
    decltype(&cudaGraphUpload) upload, upload_ptsz;
    decltype(&cudaGraphLaunch) launch;
    decltype(&cudaGraphExecDestroy) exec_destroy;
    decltype(&cudaGraphDestroy) destroy;
    decltype(&cudaFree) free_;
    decltype(&cudaDeviceGraphMemTrim) trim;
  } r{};
  rt(r.add_alloc, runtime, "cudaGraphAddMemAllocNode");
  rt(r.instantiate, runtime, "cudaGraphInstantiate");
  rt(r.instantiate_params, runtime, "cudaGraphInstantiateWithParams");
  rt(r.upload, runtime, "cudaGraphUpload");
  rt(r.upload_ptsz, runtime, "cudaGraphUpload_ptsz");
  rt(r.launch, runtime, "cudaGraphLaunch");
  rt(r.exec_destroy, runtime, "cudaGraphExecDestroy");
  rt(r.destroy, runtime, "cudaGraphDestroy");
  rt(r.free_, runtime, "cudaFree");
  rt(r.trim, runtime, "cudaDeviceGraphMemTrim");

  cudaStream_t s;
  CHECK_RT(cudaStreamCreate(&s));
  // An 8 MiB allocation node: uploaded (allocated there, a chunk), launched (on that memory),
  // freed, trimmed, uploaded again through the _ptsz ABI (allocated again), and the exec
  // destroyed unlaunched (freed).
  cudaGraph_t g;
  CHECK_RT(cudaGraphCreate(&g, 0));
  cudaMemAllocNodeParams params{};
  params.poolProps.allocType = cudaMemAllocationTypePinned;
  params.poolProps.location = {cudaMemLocationTypeDevice, 0};
  params.bytesize = 8 * kMiB;
  cudaGraphNode_t node;
  CHECK_RT(r.add_alloc(&node, g, nullptr, 0, &params));
  say("cudaGraphAddMemAllocNode", u(params.dptr), 0);
  cudaGraphExec_t exec;
  say("cudaGraphInstantiate", 0, 0);
  CHECK_RT(r.instantiate(&exec, g, 0));
  say("cudaGraphUpload", 0, 0);
  CHECK_RT(r.upload(exec, s));
  say("cudaGraphLaunch", 0, 0);
  CHECK_RT(r.launch(exec, s));
  say("cudaFree", u(params.dptr), 0);
  CHECK_RT(r.free_(params.dptr));
  say("cudaDeviceGraphMemTrim", 0, 0);
  CHECK_RT(r.trim(0));
  say("cudaGraphUpload_ptsz", 0, 0);
  CHECK_RT(r.upload_ptsz(exec, s));
  say("cudaGraphExecDestroy", 0, 0);
  CHECK_RT(r.exec_destroy(exec));
  say("cudaGraphDestroy", 0, 0);
  CHECK_RT(r.destroy(g));

  // A 40 MiB node instantiated with the upload flag: allocated there (two chunks), freed with the
  // unlaunched exec.
  CHECK_RT(cudaGraphCreate(&g, 0));
  params.bytesize = 40 * kMiB;
  CHECK_RT(r.add_alloc(&node, g, nullptr, 0, &params));
  say("cudaGraphAddMemAllocNode", u(params.dptr), 0);
  cudaGraphInstantiateParams ip{};
  ip.flags = cudaGraphInstantiateFlagUpload;
  ip.uploadStream = s;
  say("cudaGraphInstantiateWithParams", 0, 0);
  CHECK_RT(r.instantiate_params(&exec, g, &ip));
  say("cudaGraphExecDestroy", 0, 0);
  CHECK_RT(r.exec_destroy(exec));
  say("cudaGraphDestroy", 0, 0);
  CHECK_RT(r.destroy(g));
  say("cudaDeviceGraphMemTrim", 0, 0);
  CHECK_RT(r.trim(0));
  CHECK_RT(cudaStreamDestroy(s));
}

void exercise_driver_graph_upload(Resolve r) {
  struct {
    decltype(&cuGraphAddMemAllocNode) add_alloc;
    decltype(&cuGraphInstantiateWithFlags) instantiate;
    decltype(&cuGraphInstantiateWithParams) instantiate_params;
    decltype(&cuGraphUpload) upload, upload_ptsz;
    decltype(&cuGraphLaunch) launch;
    decltype(&cuGraphExecDestroy) exec_destroy;
    decltype(&cuGraphDestroy) destroy;
    decltype(&cuMemFree_v2) free_;
    decltype(&cuDeviceGraphMemTrim) trim;
  } d{};
  get(d.add_alloc, r, "cuGraphAddMemAllocNode", "cuGraphAddMemAllocNode");
  get(d.instantiate, r, "cuGraphInstantiateWithFlags", "cuGraphInstantiate");
  get(d.instantiate_params, r, "cuGraphInstantiateWithParams", "cuGraphInstantiateWithParams");
  get(d.upload, r, "cuGraphUpload", "cuGraphUpload");
  get(d.upload_ptsz, r, "cuGraphUpload_ptsz", "cuGraphUpload", true);
  get(d.launch, r, "cuGraphLaunch", "cuGraphLaunch");
  get(d.exec_destroy, r, "cuGraphExecDestroy", "cuGraphExecDestroy");
  get(d.destroy, r, "cuGraphDestroy", "cuGraphDestroy");
  get(d.free_, r, "cuMemFree_v2", "cuMemFree");
  get(d.trim, r, "cuDeviceGraphMemTrim", "cuDeviceGraphMemTrim");

  // As the runtime's.
  CUstream s;
  CHECK_DRV(cuStreamCreate(&s, 0));
  CUgraph g;
  CHECK_DRV(cuGraphCreate(&g, 0));
  CUDA_MEM_ALLOC_NODE_PARAMS params{};
  params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  params.poolProps.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  params.bytesize = 8 * kMiB;
  CUgraphNode node;
  CHECK_DRV(d.add_alloc(&node, g, nullptr, 0, &params));
  say("cuGraphAddMemAllocNode", params.dptr, 0);
  CUgraphExec exec;
  say("cuGraphInstantiateWithFlags", 0, 0);
  CHECK_DRV(d.instantiate(&exec, g, 0));
  say("cuGraphUpload", 0, 0);
  CHECK_DRV(d.upload(exec, s));
  say("cuGraphLaunch", 0, 0);
  CHECK_DRV(d.launch(exec, s));
  say("cuMemFree_v2", params.dptr, 0);
  CHECK_DRV(d.free_(params.dptr));
  say("cuDeviceGraphMemTrim", 0, 0);
  CHECK_DRV(d.trim(0));
  say("cuGraphUpload_ptsz", 0, 0);
  CHECK_DRV(d.upload_ptsz(exec, s));
  say("cuGraphExecDestroy", 0, 0);
  CHECK_DRV(d.exec_destroy(exec));
  say("cuGraphDestroy", 0, 0);
  CHECK_DRV(d.destroy(g));

  CHECK_DRV(cuGraphCreate(&g, 0));
  params.bytesize = 40 * kMiB;
  CHECK_DRV(d.add_alloc(&node, g, nullptr, 0, &params));
  say("cuGraphAddMemAllocNode", params.dptr, 0);
  CUDA_GRAPH_INSTANTIATE_PARAMS ip{};
  ip.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
  ip.hUploadStream = s;
  say("cuGraphInstantiateWithParams", 0, 0);
  CHECK_DRV(d.instantiate_params(&exec, g, &ip));
  say("cuGraphExecDestroy", 0, 0);
  CHECK_DRV(d.exec_destroy(exec));
  say("cuGraphDestroy", 0, 0);
  CHECK_DRV(d.destroy(g));
  say("cuDeviceGraphMemTrim", 0, 0);
  CHECK_DRV(d.trim(0));
  CHECK_DRV(cuStreamDestroy(s));
}

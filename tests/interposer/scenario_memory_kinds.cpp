// The scenario's part for the other kinds of memory: CUDA graph memory nodes (explicit, captured,
// auto-freed on relaunch, freed by cudaFree), imported and shared memory (VMM handles exported
// and imported, retained handles, IPC, pool pointers) and CUDA arrays, through the runtime and
// through every driver lookup path. Each hooked call is announced with say() just as in
// scenario.cpp.
#include <dlfcn.h>

#include <cstring>
#include <initializer_list>

#include "scenario.h"

void exercise_runtime_memory_kinds(void* runtime) {
  struct {
    decltype(&cudaGraphAddMemAllocNode) add_alloc;
    decltype(&cudaGraphAddMemFreeNode) add_free;
    decltype(&cudaGraphInstantiate) instantiate;
    decltype(&cudaGraphInstantiateWithFlags) instantiate_flags;
    decltype(&cudaGraphInstantiateWithParams) instantiate_params, instantiate_params_ptsz;
    decltype(&cudaGraphLaunch) launch, launch_ptsz;
    decltype(&cudaGraphExecDestroy) exec_destroy;
    decltype(&cudaGraphDestroy) destroy;
    decltype(&cudaDeviceGraphMemTrim) trim;
    decltype(&cudaStreamBeginCapture) begin_ptsz;
    decltype(&cudaStreamEndCapture) end_ptsz;
    decltype(&cudaMallocAsync) malloc_async;
    decltype(&cudaFreeAsync) free_async;
    decltype(&cudaMalloc) malloc_;
    decltype(&cudaFree) free_;
    decltype(&cudaIpcOpenMemHandle) ipc_open;
    decltype(&cudaIpcCloseMemHandle) ipc_close;
    decltype(&cudaMemPoolImportPointer) pool_import;
    decltype(&cudaMallocArray) malloc_array;
    decltype(&cudaMalloc3DArray) malloc_3d_array;
    decltype(&cudaMallocMipmappedArray) malloc_mipmapped;
    decltype(&cudaFreeArray) free_array;
    decltype(&cudaFreeMipmappedArray) free_mipmapped;
  } r{};
  rt(r.add_alloc, runtime, "cudaGraphAddMemAllocNode");
  rt(r.add_free, runtime, "cudaGraphAddMemFreeNode");
  rt(r.instantiate, runtime, "cudaGraphInstantiate");
  rt(r.instantiate_flags, runtime, "cudaGraphInstantiateWithFlags");
  rt(r.instantiate_params, runtime, "cudaGraphInstantiateWithParams");
  rt(r.instantiate_params_ptsz, runtime, "cudaGraphInstantiateWithParams_ptsz");
  rt(r.launch, runtime, "cudaGraphLaunch");
  rt(r.launch_ptsz, runtime, "cudaGraphLaunch_ptsz");
  rt(r.exec_destroy, runtime, "cudaGraphExecDestroy");
  rt(r.destroy, runtime, "cudaGraphDestroy");
  rt(r.trim, runtime, "cudaDeviceGraphMemTrim");
  rt(r.begin_ptsz, runtime, "cudaStreamBeginCapture_ptsz");
  rt(r.end_ptsz, runtime, "cudaStreamEndCapture_ptsz");
  rt(r.malloc_async, runtime, "cudaMallocAsync");
  rt(r.free_async, runtime, "cudaFreeAsync");
  rt(r.malloc_, runtime, "cudaMalloc");
  rt(r.free_, runtime, "cudaFree");
  rt(r.ipc_open, runtime, "cudaIpcOpenMemHandle");
  rt(r.ipc_close, runtime, "cudaIpcCloseMemHandle");
  rt(r.pool_import, runtime, "cudaMemPoolImportPointer");
  rt(r.malloc_array, runtime, "cudaMallocArray");
  rt(r.malloc_3d_array, runtime, "cudaMalloc3DArray");
  rt(r.malloc_mipmapped, runtime, "cudaMallocMipmappedArray");
  rt(r.free_array, runtime, "cudaFreeArray");
  rt(r.free_mipmapped, runtime, "cudaFreeMipmappedArray");

  // An allocation node, auto-freed on relaunch, finally freed with cudaFree.
  cudaGraph_t g;
  CHECK_RT(cudaGraphCreate(&g, 0));
  cudaMemAllocNodeParams params{};
  params.poolProps.allocType = cudaMemAllocationTypePinned;
  params.poolProps.location = {cudaMemLocationTypeDevice, 0};
  params.bytesize = 1 << 20;
  cudaGraphNode_t node;
  CHECK_RT(r.add_alloc(&node, g, nullptr, 0, &params)); say("cudaGraphAddMemAllocNode", u(params.dptr), 0);
  void* graph_memory = params.dptr;
  cudaGraphExec_t exec;
  say("cudaGraphInstantiateWithFlags", 0, 0);
  CHECK_RT(r.instantiate_flags(&exec, g, cudaGraphInstantiateFlagAutoFreeOnLaunch));
  say("cudaGraphLaunch", 0, 0); CHECK_RT(r.launch(exec, nullptr));
  say("cudaGraphLaunch_ptsz", 0, 0); CHECK_RT(r.launch_ptsz(exec, nullptr));
  say("cudaFree", u(graph_memory), 0); CHECK_RT(r.free_(graph_memory));
  say("cudaGraphExecDestroy", 0, 0); CHECK_RT(r.exec_destroy(exec));
  say("cudaGraphDestroy", 0, 0); CHECK_RT(r.destroy(g));

  // An allocation node and its free node in one graph.
  CHECK_RT(cudaGraphCreate(&g, 0));
  params.bytesize = 2 << 20;
  CHECK_RT(r.add_alloc(&node, g, nullptr, 0, &params)); say("cudaGraphAddMemAllocNode", u(params.dptr), 0);
  CHECK_RT(r.add_free(&node, g, &node, 1, params.dptr)); say("cudaGraphAddMemFreeNode", u(params.dptr), 0);
  cudaGraphInstantiateParams ip{};
  say("cudaGraphInstantiateWithParams", 0, 0); CHECK_RT(r.instantiate_params(&exec, g, &ip));
  say("cudaGraphLaunch", 0, 0); CHECK_RT(r.launch(exec, nullptr));
  say("cudaGraphExecDestroy", 0, 0); CHECK_RT(r.exec_destroy(exec));
  say("cudaGraphInstantiateWithParams_ptsz", 0, 0); CHECK_RT(r.instantiate_params_ptsz(&exec, g, &ip));
  say("cudaGraphExecDestroy", 0, 0); CHECK_RT(r.exec_destroy(exec));
  say("cudaGraphDestroy", 0, 0); CHECK_RT(r.destroy(g));

  // Captured: the allocation becomes a node; the free after the capture frees graph memory.
  cudaStream_t cs;
  CHECK_RT(cudaStreamCreate(&cs));
  say("cudaStreamBeginCapture_ptsz", 0, 0); CHECK_RT(r.begin_ptsz(cs, cudaStreamCaptureModeGlobal));
  void* captured = nullptr;
  CHECK_RT(r.malloc_async(&captured, 4096, cs)); say("cudaMallocAsync", u(captured), 0);
  say("cudaStreamEndCapture_ptsz", 0, 0); CHECK_RT(r.end_ptsz(cs, &g));
  say("cudaGraphInstantiate", 0, 0); CHECK_RT(r.instantiate(&exec, g, 0));
  say("cudaGraphLaunch", 0, 0); CHECK_RT(r.launch(exec, cs));
  say("cudaFreeAsync", u(captured), 0); CHECK_RT(r.free_async(captured, cs));
  say("cudaGraphExecDestroy", 0, 0); CHECK_RT(r.exec_destroy(exec));
  say("cudaGraphDestroy", 0, 0); CHECK_RT(r.destroy(g));
  CHECK_RT(cudaStreamDestroy(cs));
  say("cudaDeviceGraphMemTrim", 0, 0); CHECK_RT(r.trim(0));

  // IPC and pool pointers, opened in the same process: the simulated device allows it, real
  // CUDA refuses it (and the default pool exports nothing), so there the calls are recorded as
  // failures and nothing needs closing. Two processes: samples/ipc_share.cu.
  void* p = nullptr;
  void* q = nullptr;
  CHECK_RT(r.malloc_(&p, 1 << 16)); say("cudaMalloc", u(p), 0);
  cudaIpcMemHandle_t ipc{};
  CHECK_RT(cudaIpcGetMemHandle(&ipc, p));
  cudaError_t rc = r.ipc_open(&q, ipc, cudaIpcMemLazyEnablePeerAccess);
  say("cudaIpcOpenMemHandle", u(q), rc);
  if (rc == cudaSuccess) {
    say("cudaIpcCloseMemHandle", u(q), 0); CHECK_RT(r.ipc_close(q));
  } else {
    rc = r.ipc_close(p);  // not an opened pointer: refused, and recorded as such
    say("cudaIpcCloseMemHandle", u(p), rc);
  }
  say("cudaFree", u(p), 0); CHECK_RT(r.free_(p));
  CHECK_RT(r.malloc_async(&p, 8192, nullptr)); say("cudaMallocAsync", u(p), 0);
  cudaMemPoolPtrExportData data{};
  (void)cudaMemPoolExportPointer(&data, p);
  cudaGetLastError();
  cudaMemPool_t pool;
  CHECK_RT(cudaDeviceGetDefaultMemPool(&pool, 0));
  rc = r.pool_import(&q, pool, &data);
  say("cudaMemPoolImportPointer", u(q), rc);
  if (rc == cudaSuccess) {
    say("cudaFree", u(q), 0); CHECK_RT(r.free_(q));
  }
  say("cudaFreeAsync", u(p), 0); CHECK_RT(r.free_async(p, nullptr));

  // Arrays: 1D/2D, 3D, mipmapped.
  const cudaChannelFormatDesc desc{32, 0, 0, 0, cudaChannelFormatKindFloat};
  cudaArray_t a;
  CHECK_RT(r.malloc_array(&a, &desc, 256, 64, 0)); say("cudaMallocArray", u(a), 0);
  say("cudaFreeArray", u(a), 0); CHECK_RT(r.free_array(a));
  CHECK_RT(r.malloc_3d_array(&a, &desc, cudaExtent{64, 64, 4}, 0)); say("cudaMalloc3DArray", u(a), 0);
  say("cudaFreeArray", u(a), 0); CHECK_RT(r.free_array(a));
  cudaMipmappedArray_t m;
  CHECK_RT(r.malloc_mipmapped(&m, &desc, cudaExtent{256, 256, 0}, 4, 0)); say("cudaMallocMipmappedArray", u(m), 0);
  say("cudaFreeMipmappedArray", u(m), 0); CHECK_RT(r.free_mipmapped(m));
}

void exercise_driver_memory_kinds(Resolve r) {
  struct {
    decltype(&cuGraphAddMemAllocNode) add_alloc;
    decltype(&cuGraphAddMemFreeNode) add_free;
    decltype(&cuGraphInstantiateWithFlags) instantiate;
    decltype(&cuGraphInstantiateWithParams) instantiate_params, instantiate_params_ptsz;
    decltype(&cuGraphLaunch) launch, launch_ptsz;
    decltype(&cuGraphExecDestroy) exec_destroy;
    decltype(&cuGraphDestroy) destroy;
    decltype(&cuDeviceGraphMemTrim) trim;
    decltype(&cuStreamBeginCapture_v2) begin, begin_ptsz;
    decltype(&cuStreamEndCapture) end, end_ptsz;
    decltype(&cuMemAllocAsync) alloc_async;
    decltype(&cuMemFreeAsync) free_async;
    decltype(&cuMemAlloc_v2) alloc;
    decltype(&cuMemFree_v2) free_;
    decltype(&cuMemCreate) create;
    decltype(&cuMemRelease) release;
    decltype(&cuMemAddressReserve) reserve;
    decltype(&cuMemAddressFree) address_free;
    decltype(&cuMemMap) map;
    decltype(&cuMemUnmap) unmap;
    decltype(&cuMemExportToShareableHandle) export_handle;
    decltype(&cuMemImportFromShareableHandle) import_handle;
    decltype(&cuMemRetainAllocationHandle) retain;
    decltype(&cuIpcOpenMemHandle_v2) ipc_open;
    decltype(&cuIpcCloseMemHandle) ipc_close;
    decltype(&cuMemPoolImportPointer) pool_import;
    decltype(&cuArrayCreate_v2) array_create;
    decltype(&cuArray3DCreate_v2) array_3d_create;
    decltype(&cuMipmappedArrayCreate) mipmapped_create;
    decltype(&cuArrayDestroy) array_destroy;
    decltype(&cuMipmappedArrayDestroy) mipmapped_destroy;
  } d{};
  get(d.add_alloc, r, "cuGraphAddMemAllocNode", "cuGraphAddMemAllocNode");
  get(d.add_free, r, "cuGraphAddMemFreeNode", "cuGraphAddMemFreeNode");
  get(d.instantiate, r, "cuGraphInstantiateWithFlags", "cuGraphInstantiate");
  get(d.instantiate_params, r, "cuGraphInstantiateWithParams", "cuGraphInstantiateWithParams");
  get(d.instantiate_params_ptsz, r, "cuGraphInstantiateWithParams_ptsz", "cuGraphInstantiateWithParams", true);
  get(d.launch, r, "cuGraphLaunch", "cuGraphLaunch");
  get(d.launch_ptsz, r, "cuGraphLaunch_ptsz", "cuGraphLaunch", true);
  get(d.exec_destroy, r, "cuGraphExecDestroy", "cuGraphExecDestroy");
  get(d.destroy, r, "cuGraphDestroy", "cuGraphDestroy");
  get(d.trim, r, "cuDeviceGraphMemTrim", "cuDeviceGraphMemTrim");
  get(d.begin, r, "cuStreamBeginCapture_v2", "cuStreamBeginCapture");
  get(d.begin_ptsz, r, "cuStreamBeginCapture_ptsz", "cuStreamBeginCapture", true);
  get(d.end, r, "cuStreamEndCapture", "cuStreamEndCapture");
  get(d.end_ptsz, r, "cuStreamEndCapture_ptsz", "cuStreamEndCapture", true);
  get(d.alloc_async, r, "cuMemAllocAsync", "cuMemAllocAsync");
  get(d.free_async, r, "cuMemFreeAsync", "cuMemFreeAsync");
  get(d.alloc, r, "cuMemAlloc_v2", "cuMemAlloc");
  get(d.free_, r, "cuMemFree_v2", "cuMemFree");
  get(d.create, r, "cuMemCreate", "cuMemCreate");
  get(d.release, r, "cuMemRelease", "cuMemRelease");
  get(d.reserve, r, "cuMemAddressReserve", "cuMemAddressReserve");
  get(d.address_free, r, "cuMemAddressFree", "cuMemAddressFree");
  get(d.map, r, "cuMemMap", "cuMemMap");
  get(d.unmap, r, "cuMemUnmap", "cuMemUnmap");
  get(d.export_handle, r, "cuMemExportToShareableHandle", "cuMemExportToShareableHandle");
  get(d.import_handle, r, "cuMemImportFromShareableHandle", "cuMemImportFromShareableHandle");
  get(d.retain, r, "cuMemRetainAllocationHandle", "cuMemRetainAllocationHandle");
  get(d.ipc_open, r, "cuIpcOpenMemHandle_v2", "cuIpcOpenMemHandle");
  get(d.ipc_close, r, "cuIpcCloseMemHandle", "cuIpcCloseMemHandle");
  get(d.pool_import, r, "cuMemPoolImportPointer", "cuMemPoolImportPointer");
  get(d.array_create, r, "cuArrayCreate_v2", "cuArrayCreate");
  get(d.array_3d_create, r, "cuArray3DCreate_v2", "cuArray3DCreate");
  get(d.mipmapped_create, r, "cuMipmappedArrayCreate", "cuMipmappedArrayCreate");
  get(d.array_destroy, r, "cuArrayDestroy", "cuArrayDestroy");
  get(d.mipmapped_destroy, r, "cuMipmappedArrayDestroy", "cuMipmappedArrayDestroy");

  // An allocation node, auto-freed on relaunch, finally freed with cuMemFree.
  CUgraph g;
  CHECK_DRV(cuGraphCreate(&g, 0));
  CUDA_MEM_ALLOC_NODE_PARAMS params{};
  params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  params.poolProps.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  params.bytesize = 1 << 20;
  CUgraphNode node;
  CHECK_DRV(d.add_alloc(&node, g, nullptr, 0, &params)); say("cuGraphAddMemAllocNode", params.dptr, 0);
  const CUdeviceptr graph_memory = params.dptr;
  CUgraphExec exec;
  say("cuGraphInstantiateWithFlags", 0, 0);
  CHECK_DRV(d.instantiate(&exec, g, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
  say("cuGraphLaunch", 0, 0); CHECK_DRV(d.launch(exec, nullptr));
  say("cuGraphLaunch_ptsz", 0, 0); CHECK_DRV(d.launch_ptsz(exec, nullptr));
  say("cuMemFree_v2", graph_memory, 0); CHECK_DRV(d.free_(graph_memory));
  say("cuGraphExecDestroy", 0, 0); CHECK_DRV(d.exec_destroy(exec));
  say("cuGraphDestroy", 0, 0); CHECK_DRV(d.destroy(g));

  // An allocation node and its free node in one graph.
  CHECK_DRV(cuGraphCreate(&g, 0));
  params.bytesize = 2 << 20;
  CHECK_DRV(d.add_alloc(&node, g, nullptr, 0, &params)); say("cuGraphAddMemAllocNode", params.dptr, 0);
  CHECK_DRV(d.add_free(&node, g, &node, 1, params.dptr)); say("cuGraphAddMemFreeNode", params.dptr, 0);
  CUDA_GRAPH_INSTANTIATE_PARAMS ip{};
  say("cuGraphInstantiateWithParams", 0, 0); CHECK_DRV(d.instantiate_params(&exec, g, &ip));
  say("cuGraphLaunch", 0, 0); CHECK_DRV(d.launch(exec, nullptr));
  say("cuGraphExecDestroy", 0, 0); CHECK_DRV(d.exec_destroy(exec));
  say("cuGraphInstantiateWithParams_ptsz", 0, 0); CHECK_DRV(d.instantiate_params_ptsz(&exec, g, &ip));
  say("cuGraphExecDestroy", 0, 0); CHECK_DRV(d.exec_destroy(exec));
  say("cuGraphDestroy", 0, 0); CHECK_DRV(d.destroy(g));

  // Captured, once with each capture ABI.
  CUstream s;
  CHECK_DRV(cuStreamCreate(&s, 0));
  for (bool ptsz : {false, true}) {
    say(ptsz ? "cuStreamBeginCapture_ptsz" : "cuStreamBeginCapture_v2", 0, 0);
    CHECK_DRV((ptsz ? d.begin_ptsz : d.begin)(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr captured = 0;
    CHECK_DRV(d.alloc_async(&captured, 4096, s)); say("cuMemAllocAsync", captured, 0);
    say(ptsz ? "cuStreamEndCapture_ptsz" : "cuStreamEndCapture", 0, 0);
    CHECK_DRV((ptsz ? d.end_ptsz : d.end)(s, &g));
    say("cuGraphInstantiateWithFlags", 0, 0); CHECK_DRV(d.instantiate(&exec, g, 0));
    say("cuGraphLaunch", 0, 0); CHECK_DRV(d.launch(exec, s));
    say("cuMemFreeAsync", captured, 0); CHECK_DRV(d.free_async(captured, s));
    say("cuGraphExecDestroy", 0, 0); CHECK_DRV(d.exec_destroy(exec));
    say("cuGraphDestroy", 0, 0); CHECK_DRV(d.destroy(g));
  }
  CHECK_DRV(cuStreamDestroy(s));
  say("cuDeviceGraphMemTrim", 0, 0); CHECK_DRV(d.trim(0));

  // A VMM handle exported, imported back, mapped, retained through its address, released.
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  int devices = 0;
  CHECK_DRV(cuDeviceGetCount(&devices));
  // The device scenario.cpp's VMM allocation uses: the test checks every cuMemCreate against it.
  prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, devices > 1 ? 1 : 0};
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t gran = 0;
  CHECK_DRV(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CUmemGenericAllocationHandle made, imported, retained;
  CHECK_DRV(d.create(&made, gran, &prop, 0)); say("cuMemCreate", made, 0);
  int fd = -1;
  say("cuMemExportToShareableHandle", made, 0);
  CHECK_DRV(d.export_handle(&fd, made, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  CHECK_DRV(d.import_handle(&imported, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  say("cuMemImportFromShareableHandle", imported, 0);
  CUdeviceptr va;
  CHECK_DRV(d.reserve(&va, gran, 0, 0, 0)); say("cuMemAddressReserve", va, 0);
  CHECK_DRV(d.map(va, gran, 0, imported, 0)); say("cuMemMap", va, 0);
  CHECK_DRV(d.retain(&retained, reinterpret_cast<void*>(va))); say("cuMemRetainAllocationHandle", retained, 0);
  say("cuMemRelease", retained, 0); CHECK_DRV(d.release(retained));
  say("cuMemUnmap", va, 0); CHECK_DRV(d.unmap(va, gran));
  say("cuMemRelease", imported, 0); CHECK_DRV(d.release(imported));
  say("cuMemRelease", made, 0); CHECK_DRV(d.release(made));
  say("cuMemAddressFree", va, 0); CHECK_DRV(d.address_free(va, gran));

  // IPC and pool pointers.
  CUdeviceptr p = 0, q = 0;
  CHECK_DRV(d.alloc(&p, 1 << 16)); say("cuMemAlloc_v2", p, 0);
  CUipcMemHandle ipc{};
  CHECK_DRV(cuIpcGetMemHandle(&ipc, p));
  // In the same process: see exercise_runtime_memory_kinds.
  CUresult rc = d.ipc_open(&q, ipc, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
  say("cuIpcOpenMemHandle_v2", q, rc);
  if (rc == CUDA_SUCCESS) {
    say("cuIpcCloseMemHandle", q, 0); CHECK_DRV(d.ipc_close(q));
  } else {
    rc = d.ipc_close(p);
    say("cuIpcCloseMemHandle", p, rc);
  }
  say("cuMemFree_v2", p, 0); CHECK_DRV(d.free_(p));
  CHECK_DRV(d.alloc_async(&p, 8192, nullptr)); say("cuMemAllocAsync", p, 0);
  CUmemPoolPtrExportData data{};
  (void)cuMemPoolExportPointer(&data, p);
  CUmemoryPool pool;
  CHECK_DRV(cuDeviceGetDefaultMemPool(&pool, 0));
  rc = d.pool_import(&q, pool, &data);
  say("cuMemPoolImportPointer", q, rc);
  if (rc == CUDA_SUCCESS) {
    say("cuMemFreeAsync", q, 0); CHECK_DRV(d.free_async(q, nullptr));
  }
  say("cuMemFreeAsync", p, 0); CHECK_DRV(d.free_async(p, nullptr));

  // Arrays.
  CUDA_ARRAY_DESCRIPTOR ad{256, 64, CU_AD_FORMAT_FLOAT, 4};
  CUarray a;
  CHECK_DRV(d.array_create(&a, &ad)); say("cuArrayCreate_v2", u(a), 0);
  say("cuArrayDestroy", u(a), 0); CHECK_DRV(d.array_destroy(a));
  CUDA_ARRAY3D_DESCRIPTOR ad3{};
  ad3.Width = 64;
  ad3.Height = 64;
  ad3.Depth = 8;
  ad3.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  ad3.NumChannels = 1;
  CHECK_DRV(d.array_3d_create(&a, &ad3)); say("cuArray3DCreate_v2", u(a), 0);
  say("cuArrayDestroy", u(a), 0); CHECK_DRV(d.array_destroy(a));
  CUmipmappedArray m;
  CHECK_DRV(d.mipmapped_create(&m, &ad3, 3)); say("cuMipmappedArrayCreate", u(m), 0);
  say("cuMipmappedArrayDestroy", u(m), 0); CHECK_DRV(d.mipmapped_destroy(m));
}

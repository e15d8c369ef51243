// Kernel registration and launch hooks called by nvcc-generated host code; launches are no-ops.
// Kernels never run: a launch is validated like a real one, then succeeds without touching memory.
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime_state.h"

using namespace fakecudart;

// nvcc declares these in crt/host_runtime.h and crt/device_functions.h, which only its own
// compilations include; the prototypes here mirror those.
extern "C" {
void** __cudaRegisterFatBinary(void* fatCubin);
void __cudaRegisterFatBinaryEnd(void** fatCubinHandle);
void __cudaUnregisterFatBinary(void** fatCubinHandle);
void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char* deviceFun, const char* deviceName,
                            int thread_limit, uint3* tid, uint3* bid, dim3* bDim, dim3* gDim, int* wSize);
void __cudaRegisterVar(void** fatCubinHandle, char* hostVar, char* deviceAddress, const char* deviceName, int ext,
                       size_t size, int constant, int global);
void __cudaRegisterManagedVar(void** fatCubinHandle, void** hostVarPtrAddress, char* deviceAddress,
                              const char* deviceName, int ext, size_t size, int constant, int global);
char __cudaInitModule(void** fatCubinHandle);
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, struct CUstream_st* stream);
cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem, void* stream);
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                               cudaStream_t stream);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                    size_t sharedMem, cudaStream_t stream);
cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                                  cudaStream_t stream);
}

namespace {

struct Kernel {
  void** module;
  std::string name;
};

struct Registry {
  std::mutex mu;
  std::map<const void*, std::unique_ptr<Kernel>> by_host_function;
};

// Leaked: __cudaUnregisterFatBinary runs from the program's atexit, after our statics could be gone.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

Kernel* find_kernel(const void* host_function) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.by_host_function.find(host_function);
  return it == r.by_host_function.end() ? nullptr : it->second.get();
}

bool registered(const Kernel* kernel) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (const auto& [host, k] : r.by_host_function)
    if (k.get() == kernel) return true;
  return false;
}

struct LaunchConfig {
  dim3 grid, block;
  size_t shared_mem;
  cudaStream_t stream;
};

std::vector<LaunchConfig>& config_stack() {
  thread_local std::vector<LaunchConfig> stack;
  return stack;
}

// The checks a real launch fails synchronously on; everything past them "runs" instantly.
cudaError_t launch(const Kernel* kernel, dim3 grid, dim3 block, size_t shared_mem, cudaStream_t stream,
                   bool per_thread) {
  if (cudaError_t e = ensure_context()) return record(e);
  if (!kernel) return record(cudaErrorInvalidDeviceFunction);
  unsigned long long threads = 1ull * block.x * block.y * block.z;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || threads == 0 || threads > 1024 || block.z > 64 ||
      grid.y > 65535 || grid.z > 65535 || grid.x > 2147483647u)
    return record(cudaErrorInvalidConfiguration);
  if (shared_mem > 227 * 1024) return record(cudaErrorInvalidValue);
  const DriverApi& d = driver();
  return record((per_thread ? d.cuStreamQuery_ptsz : d.cuStreamQuery)(stream));
}

}  // namespace

FAKECUDA_API void** __cudaRegisterFatBinary(void* fatCubin) { return new void*(fatCubin); }

FAKECUDA_API void __cudaRegisterFatBinaryEnd(void** /*fatCubinHandle*/) {}

FAKECUDA_API void __cudaUnregisterFatBinary(void** fatCubinHandle) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (auto it = r.by_host_function.begin(); it != r.by_host_function.end();) {
    if (it->second->module == fatCubinHandle)
      it = r.by_host_function.erase(it);
    else
      ++it;
  }
  delete fatCubinHandle;
}

FAKECUDA_API void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char* /*deviceFun*/,
                                         const char* deviceName, int /*thread_limit*/, uint3* /*tid*/,
                                         uint3* /*bid*/, dim3* /*bDim*/, dim3* /*gDim*/, int* /*wSize*/) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.by_host_function[hostFun] = std::make_unique<Kernel>(Kernel{fatCubinHandle, deviceName ? deviceName : ""});
}

// Device variables need no bookkeeping: nothing ever reads them on the simulated device.
FAKECUDA_API void __cudaRegisterVar(void** /*fatCubinHandle*/, char* /*hostVar*/, char* /*deviceAddress*/,
                                    const char* /*deviceName*/, int /*ext*/, size_t /*size*/, int /*constant*/,
                                    int /*global*/) {}

// Managed variables are reached through a pointer the runtime fills in; host memory serves.
FAKECUDA_API void __cudaRegisterManagedVar(void** /*fatCubinHandle*/, void** hostVarPtrAddress,
                                           char* /*deviceAddress*/, const char* /*deviceName*/, int /*ext*/,
                                           size_t size, int /*constant*/, int /*global*/) {
  if (hostVarPtrAddress) *hostVarPtrAddress = std::calloc(1, size ? size : 1);
}

FAKECUDA_API char __cudaInitModule(void** /*fatCubinHandle*/) { return 1; }

FAKECUDA_API unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                                  struct CUstream_st* stream) {
  config_stack().push_back(LaunchConfig{gridDim, blockDim, sharedMem, stream});
  return 0;
}

FAKECUDA_API cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem,
                                                    void* stream) {
  auto& stack = config_stack();
  if (stack.empty()) return record(cudaErrorMissingConfiguration);
  LaunchConfig c = stack.back();
  stack.pop_back();
  *gridDim = c.grid;
  *blockDim = c.block;
  *sharedMem = c.shared_mem;
  *static_cast<cudaStream_t*>(stream) = c.stream;
  return cudaSuccess;
}

FAKECUDA_API cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun) {
  if (!kernel) return record(cudaErrorInvalidValue);
  Kernel* k = find_kernel(hostFun);
  *kernel = reinterpret_cast<cudaKernel_t>(k);
  return k ? cudaSuccess : record(cudaErrorInvalidDeviceFunction);
}

FAKECUDA_API cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** /*args*/,
                                            size_t sharedMem, cudaStream_t stream) {
  auto* k = reinterpret_cast<const Kernel*>(kernel);
  return launch(k && registered(k) ? k : nullptr, gridDim, blockDim, sharedMem, stream, false);
}

FAKECUDA_API cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                                 void** /*args*/, size_t sharedMem, cudaStream_t stream) {
  auto* k = reinterpret_cast<const Kernel*>(kernel);
  return launch(k && registered(k) ? k : nullptr, gridDim, blockDim, sharedMem, stream, true);
}

FAKECUDA_API cudaError_t cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** /*args*/,
                                          size_t sharedMem, cudaStream_t stream) {
  return launch(find_kernel(func), gridDim, blockDim, sharedMem, stream, false);
}

FAKECUDA_API cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** /*args*/,
                                               size_t sharedMem, cudaStream_t stream) {
  return launch(find_kernel(func), gridDim, blockDim, sharedMem, stream, true);
}

FAKECUDA_API cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  if (!attr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = load_driver()) return record(e);
  if (!find_kernel(func)) return record(cudaErrorInvalidDeviceFunction);
  std::memset(attr, 0, sizeof(*attr));
  attr->maxThreadsPerBlock = 1024;
  attr->numRegs = 32;
  attr->ptxVersion = 90;
  attr->binaryVersion = 90;
  attr->maxDynamicSharedSizeBytes = 48 * 1024;
  return cudaSuccess;
}

// How the runtime reaches the driver (dlopen + cuGetProcAddress_v2, as real cudart does) and binds contexts.
#include <dlfcn.h>

#include <mutex>
#include <vector>

#include "runtime_state.h"

namespace fakecudart {
namespace {

DriverApi g_api;
cudaError_t g_status = cudaErrorInitializationError;

template <typename F>
bool resolve(const char* name, cuuint64_t flags, F*& out) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (g_api.cuGetProcAddress_v2(name, &p, CUDART_VERSION, flags, &status) != CUDA_SUCCESS || !p) return false;
  out = reinterpret_cast<F*>(p);
  return true;
}

cudaError_t load() {
  // By soname and through the global dlsym, so an LD_PRELOADed interposer sees both steps.
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!handle) return cudaErrorInsufficientDriver;
  g_api.cuGetProcAddress_v2 =
      reinterpret_cast<decltype(&::cuGetProcAddress_v2)>(dlsym(handle, "cuGetProcAddress_v2"));
  if (!g_api.cuGetProcAddress_v2) return cudaErrorInsufficientDriver;
  bool ok = true;
#define FAKECUDART_RESOLVE(symbol, name, flags) ok = resolve(name, flags, g_api.symbol) && ok;
  FAKECUDART_DRIVER_FUNCTIONS(FAKECUDART_RESOLVE)
#undef FAKECUDART_RESOLVE
  if (!ok) return cudaErrorInsufficientDriver;
  return to_runtime_error(g_api.cuInit(0));
}

std::mutex g_primary_mu;
std::vector<CUcontext> g_primaries;  // index: device; retained for the life of the process

}  // namespace

cudaError_t load_driver() {
  static std::once_flag once;
  std::call_once(once, [] { g_status = load(); });
  return g_status;
}

const DriverApi& driver() { return g_api; }

int& thread_device() {
  thread_local int device = 0;
  return device;
}

cudaError_t bind_primary_context(int device) {
  if (cudaError_t e = load_driver()) return e;
  CUcontext ctx = nullptr;
  {
    std::lock_guard lock(g_primary_mu);
    if (device >= 0 && static_cast<size_t>(device) < g_primaries.size()) ctx = g_primaries[device];
    if (!ctx) {
      if (CUresult r = g_api.cuDevicePrimaryCtxRetain(&ctx, device)) return to_runtime_error(r);
      if (g_primaries.size() <= static_cast<size_t>(device)) g_primaries.resize(device + 1);
      g_primaries[device] = ctx;
    }
  }
  return to_runtime_error(g_api.cuCtxSetCurrent(ctx));
}

cudaError_t ensure_context() {
  if (cudaError_t e = load_driver()) return e;
  // A context made current through the driver API wins, as with real cudart.
  CUcontext current = nullptr;
  g_api.cuCtxGetCurrent(&current);
  if (current) return cudaSuccess;
  return bind_primary_context(thread_device());
}

cudaError_t current_device(int* device) {
  if (cudaError_t e = load_driver()) return e;
  CUcontext current = nullptr;
  g_api.cuCtxGetCurrent(&current);
  if (current) {
    CUdevice d = 0;
    if (CUresult r = g_api.cuCtxGetDevice(&d)) return to_runtime_error(r);
    *device = d;
  } else {
    *device = thread_device();
  }
  return cudaSuccess;
}

}  // namespace fakecudart

// Driver contexts: primary-context retain/release/reset, created contexts, the per-thread stack.
#include <algorithm>
#include <mutex>

#include "cuda_decls.h"
#include "device_state.h"

using namespace fakecuda;

namespace {

// Streams die with their context, as in CUDA.
void destroy_context_streams(CUctx_st* ctx) {
  State& s = state();
  for (auto it = s.streams.begin(); it != s.streams.end();) {
    CUstream_st* stream = *it;
    if (stream->ctx == ctx) {
      it = s.streams.erase(it);
      delete stream;
    } else {
      ++it;
    }
  }
}

CUresult create_context(CUcontext* pctx, CUdevice dev) {
  if (CUresult r = require_init()) return r;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  auto* ctx = new CUctx_st;
  ctx->device = dev;
  {
    std::lock_guard lock(state().mu);
    state().contexts.insert(ctx);
  }
  context_stack().push_back(ctx);  // a new context becomes current, like cuCtxCreate
  *pctx = ctx;
  return CUDA_SUCCESS;
}

// Only contexts this library handed out are acceptable; anything else is a bad handle.
bool known_context(CUcontext ctx) {
  std::lock_guard lock(state().mu);
  return state().contexts.count(ctx) != 0;
}

}  // namespace

FAKECUDA_API CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  if (CUresult r = require_init()) return r;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  State& s = state();
  std::lock_guard lock(s.mu);
  Device& d = s.devices[dev];
  if (!d.primary) {
    d.primary = new CUctx_st;
    d.primary->device = dev;
    d.primary->primary = true;
    s.contexts.insert(d.primary);
  }
  if (d.primary_refs++ == 0) d.primary->alive.store(true);
  *pctx = d.primary;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  if (CUresult r = require_init()) return r;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  State& s = state();
  std::lock_guard lock(s.mu);
  Device& d = s.devices[dev];
  if (d.primary_refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
  // The last release resets the primary context: its memory and streams go away.
  if (--d.primary_refs == 0) {
    free_context_memory(d.primary);
    destroy_context_streams(d.primary);
    d.primary->alive.store(false);
  }
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  if (CUresult r = require_init()) return r;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  State& s = state();
  std::lock_guard lock(s.mu);
  Device& d = s.devices[dev];
  // The handle stays valid and usable afterwards; only what it owned is destroyed.
  if (d.primary) {
    free_context_memory(d.primary);
    destroy_context_streams(d.primary);
  }
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  if (CUresult r = require_init()) return r;
  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(state().mu);
  *flags = 0;
  *active = state().devices[dev].primary_refs > 0;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* /*ctxCreateParams*/,
                                     unsigned int /*flags*/, CUdevice dev) {
  return create_context(pctx, dev);
}

FAKECUDA_API CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int /*flags*/, CUdevice dev) {
  return create_context(pctx, dev);
}

FAKECUDA_API CUresult cuCtxDestroy_v2(CUcontext ctx) {
  if (CUresult r = require_init()) return r;
  State& s = state();
  {
    std::lock_guard lock(s.mu);
    if (!s.contexts.count(ctx) || ctx->primary || !ctx->alive.load()) return CUDA_ERROR_INVALID_CONTEXT;
    free_context_memory(ctx);
    destroy_context_streams(ctx);
    ctx->alive.store(false);
  }
  // Other threads notice the dead context when they next use it; this one forgets it now.
  auto& stack = context_stack();
  stack.erase(std::remove(stack.begin(), stack.end(), ctx), stack.end());
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (CUresult r = require_init()) return r;
  auto& stack = context_stack();
  if (!ctx) {
    if (!stack.empty()) stack.pop_back();
    return CUDA_SUCCESS;
  }
  if (!known_context(ctx) || !ctx->alive.load()) return CUDA_ERROR_INVALID_CONTEXT;
  if (stack.empty())
    stack.push_back(ctx);
  else
    stack.back() = ctx;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuCtxGetCurrent(CUcontext* pctx) {
  if (CUresult r = require_init()) return r;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  auto& stack = context_stack();
  *pctx = stack.empty() ? nullptr : stack.back();
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  if (CUresult r = require_init()) return r;
  if (!ctx || !known_context(ctx) || !ctx->alive.load()) return CUDA_ERROR_INVALID_CONTEXT;
  context_stack().push_back(ctx);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  if (CUresult r = require_init()) return r;
  auto& stack = context_stack();
  if (stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx) *pctx = stack.back();
  stack.pop_back();
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuCtxGetDevice(CUdevice* device) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = current_context(&ctx)) return r;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  *device = ctx->device;
  return CUDA_SUCCESS;
}

// Nothing ever runs asynchronously on the simulated device, so there is nothing to wait for.
FAKECUDA_API CUresult cuCtxSynchronize(void) {
  CUctx_st* ctx = nullptr;
  return current_context(&ctx);
}

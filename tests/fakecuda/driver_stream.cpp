// Driver streams: opaque handles that remember their context and device; all work is already done.
#include <mutex>

#include "cuda_decls.h"
#include "device_state.h"

using namespace fakecuda;

namespace {

CUresult check_stream(CUstream stream) {
  if (CUresult r = require_init()) return r;
  std::lock_guard lock(state().mu);
  int device = 0;
  return stream_device(stream, &device);
}

}  // namespace

FAKECUDA_API CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = current_context(&ctx)) return r;
  if (!phStream || (Flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING))) return CUDA_ERROR_INVALID_VALUE;
  auto* stream = new CUstream_st;
  stream->ctx = ctx;
  stream->device = ctx->device;
  stream->flags = Flags;
  std::lock_guard lock(state().mu);
  state().streams.insert(stream);
  *phStream = stream;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuStreamDestroy_v2(CUstream hStream) {
  if (CUresult r = require_init()) return r;
  State& s = state();
  std::lock_guard lock(s.mu);
  auto it = s.streams.find(hStream);
  if (it == s.streams.end()) return CUDA_ERROR_INVALID_HANDLE;
  s.streams.erase(it);
  delete hStream;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuStreamSynchronize(CUstream hStream) { return check_stream(hStream); }
FAKECUDA_API CUresult cuStreamSynchronize_ptsz(CUstream hStream) { return check_stream(hStream); }
FAKECUDA_API CUresult cuStreamQuery(CUstream hStream) { return check_stream(hStream); }
FAKECUDA_API CUresult cuStreamQuery_ptsz(CUstream hStream) { return check_stream(hStream); }

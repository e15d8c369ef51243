// An independent oracle for gmemhook's completeness (issue 12), built only for the GPU check
// (-DGMEMHOOK_CUPTI_ORACLE=ON): a CUPTI injection library, loaded by the driver through
// CUDA_INJECTION64_PATH beside LD_PRELOAD=libgmemhook.so, that subscribes to
// CUPTI_ACTIVITY_KIND_MEMORY2 — every allocation and release the driver itself performs, with
// its address, size and kind — and writes them, one JSON object a line, to
// $GMEMHOOK_CUPTI_OUT.<pid>.jsonl. scripts/gpu_check.py compares them with gmemhook's records.
#include <cupti.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace {

constexpr size_t kBufferSize = 8u << 20;
constexpr size_t kAlign = 8;

std::mutex g_mu;
FILE* g_out = nullptr;

const char* kind_name(CUpti_ActivityMemoryKind k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return "pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return "pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return "device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return "array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return "managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return "device-static";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return "managed-static";
    default: return "unknown";
  }
}

const char* pool_name(CUpti_ActivityMemoryPoolType t) {
  switch (t) {
    case CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL: return "local";
    case CUPTI_ACTIVITY_MEMORY_POOL_TYPE_IMPORTED: return "imported";
    default: return "none";
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  void* p = nullptr;
  if (posix_memalign(&p, kAlign, kBufferSize) != 0) p = nullptr;
  *buffer = static_cast<uint8_t*>(p);
  *size = p ? kBufferSize : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard lock(g_mu);
  CUpti_Activity* record = nullptr;
  while (g_out && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_MEMORY2) continue;
    const auto* m = reinterpret_cast<const CUpti_ActivityMemory4*>(record);
    const bool alloc = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
    std::fprintf(g_out,
                 "{\"op\":\"%s\",\"kind\":\"%s\",\"address\":%llu,\"bytes\":%llu,\"device\":%u,"
                 "\"pool\":\"%s\",\"async\":%u,\"timestamp\":%llu,\"correlation\":%u}\n",
                 alloc ? "alloc" : "release", kind_name(m->memoryKind),
                 static_cast<unsigned long long>(m->address), static_cast<unsigned long long>(m->bytes),
                 m->deviceId, pool_name(m->memoryPoolConfig.memoryPoolType), m->isAsync,
                 static_cast<unsigned long long>(m->timestamp), m->correlationId);
  }
  std::free(buffer);
}

void flush_at_exit() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard lock(g_mu);
  if (g_out) std::fclose(g_out);
  g_out = nullptr;
}

}  // namespace

// Called by the CUDA driver at initialisation when CUDA_INJECTION64_PATH names this library.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static std::atomic<bool> done{false};
  if (done.exchange(true)) return 1;
  const char* base = std::getenv("GMEMHOOK_CUPTI_OUT");
  if (!base || !*base) {
    std::fprintf(stderr, "cupti_memory: GMEMHOOK_CUPTI_OUT is not set, recording nothing\n");
    return 1;
  }
  char path[4096];
  std::snprintf(path, sizeof path, "%s.%d.jsonl", base, static_cast<int>(getpid()));
  g_out = std::fopen(path, "w");
  if (!g_out) {
    std::perror(path);
    return 1;
  }
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "cupti_memory: cannot subscribe to CUPTI_ACTIVITY_KIND_MEMORY2\n");
    return 1;
  }
  std::atexit(flush_at_exit);
  return 1;
}

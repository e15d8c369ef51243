// An independent oracle for gmemhook's completeness, built only for the GPU check
// (-DGMEMHOOK_CUPTI_ORACLE=ON): a CUPTI injection library, loaded by the driver through
// CUDA_INJECTION64_PATH beside LD_PRELOAD=libgmemhook.so, that subscribes to
// CUPTI_ACTIVITY_KIND_MEMORY2 — every allocation and release the driver itself performs, with
// its address, size and kind — and writes them, one JSON object a line, to
// $GMEMHOOK_CUPTI_OUT.<pid>.jsonl. scripts/gpu_check.py compares them with gmemhook's records.
// Each record is written whole (pool configuration, context, stream, PC, source), so a record
// gmemhook has nothing for can be identified from the check's output. With GMEMHOOK_CUPTI_APIS=1
// it also writes the name of every driver and runtime call with its correlation id: a memory
// record carries the correlation id of the call that made it (the graph pool's reservations at
// address 0 come from cuGraphLaunch, the levels of a mipmapped array from its one creation call).
#include <cupti.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

using ull = unsigned long long;

// A name CUPTI hands out (variable name, source object) as a JSON string; they hold no quotes or
// control characters in practice, and anything that would break the line is replaced.
void write_name(const char* key, const char* value) {
  std::fprintf(g_out, ",\"%s\":\"", key);
  for (const char* c = value ? value : ""; *c; ++c)
    std::fputc(*c == '"' || *c == '\\' || static_cast<unsigned char>(*c) < 0x20 ? '?' : *c, g_out);
  std::fputc('"', g_out);
}

void write_memory(const CUpti_ActivityMemory4& m) {
  const bool alloc = m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  const auto& pool = m.memoryPoolConfig;
  std::fprintf(g_out,
               "{\"op\":\"%s\",\"kind\":\"%s\",\"address\":%llu,\"bytes\":%llu,\"device\":%u,"
               "\"pool\":\"%s\",\"async\":%u,\"timestamp\":%llu,\"correlation\":%u,\"pid\":%u,"
               "\"context\":%u,\"stream\":%u,\"pc\":%llu,\"pool_address\":%llu,"
               "\"pool_release_threshold\":%llu,\"pool_size\":%llu,\"pool_utilized\":%llu",
               alloc ? "alloc" : "release", kind_name(m.memoryKind), static_cast<ull>(m.address),
               static_cast<ull>(m.bytes), m.deviceId, pool_name(pool.memoryPoolType), m.isAsync,
               static_cast<ull>(m.timestamp), m.correlationId, m.processId, m.contextId, m.streamId,
               static_cast<ull>(m.PC), static_cast<ull>(pool.address),
               static_cast<ull>(pool.releaseThreshold), static_cast<ull>(pool.pool.size),
               static_cast<ull>(pool.utilizedSize));
  write_name("name", m.name);
  write_name("source", m.source);
  std::fputs("}\n", g_out);
}

void write_api(const CUpti_ActivityAPI& a, CUpti_CallbackDomain domain) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(domain, a.cbid, &name) != CUPTI_SUCCESS) name = nullptr;
  std::fprintf(g_out, "{\"op\":\"api\",\"layer\":\"%s\",\"correlation\":%u,\"result\":%u",
               domain == CUPTI_CB_DOMAIN_DRIVER_API ? "driver" : "runtime", a.correlationId,
               a.returnValue);
  write_name("name", name);
  std::fputs("}\n", g_out);
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard lock(g_mu);
  CUpti_Activity* record = nullptr;
  while (g_out && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_MEMORY2)
      write_memory(*reinterpret_cast<const CUpti_ActivityMemory4*>(record));
    else if (record->kind == CUPTI_ACTIVITY_KIND_DRIVER)
      write_api(*reinterpret_cast<const CUpti_ActivityAPI*>(record), CUPTI_CB_DOMAIN_DRIVER_API);
    else if (record->kind == CUPTI_ACTIVITY_KIND_RUNTIME)
      write_api(*reinterpret_cast<const CUpti_ActivityAPI*>(record), CUPTI_CB_DOMAIN_RUNTIME_API);
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
  // Every API call is a record: only for the small samples, where the check names the calls.
  const char* apis = std::getenv("GMEMHOOK_CUPTI_APIS");
  if (apis && std::strcmp(apis, "1") == 0 &&
      (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER) != CUPTI_SUCCESS ||
       cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) != CUPTI_SUCCESS))
    std::fprintf(stderr, "cupti_memory: cannot subscribe to driver/runtime API records\n");
  std::atexit(flush_at_exit);
  return 1;
}

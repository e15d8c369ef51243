// Device configuration, host-memory backing, and the live-allocation table behind every fake call.
#include "device_state.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>

namespace fakecuda {
namespace {

constexpr int kDefaultDevices = 2;
constexpr int kMaxDevices = 64;
constexpr size_t kDefaultCapacity = size_t{1} << 30;

// Accepts "12345", "64M", "1G", "512k", "2GiB", "3gb": binary multiples, case-insensitive.
bool parse_size(const char* text, size_t* out) {
  char* end = nullptr;
  unsigned long long value = std::strtoull(text, &end, 10);
  if (end == text) return false;
  int shift = 0;
  switch (std::tolower(static_cast<unsigned char>(*end))) {
    case 'k': shift = 10; break;
    case 'm': shift = 20; break;
    case 'g': shift = 30; break;
    case 't': shift = 40; break;
    case '\0': break;
    default: return false;
  }
  if (shift) {
    ++end;
    if (std::tolower(static_cast<unsigned char>(*end)) == 'i') ++end;
    if (std::tolower(static_cast<unsigned char>(*end)) == 'b') ++end;
  }
  if (*end != '\0' || value == 0 || value > (~0ull >> shift)) return false;
  *out = static_cast<size_t>(value << shift);
  return true;
}

int configured_device_count() {
  const char* text = std::getenv("FAKECUDA_DEVICES");
  if (!text || !*text) return kDefaultDevices;
  char* end = nullptr;
  long n = std::strtol(text, &end, 10);
  if (*end != '\0' || n < 0 || n > kMaxDevices) {
    std::fprintf(stderr, "fakecuda: ignoring FAKECUDA_DEVICES=%s (want 0..%d)\n", text, kMaxDevices);
    return kDefaultDevices;
  }
  return static_cast<int>(n);
}

size_t configured_capacity() {
  const char* text = std::getenv("FAKECUDA_CAPACITY");
  size_t capacity = kDefaultCapacity;
  if (text && *text && !parse_size(text, &capacity)) {
    std::fprintf(stderr, "fakecuda: ignoring FAKECUDA_CAPACITY=%s (want bytes, or 64M, 1G...)\n",
                 text);
    capacity = kDefaultCapacity;
  }
  return capacity;
}

}  // namespace

State& state() {
  // Leaked on purpose: atexit handlers of the program may still call in after static destruction.
  static State* s = [] {
    auto* st = new State;
    // A fork child must not inherit the table's lock held by another thread of the parent (the
    // recorder's fork tests allocate in a child while the parent's threads keep allocating).
    pthread_atfork([] { state().mu.lock(); }, [] { state().mu.unlock(); },
                   [] { state().mu.unlock(); });
    return st;
  }();
  return *s;
}

CUresult configure_devices() {
  State& s = state();
  std::lock_guard lock(s.mu);
  int count = configured_device_count();
  size_t capacity = configured_capacity();
  s.devices.resize(count);
  for (int d = 0; d < count; ++d) {
    Device& dev = s.devices[d];
    dev.capacity = capacity;
    auto* pool = new CUmemPoolHandle_st;
    pool->device = d;
    pool->is_default = true;
    s.pools.insert(pool);
    dev.default_pool = dev.current_pool = pool;
  }
  return count == 0 ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}

size_t page_size() {
  static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

bool valid_device(int device) {
  return device >= 0 && static_cast<size_t>(device) < state().devices.size();
}

CUresult require_init() {
  return state().initialized.load(std::memory_order_acquire) ? CUDA_SUCCESS
                                                              : CUDA_ERROR_NOT_INITIALIZED;
}

std::vector<CUctx_st*>& context_stack() {
  thread_local std::vector<CUctx_st*> stack;
  return stack;
}

CUresult current_context(CUctx_st** out) {
  if (CUresult r = require_init()) return r;
  auto& stack = context_stack();
  if (stack.empty() || !stack.back() || !stack.back()->alive.load()) return CUDA_ERROR_INVALID_CONTEXT;
  *out = stack.back();
  return CUDA_SUCCESS;
}

namespace {
// Recently freed small backings, reused before asking the kernel again: an mmap+munmap pair
// costs microseconds and would drown the recorder's overhead in bench/hook_bench. Guarded by
// state().mu, which every caller holds.
constexpr size_t kCachedPages = 16;
constexpr size_t kCachePerSize = 64;
struct BackingCache {
  void* slots[kCachedPages + 1][kCachePerSize];
  size_t count[kCachedPages + 1] = {};
};
BackingCache g_backing_cache;
}  // namespace

void* map_backing(size_t bytes) {
  size_t pages = round_up(bytes, page_size()) / page_size();
  if (pages <= kCachedPages && g_backing_cache.count[pages] > 0)
    return g_backing_cache.slots[pages][--g_backing_cache.count[pages]];
  // MAP_NORESERVE: a 1 GiB simulated device must not need 1 GiB of host memory until touched.
  void* p = mmap(nullptr, round_up(bytes, page_size()), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void unmap_backing(uintptr_t base, size_t bytes) {
  size_t pages = round_up(bytes, page_size()) / page_size();
  if (pages <= kCachedPages && g_backing_cache.count[pages] < kCachePerSize) {
    g_backing_cache.slots[pages][g_backing_cache.count[pages]++] = reinterpret_cast<void*>(base);
    return;
  }
  munmap(reinterpret_cast<void*>(base), round_up(bytes, page_size()));
}

CUresult add_allocation(AllocKind kind, CUctx_st* ctx, size_t size, uintptr_t* out) {
  State& s = state();
  Device& dev = s.devices[ctx->device];
  bool on_device = kind != AllocKind::Host;
  // Pinned host memory has no simulated limit; only the host itself can refuse it.
  if (size > (on_device ? dev.capacity : SIZE_MAX / 2)) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t charged = round_up(size, kAllocAlignment);
  if (on_device && charged > dev.capacity - dev.used) return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = map_backing(charged);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  (on_device ? dev.used : s.pinned_host_bytes) += charged;
  Allocation a;
  a.base = reinterpret_cast<uintptr_t>(p);
  a.size = size;
  a.charged = charged;
  a.kind = kind;
  a.device = ctx->device;
  a.ctx = ctx;
  a.id = s.next_id++;
  s.allocations.emplace(a.base, a);
  *out = a.base;
  return CUDA_SUCCESS;
}

void remove_allocation(std::map<uintptr_t, Allocation>::iterator it) {
  State& s = state();
  const Allocation& a = it->second;
  if (a.kind != AllocKind::Imported)
    (a.kind == AllocKind::Host ? s.pinned_host_bytes : s.devices[a.device].used) -= a.charged;
  if (a.kind != AllocKind::Graph) unmap_backing(a.base, a.charged);
  s.allocations.erase(it);
}

void free_context_memory(CUctx_st* ctx) {
  State& s = state();
  for (auto it = s.allocations.begin(); it != s.allocations.end();) {
    auto next = std::next(it);
    if (it->second.ctx == ctx && it->second.kind != AllocKind::Pool) remove_allocation(it);
    it = next;
  }
}

CUresult stream_device(CUstream stream, int* device) {
  if (stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD) {
    CUctx_st* ctx = nullptr;
    if (CUresult r = current_context(&ctx)) return r;
    *device = ctx->device;
    return CUDA_SUCCESS;
  }
  if (!state().streams.count(stream) || !stream->ctx->alive.load()) return CUDA_ERROR_INVALID_HANDLE;
  *device = stream->device;
  return CUDA_SUCCESS;
}

bool lookup_pointer(uintptr_t ptr, PointerInfo* out) {
  State& s = state();
  auto a = s.allocations.upper_bound(ptr);
  if (a != s.allocations.begin()) {
    --a;
    const Allocation& al = a->second;
    if (ptr < al.base + al.size) {
      out->base = out->range_base = al.base;
      out->size = out->range_size = al.size;
      out->type = al.kind == AllocKind::Host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
      out->device = al.device;
      out->ctx = al.ctx;
      out->pool = al.pool;
      out->managed = al.kind == AllocKind::Managed;
      out->vmm = false;
      out->prot = PROT_READ | PROT_WRITE;
      out->id = al.id;
      return true;
    }
  }
  auto m = s.mappings.upper_bound(ptr);
  if (m == s.mappings.begin()) return false;
  --m;
  if (ptr >= m->first + m->second.size) return false;
  const PhysicalMemory& phys = s.handles.at(m->second.handle);
  auto r = std::prev(s.reservations.upper_bound(ptr));  // a mapping always lies in a reservation
  out->base = m->first;
  out->size = m->second.size;
  out->range_base = r->first;
  out->range_size = r->second;
  out->type = phys.device < 0 ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
  out->device = phys.device;
  out->ctx = nullptr;
  out->pool = nullptr;
  out->managed = false;
  out->vmm = true;
  out->prot = m->second.prot;
  out->id = phys.id;
  return true;
}

Access check_range(uintptr_t ptr, size_t bytes, bool write) {
  PointerInfo info;
  if (!lookup_pointer(ptr, &info)) return Access::Unknown;
  if (!info.vmm) return bytes <= info.base + info.size - ptr ? Access::Ok : Access::Invalid;
  // A VMM range may span several adjacent mappings; every byte needs access granted.
  State& s = state();
  int need = write ? PROT_WRITE : PROT_READ;
  uintptr_t cursor = ptr, end = ptr + bytes;
  if (end < ptr) return Access::Invalid;
  auto m = std::prev(s.mappings.upper_bound(ptr));
  while (true) {
    if (!(m->second.prot & need)) return Access::Fault;
    cursor = m->first + m->second.size;
    if (cursor >= end) return Access::Ok;
    ++m;
    if (m == s.mappings.end() || m->first != cursor) return Access::Invalid;
  }
}

}  // namespace fakecuda

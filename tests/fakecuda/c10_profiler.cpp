// The fake libc10.so: c10::reportMemoryUsageToProfiler, which only remembers each call it
// receives, and a CPU allocator that reports to it from inside this library.
#include <cstdlib>
#include <mutex>
#include <vector>

#include "fake_c10.h"

#define FAKEC10_API __attribute__((visibility("default")))

namespace {

std::mutex g_mutex;
std::vector<FakeC10Report>& received() {
  static std::vector<FakeC10Report> calls;
  return calls;
}

}  // namespace

namespace c10 {

FAKEC10_API void reportMemoryUsageToProfiler(void* ptr, int64_t alloc_size, size_t total_allocated,
                                             size_t total_reserved, Device device) {
  std::lock_guard lock(g_mutex);
  received().push_back({reinterpret_cast<uint64_t>(ptr), alloc_size, total_allocated,
                        total_reserved, device.type, device.index});
}

}  // namespace c10

namespace {
std::mutex g_cpu_mutex;
size_t g_cpu_allocated = 0;
}  // namespace

extern "C" {

FAKEC10_API size_t fakec10_received_count() {
  std::lock_guard lock(g_mutex);
  return received().size();
}

FAKEC10_API bool fakec10_received(size_t i, FakeC10Report* out) {
  std::lock_guard lock(g_mutex);
  if (i >= received().size()) return false;
  *out = received()[i];
  return true;
}

// c10's CPU allocator reports with a CPU device and no reserved memory of its own.
FAKEC10_API void* fakec10_cpu_alloc(size_t size) {
  void* p = std::malloc(size ? size : 1);
  std::lock_guard lock(g_cpu_mutex);
  g_cpu_allocated += size;
  c10::reportMemoryUsageToProfiler(p, static_cast<int64_t>(size), g_cpu_allocated, 0,
                                   c10::Device{0, -1});
  return p;
}

FAKEC10_API void fakec10_cpu_free(void* ptr, size_t size) {
  {
    std::lock_guard lock(g_cpu_mutex);
    g_cpu_allocated -= size;
    c10::reportMemoryUsageToProfiler(ptr, -static_cast<int64_t>(size), g_cpu_allocated, 0,
                                     c10::Device{0, -1});
  }
  std::free(ptr);
}

}  // extern "C"

// A PyTorch-shaped program for the interposer tests: it dlopens the fake libc10_cuda.so with
// RTLD_LOCAL (as Python loads torch's extension modules), runs its caching allocator on the
// simulated device, and prints what the allocator sent to c10::reportMemoryUsageToProfiler and
// what libc10.so received, so a test can compare both with the log.
#include <dlfcn.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "fake_c10.h"

namespace {

constexpr const char* kReportSymbol = "_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE";
constexpr size_t kMiB = size_t{1} << 20;

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "blocks scenario: %s: %s\n", what, dlerror());
  std::exit(99);
}

void* open_library(const char* name) {
  std::string path = std::string(FAKEC10_DIR) + "/" + name;
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) die(path.c_str());
  return h;
}

template <typename Fn>
Fn symbol(void* handle, const char* name) {
  void* p = dlsym(handle, name);
  if (!p) die(name);
  return reinterpret_cast<Fn>(p);
}

// The fake libraries' C API, looked up the way a Python extension's users would reach it.
struct C10 {
  void* (*cuda_malloc)(size_t, int);
  void (*cuda_free)(void*);
  void (*empty_cache)();
  size_t (*action_count)();
  bool (*action)(size_t, FakeC10Action*);
  size_t (*received_count)();
  bool (*received)(size_t, FakeC10Report*);
  void* (*cpu_alloc)(size_t);
  void (*cpu_free)(void*, size_t);

  explicit C10(bool with_cuda) {
    void* core = open_library("libc10.so");
    received_count = symbol<decltype(received_count)>(core, "fakec10_received_count");
    received = symbol<decltype(received)>(core, "fakec10_received");
    cpu_alloc = symbol<decltype(cpu_alloc)>(core, "fakec10_cpu_alloc");
    cpu_free = symbol<decltype(cpu_free)>(core, "fakec10_cpu_free");
    if (!with_cuda) return;
    void* cuda = open_library("libc10_cuda.so");
    cuda_malloc = symbol<decltype(cuda_malloc)>(cuda, "fakec10_cuda_malloc");
    cuda_free = symbol<decltype(cuda_free)>(cuda, "fakec10_cuda_free");
    empty_cache = symbol<decltype(empty_cache)>(cuda, "fakec10_cuda_empty_cache");
    action_count = symbol<decltype(action_count)>(cuda, "fakec10_cuda_action_count");
    action = symbol<decltype(action)>(cuda, "fakec10_cuda_action");
  }
};

void print_report(const char* tag, char what, const FakeC10Report& r) {
  std::printf("%s %c 0x%" PRIx64 " %" PRId64 " %" PRIu64 " %" PRIu64 " %d %d\n", tag, what, r.ptr,
              r.alloc_size, r.total_allocated, r.total_reserved, r.device_type, r.device_index);
}

void* must_malloc(const C10& c10, size_t size, int device) {
  void* p = c10.cuda_malloc(size, device);
  if (!p) die("fakec10_cuda_malloc");
  return p;
}

// A second thread churning blocks on device 0 while the main thread does too: two thread files
// whose block events interleave under the allocator's lock.
void churn(const C10& c10, unsigned seed, int rounds) {
  void* held[4] = {};
  for (int i = 0; i < rounds; ++i) {
    seed = seed * 1103515245u + 12345u;
    void*& slot = held[seed % 4];
    if (slot) c10.cuda_free(slot);
    slot = must_malloc(c10, 512 + (seed >> 8) % (3 * kMiB), 0);
  }
  for (void* p : held) c10.cuda_free(p);
}

// Segments and blocks on two devices, reuse from the cache, a second thread, CPU reports,
// empty_cache, and blocks still allocated at exit; then everything sent and received.
int blocks() {
  C10 c10(true);
  void* a = must_malloc(c10, 1000, 0);
  void* b = must_malloc(c10, 300000, 0);
  void* c = must_malloc(c10, 3 * kMiB, 0);
  c10.cuda_free(a);
  void* a2 = must_malloc(c10, 800, 0);  // from the cache: no new segment
  void* d = must_malloc(c10, 12 * kMiB, 1);
  void* cpu = c10.cpu_alloc(4096);
  c10.cpu_free(cpu, 4096);
  std::thread other(churn, std::cref(c10), 7u, 200);
  churn(c10, 11u, 200);
  other.join();
  c10.cuda_free(c);
  c10.cuda_free(d);
  c10.empty_cache();
  void* e = must_malloc(c10, 5 * kMiB, 0);
  std::printf("live 0x%" PRIxPTR " 0x%" PRIxPTR " 0x%" PRIxPTR "\n",
              reinterpret_cast<uintptr_t>(a2), reinterpret_cast<uintptr_t>(b),
              reinterpret_cast<uintptr_t>(e));
  FakeC10Action act;
  for (size_t i = 0; c10.action(i, &act); ++i) print_report("sent", act.what, act.report);
  FakeC10Report r;
  for (size_t i = 0; c10.received(i, &r); ++i) print_report("received", 'b', r);
  return 0;
}

// Only CPU reports: PyTorch without CUDA.
int cpu_only(int n) {
  C10 c10(false);
  for (int i = 0; i < n; ++i) c10.cpu_free(c10.cpu_alloc(64 * (i + 1)), 64 * (i + 1));
  std::printf("received %zu\n", c10.received_count());
  return 0;
}

// The symbol with no definition behind it: a program that looks it up itself, without PyTorch.
int no_next() {
  using Report = void (*)(void*, int64_t, size_t, size_t, c10::Device);
  auto report = reinterpret_cast<Report>(dlsym(RTLD_DEFAULT, kReportSymbol));
  if (!report) {
    std::printf("absent\n");
    return 0;
  }
  static char block[4096];
  report(block, sizeof block, sizeof block, 2 * kMiB, c10::Device{1, 0});
  report(block, -static_cast<int64_t>(sizeof block), 0, 2 * kMiB, c10::Device{1, 0});
  report(block, 64, 64, 0, c10::Device{0, -1});
  std::printf("called\n");
  return 0;
}

// Allocates and frees until killed, printing each block report once the call has returned.
int loop() {
  C10 c10(true);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  void* held[8] = {};
  unsigned seed = 3;
  for (long i = 0; i < 10000000; ++i) {
    seed = seed * 1103515245u + 12345u;
    void*& slot = held[seed % 8];
    if (slot) {
      c10.cuda_free(slot);
      std::printf("free 0x%" PRIxPTR "\n", reinterpret_cast<uintptr_t>(slot));
    }
    slot = must_malloc(c10, 512 + (seed >> 8) % (4 * kMiB), 0);
    std::printf("alloc 0x%" PRIxPTR "\n", reinterpret_cast<uintptr_t>(slot));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "blocks") return blocks();
  if (mode == "cpu-only") return cpu_only(argc > 2 ? std::atoi(argv[2]) : 10);
  if (mode == "no-next") return no_next();
  if (mode == "loop") return loop();
  std::fprintf(stderr, "usage: %s blocks | cpu-only [N] | no-next | loop\n", argv[0]);
  return 2;
}

// A fake libnvidia-ml.so.1 that agrees with the simulated device: this process is listed on a
// device while it has a context there, using kContextBytes (what a real context, its modules and
// libraries cost) plus what fakecuda_live_bytes() says it holds; another process is always listed
// with kOtherProcessBytes, so a sampler that does not match by pid is caught.
//
// Devices are found by PCI bus id, bus 0x10 + physical index, as the fake libcuda reports them.
// FAKENVML_MIG=1: every device is in MIG mode. FAKENVML_FOREIGN_PID=1: this process is listed
// under another pid, as in a container with its own pid namespace.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "interposer/record/nvml_api.h"

#define FAKENVML_API extern "C" __attribute__((visibility("default")))

namespace nvml = gmemhook::nvml;

namespace {
constexpr unsigned long long kContextBytes = 48ull << 20;
constexpr unsigned long long kOtherProcessBytes = 32ull << 20;
constexpr int kPhysicalDevices = 16;
constexpr nvml::Return kErrorInvalidArgument = 2;
constexpr nvml::Return kErrorNotFound = 6;

struct FakeDevice {
  int physical;
};
FakeDevice g_devices[kPhysicalDevices] = {{0}, {1}, {2},  {3},  {4},  {5},  {6},  {7},
                                          {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}};

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, "1") == 0;
}

// The fake libcuda's ordinal of a physical device (CUDA_VISIBLE_DEVICES renumbers), or -1.
int ordinal_of(int physical) {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!v) return physical;
  for (int i = 0; *v; ++i) {
    char* end = nullptr;
    long n = std::strtol(v, &end, 10);
    if (end == v) return -1;
    if (n == physical) return i;
    v = *end == ',' ? end + 1 : end;
  }
  return -1;
}

// A probe of the already loaded fake libcuda (nothing when the process has not loaded it).
template <typename Fn>
Fn cuda_probe(const char* name) {
  void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return nullptr;
  auto f = reinterpret_cast<Fn>(dlsym(h, name));
  dlclose(h);
  return f;
}

// What this process holds on the device by NVML's count, or 0 when it has no context there.
unsigned long long own_bytes(const FakeDevice* d) {
  int ordinal = ordinal_of(d->physical);
  auto alive = cuda_probe<int (*)(int)>("fakecuda_context_alive");
  auto live = cuda_probe<size_t (*)(int)>("fakecuda_live_bytes");
  if (ordinal < 0 || !alive || !live || !alive(ordinal)) return 0;
  return kContextBytes + live(ordinal);
}

unsigned long long total_bytes() {
  using TotalFn = int (*)(size_t*, int);
  auto total = cuda_probe<TotalFn>("cuDeviceTotalMem_v2");
  size_t bytes = 0;
  if (!total || total(&bytes, 0) != 0) return 1ull << 30;  // fakecuda's default capacity
  return bytes;
}
}  // namespace

FAKENVML_API nvml::Return nvmlInit_v2() { return nvml::kSuccess; }
FAKENVML_API nvml::Return nvmlShutdown() { return nvml::kSuccess; }

FAKENVML_API nvml::Return nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, nvml::Device* out) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  if (!bus_id || !out) return kErrorInvalidArgument;
  if (std::sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4)
    return kErrorInvalidArgument;
  int physical = static_cast<int>(bus) - 0x10;
  if (domain != 0 || device != 0 || physical < 0 || physical >= kPhysicalDevices)
    return kErrorNotFound;
  *out = reinterpret_cast<nvml::Device>(&g_devices[physical]);
  return nvml::kSuccess;
}

FAKENVML_API nvml::Return nvmlDeviceGetHandleByUUID(const char*, nvml::Device*) {
  return kErrorNotFound;
}

FAKENVML_API nvml::Return nvmlDeviceGetMemoryInfo(nvml::Device device, nvml::Memory* memory) {
  if (!device || !memory) return kErrorInvalidArgument;
  const auto* d = reinterpret_cast<const FakeDevice*>(device);
  memory->total = total_bytes();
  memory->used = kOtherProcessBytes + own_bytes(d);
  memory->free = memory->total - memory->used;
  return nvml::kSuccess;
}

FAKENVML_API nvml::Return nvmlDeviceGetComputeRunningProcesses_v3(nvml::Device device,
                                                                  unsigned int* count,
                                                                  nvml::ProcessInfo* infos) {
  if (!device || !count) return kErrorInvalidArgument;
  const auto* d = reinterpret_cast<const FakeDevice*>(device);
  const unsigned pid = static_cast<unsigned>(getpid());
  nvml::ProcessInfo list[2] = {{pid + 7919, kOtherProcessBytes, ~0u, ~0u}, {}};
  unsigned n = 1;
  if (unsigned long long mine = own_bytes(d))
    list[n++] = {env_on("FAKENVML_FOREIGN_PID") ? pid + 1 : pid, mine, ~0u, ~0u};
  if (*count < n || !infos) {
    *count = n;
    return nvml::kErrorInsufficientSize;
  }
  std::memcpy(infos, list, n * sizeof(list[0]));
  *count = n;
  return nvml::kSuccess;
}

FAKENVML_API nvml::Return nvmlDeviceGetMigMode(nvml::Device device, unsigned int* current,
                                               unsigned int* pending) {
  if (!device || !current || !pending) return kErrorInvalidArgument;
  *current = *pending = env_on("FAKENVML_MIG") ? nvml::kMigEnabled : 0;
  return nvml::kSuccess;
}

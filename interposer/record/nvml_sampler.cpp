// NVML sampling inside the traced process (see nvml_sampler.h). Nothing here allocates with
// malloc. NVML is only called with the sampling lock held and no other lock of ours: a hook only
// try-locks it, so a hook never waits behind NVML (which may take the loader lock itself).
#include "interposer/record/nvml_sampler.h"

#include <cuda.h>
#include <dlfcn.h>
#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <ctime>

#include "interposer/base/config.h"
#include "interposer/base/event_time.h"
#include "interposer/base/hook_thread.h"
#include "interposer/base/real_symbols.h"
#include "interposer/base/text.h"
#include "interposer/log/process_log.h"
#include "interposer/record/nvml_api.h"

namespace gmemhook {

using format::EventKind;

namespace {
// CUDA ordinals a sample covers; a process using more devices has the first 64 sampled.
constexpr int kMaxDevices = 64;
constexpr unsigned kMaxProcesses = 1024;  // NVML's list for one device; more is not sampled
// The background thread's stack: NVML's calls are shallow, but leave it room.
constexpr size_t kThreadStack = 256u << 10;

enum LoadState : int { kUntried, kLoaded, kUnavailable };
enum DeviceState : uint8_t { kUnknown, kUsable, kUnusable };

struct Api {
  nvml::InitFn init = nullptr;
  nvml::GetHandleByStringFn by_pci = nullptr, by_uuid = nullptr;
  nvml::GetMemoryInfoFn memory = nullptr;
  nvml::GetProcessesFn processes = nullptr;
  nvml::GetMigModeFn mig_mode = nullptr;
};

// The sampler's state. What an allocation reads after every event (the CUDA ordinals the process
// used, as bits; the first call's and first allocation's samples; when an allocation last asked
// for a peak check) lies on the event's line instead (event_globals.h, nvml_*).
struct NvmlSampler {
  // Guards everything below but the atomics: NVML is called only with it held.
  std::atomic_flag sampling = ATOMIC_FLAG_INIT;
  int load = kUntried;
  Api api;
  nvml::Device handles[kMaxDevices] = {};
  uint8_t device_state[kMaxDevices] = {};
  uint64_t highest[kMaxDevices] = {};  // the process's highest NVML figure so far, per device
  bool unlisted_noted[kMaxDevices] = {};
  nvml::ProcessInfo processes[kMaxProcesses] = {};
  std::atomic<bool> thread_started{false};
  std::atomic<bool> stopping{false};
  std::atomic<bool> peak_wanted{false};
  // A first-call or first-allocation sample a busy hook left to the thread (an NvmlReason, or 0).
  std::atomic<int> pending{0};
  std::atomic<uint32_t> wake{0};  // futex word: bumped to wake the thread early
  // Set in a fork child of a process whose NVML was loaded: its locks may be held by the thread
  // that did not survive fork, so the child never calls it.
  bool inherited = false;
};
constinit NvmlSampler g_nvml;

bool try_lock() { return !g_nvml.sampling.test_and_set(std::memory_order_acquire); }
void unlock() { g_nvml.sampling.clear(std::memory_order_release); }

void note(const char* a, int device = -1, const char* b = nullptr) {
  FixedString<1024> m;
  m.append("nvidia-smi figures: ");
  if (device >= 0) m.append("CUDA device ").append_uint(static_cast<uint64_t>(device)).append(" ");
  m.append(a);
  if (b) m.append(b);
  write_process_note(m.c_str());
}

template <typename Fn>
Fn nvml_symbol(void* lib, const char* name) {
  return reinterpret_cast<Fn>(real_dlsym(lib, name));
}

// dlopen, never a link dependency: a machine without the driver still runs the program.
void load_locked() {
  g_nvml.load = kUnavailable;
  if (g_nvml.inherited) {
    note("not sampled: NVML was already in use when this process was forked");
    return;
  }
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    note("not recorded: libnvidia-ml.so.1 could not be loaded: ", -1, why ? why : "?");
    return;
  }
  g_nvml.api.init = nvml_symbol<nvml::InitFn>(lib, "nvmlInit_v2");
  g_nvml.api.by_pci =
      nvml_symbol<nvml::GetHandleByStringFn>(lib, "nvmlDeviceGetHandleByPciBusId_v2");
  g_nvml.api.by_uuid = nvml_symbol<nvml::GetHandleByStringFn>(lib, "nvmlDeviceGetHandleByUUID");
  g_nvml.api.memory = nvml_symbol<nvml::GetMemoryInfoFn>(lib, "nvmlDeviceGetMemoryInfo");
  g_nvml.api.processes =
      nvml_symbol<nvml::GetProcessesFn>(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
  g_nvml.api.mig_mode = nvml_symbol<nvml::GetMigModeFn>(lib, "nvmlDeviceGetMigMode");
  if (!g_nvml.api.init || !g_nvml.api.by_pci || !g_nvml.api.memory || !g_nvml.api.processes) {
    note("not recorded: this libnvidia-ml.so.1 lacks nvmlDeviceGetComputeRunningProcesses_v3 or "
         "another function it needs (a driver older than 11.x?)");
    return;
  }
  if (nvml::Return r = g_nvml.api.init(); r != nvml::kSuccess) {
    FixedString<32> code;
    code.append_int(r);
    note("not recorded: nvmlInit failed with NVML error ", -1, code.c_str());
    return;
  }
  g_nvml.load = kLoaded;
}

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", the form NVML looks UUIDs up by.
void format_uuid(const CUuuid& u, char* out) {
  static const char kHex[] = "0123456789abcdef";
  std::memcpy(out, "GPU-", 4);
  char* p = out + 4;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) *p++ = '-';
    auto b = static_cast<unsigned char>(u.bytes[i]);
    *p++ = kHex[b >> 4];
    *p++ = kHex[b & 15];
  }
  *p = '\0';
}

// CUDA ordinal -> NVML device, through the PCI bus id (or the UUID) the driver gives for the
// ordinal: CUDA_VISIBLE_DEVICES renumbers ordinals, the bus id stays the device's own.
void resolve_locked(int ordinal) {
  g_nvml.device_state[ordinal] = kUnusable;
  using DeviceGetFn = CUresult (*)(CUdevice*, int);
  using BusIdFn = CUresult (*)(char*, int, CUdevice);
  using UuidFn = CUresult (*)(CUuuid*, CUdevice);
  auto get = reinterpret_cast<DeviceGetFn>(find_real_symbol("cuDeviceGet", format::Layer::Driver));
  auto bus =
      reinterpret_cast<BusIdFn>(find_real_symbol("cuDeviceGetPCIBusId", format::Layer::Driver));
  auto uuid =
      reinterpret_cast<UuidFn>(find_real_symbol("cuDeviceGetUuid_v2", format::Layer::Driver));
  CUdevice dev = 0;
  if (!get || get(&dev, ordinal) != CUDA_SUCCESS) {
    note("not sampled: the driver does not know this ordinal", ordinal);
    return;
  }
  char bus_id[64] = {};
  char uuid_text[48] = {};
  nvml::Device h = nullptr;
  bool found = bus && bus(bus_id, sizeof(bus_id), dev) == CUDA_SUCCESS &&
               g_nvml.api.by_pci(bus_id, &h) == nvml::kSuccess;
  CUuuid u{};
  if (!found && uuid && g_nvml.api.by_uuid && uuid(&u, dev) == CUDA_SUCCESS) {
    format_uuid(u, uuid_text);
    found = g_nvml.api.by_uuid(uuid_text, &h) == nvml::kSuccess;
  }
  if (!found) {
    note("not sampled: NVML knows no device with its PCI bus id ", ordinal,
         bus_id[0] ? bus_id : "(unknown)");
    return;
  }
  // Under MIG, NVML's per-process figures are per GPU instance and the device-wide ones are not
  // this process's to explain.
  unsigned current = 0, pending = 0;
  if (g_nvml.api.mig_mode && g_nvml.api.mig_mode(h, &current, &pending) == nvml::kSuccess &&
      current == nvml::kMigEnabled) {
    note("not sampled: the device is in MIG mode", ordinal);
    return;
  }
  g_nvml.handles[ordinal] = h;
  g_nvml.device_state[ordinal] = kUsable;
}

void sample_locked(format::NvmlReason reason) {
  if (g_nvml.load == kUntried) load_locked();
  if (g_nvml.load != kLoaded) return;
  // Taken before asking NVML: every allocation up to this event had returned, so NVML counts it.
  const uint64_t seq = last_seq();
  const uint64_t now = monotonic_ns();
  const auto pid = static_cast<unsigned>(getpid());
  uint64_t devices = g_event_globals.nvml_devices.load(std::memory_order_acquire);
  for (int d = 0; d < kMaxDevices; ++d) {
    if (!(devices >> d & 1)) continue;
    if (g_nvml.device_state[d] == kUnknown) resolve_locked(d);
    if (g_nvml.device_state[d] != kUsable) continue;
    nvml::Memory mem{};
    if (g_nvml.api.memory(g_nvml.handles[d], &mem) != nvml::kSuccess) continue;
    unsigned count = kMaxProcesses;
    bool listed = false;
    uint64_t mine = 0;
    if (g_nvml.api.processes(g_nvml.handles[d], &count, g_nvml.processes) == nvml::kSuccess) {
      for (unsigned i = 0; i < count && i < kMaxProcesses; ++i) {
        if (g_nvml.processes[i].pid != pid ||
            g_nvml.processes[i].used_gpu_memory == nvml::kValueNotAvailable)
          continue;
        listed = true;
        mine += g_nvml.processes[i].used_gpu_memory;
      }
      if (!listed && count > 0 && !g_nvml.unlisted_noted[d]) {
        g_nvml.unlisted_noted[d] = true;
        note("is used by processes NVML lists, but not under this pid (a container with its own "
             "pid namespace?): only the device's own figures are recorded",
             d);
      }
    }
    // A peak sample is kept only when the process's figure rose: it marks a new high.
    if (reason == format::NvmlReason::Peak && !(listed && mine > g_nvml.highest[d])) continue;
    if (listed && mine > g_nvml.highest[d]) g_nvml.highest[d] = mine;
    write_nvml_sample(
        format::NvmlSamplePayload{reason, seq, 0, d, listed, mine, mem.total, mem.used}, now);
  }
}

void wake_thread() {
  g_nvml.wake.fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, &g_nvml.wake, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

// Does nothing but sample: sleeps an interval (or until a hook asks for a peak check), samples
// with g_nvml.sampling held, and stops for good once exit has begun.
void* sampler_main(void*) {
  prctl(PR_SET_NAME, "gmemhook-nvml");  // what top, ps -L and py-spy show for it
  const uint64_t interval = static_cast<uint64_t>(g_config.nvml_interval_ms) * 1000000ull;
  uint64_t next = monotonic_ns() + interval;
  while (!g_nvml.stopping.load(std::memory_order_acquire)) {
    uint32_t word = g_nvml.wake.load(std::memory_order_acquire);
    uint64_t now = monotonic_ns();
    bool asked = g_nvml.peak_wanted.load(std::memory_order_acquire) ||
                 g_nvml.pending.load(std::memory_order_acquire) != 0;
    if (!asked && now < next) {
      timespec wait{static_cast<time_t>((next - now) / 1000000000ull),
                    static_cast<long>((next - now) % 1000000000ull)};
      syscall(SYS_futex, &g_nvml.wake, FUTEX_WAIT_PRIVATE, word, &wait, nullptr, 0);
      continue;
    }
    if (!try_lock()) {  // a hook's first sample, or exit (which keeps it)
      usleep(1000);
      continue;
    }
    if (g_nvml.stopping.load(std::memory_order_acquire)) {
      unlock();
      break;
    }
    if (int pending = g_nvml.pending.exchange(0))
      sample_locked(static_cast<format::NvmlReason>(pending));
    if (now >= next) {
      g_nvml.peak_wanted.store(false,
                               std::memory_order_relaxed);  // a periodic sample marks highs too
      sample_locked(format::NvmlReason::Periodic);
      next = now + interval;
    } else if (g_nvml.peak_wanted.exchange(false)) {
      sample_locked(format::NvmlReason::Peak);
    }
    unlock();
  }
  return nullptr;
}

void start_thread() {
  if (g_nvml.thread_started.exchange(true)) return;
  if (!start_hook_thread(sampler_main, kThreadStack))
    note("are sampled only at the first call, first allocation and exit: no sampling thread");
}

// Each entry point's memory type by id: a table lookup on the hot path, not a search.
constexpr auto kMemoryOfApi = [] {
  std::array<format::MemoryType, 256> m{};
  m.fill(format::MemoryType::None);
  for (const format::ApiInfo& a : format::kApis) m[static_cast<uint8_t>(a.id)] = a.memory;
  return m;
}();

// The device an event names for the sampler (see kNvmlDeviceKinds in nvml_sampler.h), or -1.
// Host and managed memory name none: the device a wrapper filled in for them is only the calling
// context's. Kinds with no memory type of their own (launches, reserves) name their context's.
int nvml_device_of(format::ApiId api, EventKind kind, uint32_t result,
                   const format::EventFields& f) {
  if (result != 0 || !f.has(format::kHasDevice) || !nvml_may_name_device(kind)) return -1;
  const format::MemoryType memory =
      f.has(format::kHasMemory) ? f.memory : kMemoryOfApi[static_cast<uint8_t>(api)];
  return memory == format::MemoryType::Device || memory == format::MemoryType::None ? f.device : -1;
}

// The device the calling thread works on, for a first call that names none (cudaFree(0)).
int current_device() {
  using CtxGetDeviceFn = CUresult (*)(CUdevice*);
  auto get =
      reinterpret_cast<CtxGetDeviceFn>(find_real_symbol("cuCtxGetDevice", format::Layer::Driver));
  CUdevice dev = -1;
  return get && get(&dev) == CUDA_SUCCESS ? dev : -1;
}

void use_device(int device) {
  if (device < 0 || device >= kMaxDevices) return;
  uint64_t bit = 1ull << device;
  if (!(g_event_globals.nvml_devices.load(std::memory_order_relaxed) & bit))
    g_event_globals.nvml_devices.fetch_or(bit);
}

// A first-call or first-allocation sample: on this thread when nothing else samples, else left
// to the background thread.
void sample_now_or_later(format::NvmlReason reason) {
  if (try_lock()) {
    sample_locked(reason);
    bool loaded = g_nvml.load == kLoaded;
    unlock();
    if (loaded) start_thread();
    return;
  }
  g_nvml.pending.store(static_cast<int>(reason), std::memory_order_release);
  wake_thread();
}
}  // namespace

void nvml_event_slow(format::ApiId api, EventKind kind, uint32_t result,
                     const format::EventFields& f, uint64_t now_ns) {
  const int device = nvml_device_of(api, kind, result, f);
  use_device(device);
  const bool allocated = device >= 0 && nvml_allocates(kind, f);
  if (!g_event_globals.nvml_first_call_done.load(std::memory_order_acquire) &&
      !g_event_globals.nvml_first_call_done.exchange(true)) {
    // A first call that names no device (cudaFree(0), a host allocation, a failed call): the
    // device the calling thread works on.
    if (device < 0) use_device(current_device());
    sample_now_or_later(format::NvmlReason::FirstCall);
    if (allocated)
      g_event_globals.nvml_first_allocation_done.store(true);  // that sample saw it already
    return;
  }
  if (!allocated) return;
  if (!g_event_globals.nvml_first_allocation_done.load(std::memory_order_acquire) &&
      !g_event_globals.nvml_first_allocation_done.exchange(true)) {
    sample_now_or_later(format::NvmlReason::FirstAllocation);
    return;
  }
  // A new high is checked at most four times per interval, and only by the thread.
  const uint64_t gap = static_cast<uint64_t>(g_config.nvml_interval_ms) * 250000ull;
  uint64_t last = g_event_globals.nvml_last_peak_request_ns.load(std::memory_order_relaxed);
  if (now_ns - last < gap ||
      !g_event_globals.nvml_last_peak_request_ns.compare_exchange_strong(last, now_ns))
    return;
  g_nvml.peak_wanted.store(true, std::memory_order_release);
  wake_thread();
}

void nvml_at_exit() {
  if (!g_config.nvml || !g_event_globals.nvml_first_call_done.load(std::memory_order_acquire))
    return;
  g_nvml.stopping.store(true, std::memory_order_release);
  wake_thread();
  // The sample under way finishes first; an NVML call that hangs must not hang exit (1 s).
  bool locked = try_lock();
  for (int i = 0; i < 1000 && !locked; ++i) {
    usleep(1000);
    locked = try_lock();
  }
  if (locked && g_nvml.load == kLoaded) sample_locked(format::NvmlReason::Exit);
  // The lock is kept: the thread must not enter NVML while libraries are torn down.
}

void nvml_fork_child() {
  g_nvml.inherited = g_nvml.load == kLoaded || g_nvml.inherited;
  g_nvml.load = kUntried;
  for (int d = 0; d < kMaxDevices; ++d) {
    g_nvml.device_state[d] = kUnknown;
    g_nvml.highest[d] = 0;
    g_nvml.unlisted_noted[d] = false;
  }
  g_event_globals.nvml_devices.store(0);
  g_event_globals.nvml_first_call_done.store(false);
  g_event_globals.nvml_first_allocation_done.store(false);
  g_nvml.thread_started.store(false);
  g_nvml.stopping.store(false);
  g_nvml.peak_wanted.store(false);
  g_nvml.pending.store(0);
  g_event_globals.nvml_last_peak_request_ns.store(0);
  g_nvml.sampling.clear();
}

}  // namespace gmemhook

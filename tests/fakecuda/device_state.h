// Process-wide state of the simulated devices: configuration, contexts, streams, pools, live memory.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_set>
#include <vector>

// CUDA's opaque handle types point at these. Contexts are never deleted (only marked dead), so a
// stale handle held by another thread can always be checked safely; streams and pools are looked
// up in State before they are dereferenced.
struct CUctx_st {
  int device = 0;
  bool primary = false;
  std::atomic<bool> alive{true};
};

struct CUstream_st {
  CUctx_st* ctx = nullptr;
  int device = 0;
  unsigned flags = 0;
};

struct CUmemPoolHandle_st {
  int device = 0;
  bool is_default = false;
  bool destroyed = false;
  size_t max_size = 0;  // 0: bounded only by the device capacity
  size_t reserved = 0, reserved_high = 0, used = 0, used_high = 0;
  cuuint64_t release_threshold = 0;
  int reuse_follow_event_dependencies = 1, reuse_allow_opportunistic = 1,
      reuse_allow_internal_dependencies = 1;
  std::multimap<size_t, uintptr_t> free_blocks;  // block size -> base, reserved but unused
};

namespace fakecuda {

constexpr size_t kAllocAlignment = 512;        // cudaMalloc's accounting granularity
constexpr size_t kPitchAlignment = 512;        // cuMemAllocPitch row alignment
constexpr size_t kVmmGranularity = 2u << 20;   // cuMemGetAllocationGranularity
constexpr int kDriverVersion = 13000;

// Graph: the memory of a graph allocation node while a launch has it allocated; its address
// range belongs to the node (reserved when the node was made), so freeing it unmaps nothing.
// Imported: another process's (or pool's) memory opened here (IPC, cuMemPoolImportPointer); it
// is charged to its owner, not to this device.
enum class AllocKind { Device, Managed, Host, Pool, Graph, Imported };

struct Allocation {
  uintptr_t base = 0;
  size_t size = 0;     // what the caller asked for
  size_t charged = 0;  // what it costs (rounded), also the pool block size for Pool
  AllocKind kind = AllocKind::Device;
  int device = 0;
  CUctx_st* ctx = nullptr;
  CUmemPoolHandle_st* pool = nullptr;
  unsigned long long id = 0;
};

struct Device {
  size_t capacity = 0;
  size_t used = 0;
  CUctx_st* primary = nullptr;
  int primary_refs = 0;
  CUmemPoolHandle_st* default_pool = nullptr;
  CUmemPoolHandle_st* current_pool = nullptr;
};

// A cuMemCreate handle: physical memory in a memfd so several mappings can alias it.
struct PhysicalMemory {
  size_t size = 0;
  int device = -1;  // -1: host location
  int fd = -1;
  int mappings = 0;
  bool released = false;
  unsigned long long id = 0;
  bool imported = false;  // cuMemImportFromShareableHandle: another allocation's memory
  int retains = 0;        // cuMemRetainAllocationHandle references, each dropped by a cuMemRelease
};

struct Mapping {
  size_t size = 0;
  CUmemGenericAllocationHandle handle = 0;
  int prot = 0;  // PROT_* granted by cuMemSetAccess
};

struct State {
  std::mutex mu;
  std::atomic<bool> initialized{false};
  std::vector<Device> devices;
  std::map<uintptr_t, Allocation> allocations;  // by base address
  std::unordered_set<CUctx_st*> contexts;
  std::unordered_set<CUstream_st*> streams;
  std::unordered_set<CUmemPoolHandle_st*> pools;  // live (not destroyed) pools
  std::map<CUmemGenericAllocationHandle, PhysicalMemory> handles;
  std::map<uintptr_t, size_t> reservations;  // base -> size
  std::map<uintptr_t, Mapping> mappings;     // base -> mapping
  size_t pinned_host_bytes = 0;
  unsigned long long next_id = 1;
};

State& state();

// Reads FAKECUDA_DEVICES / FAKECUDA_CAPACITY and builds the devices; called once by cuInit.
// Returns CUDA_ERROR_NO_DEVICE when configured with zero devices.
CUresult configure_devices();

inline size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }
size_t page_size();
bool valid_device(int device);  // requires the caller to hold state().mu or be past init

CUresult require_init();
// The calling thread's context stack (cuCtxPushCurrent / cuCtxSetCurrent act on its top).
std::vector<CUctx_st*>& context_stack();
// The current context when it is usable, else CUDA_ERROR_INVALID_CONTEXT (or NOT_INITIALIZED).
CUresult current_context(CUctx_st** out);

// Helpers below expect state().mu to be held.
void* map_backing(size_t bytes);  // nullptr on failure
void unmap_backing(uintptr_t base, size_t bytes);
CUresult add_allocation(AllocKind kind, CUctx_st* ctx, size_t size, uintptr_t* out);
void remove_allocation(std::map<uintptr_t, Allocation>::iterator it);
// Frees what a context owns when it is destroyed or reset (not pools, not VMM).
void free_context_memory(CUctx_st* ctx);
// Device ordinal a stream refers to (0 / legacy / per-thread mean the current context's device).
CUresult stream_device(CUstream stream, int* device);

// Pool internals, shared by the pool API and cuMemFree.
CUresult pool_allocate(CUmemPoolHandle_st* pool, CUctx_st* ctx, size_t size, uintptr_t* out);
void pool_return(std::map<uintptr_t, Allocation>::iterator it);
void pool_trim(CUmemPoolHandle_st* pool, size_t keep);

// Stream capture into graphs (driver_graph.cpp): the graph `stream` is being captured into, or
// nullptr; stream-ordered calls on it add memory nodes instead of allocating.
CUgraph capturing_graph(CUstream stream);
CUresult capture_alloc_node(CUgraph graph, int device, size_t size, uintptr_t* out);
CUresult capture_free_node(CUgraph graph, uintptr_t address);

// What a pointer belongs to, for pointer attributes and copy validation.
struct PointerInfo {
  uintptr_t base = 0;  // allocation, or VMM mapping
  size_t size = 0;
  uintptr_t range_base = 0;  // allocation, or VMM reservation
  size_t range_size = 0;
  CUmemorytype type = CU_MEMORYTYPE_DEVICE;
  int device = 0;
  CUctx_st* ctx = nullptr;
  CUmemPoolHandle_st* pool = nullptr;
  bool managed = false;
  bool vmm = false;
  int prot = 0;
  unsigned long long id = 0;
};
bool lookup_pointer(uintptr_t ptr, PointerInfo* out);

// Whether [ptr, ptr+bytes) may be touched by a copy: Unknown means no CUDA allocation holds ptr.
enum class Access { Ok, Unknown, Invalid, Fault };
Access check_range(uintptr_t ptr, size_t bytes, bool write);

}  // namespace fakecuda

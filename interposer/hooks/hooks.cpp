// The exported wrappers, generated from GMEMHOOK_FOR_EACH_API (include/gmemhook/api_table.h).
// Each wrapper calls the real function, then records what it did; nested calls only pass through.
#include "interposer/hooks/hooks.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstring>
#include <new>
#include <type_traits>

#include "interposer/base/real_symbols.h"
#include "interposer/hooks/array_size.h"
#include "interposer/hooks/resolvers.h"
#include "interposer/record/event_body.h"
#include "interposer/record/recorder.h"

namespace gmemhook {
namespace {

// What a wrapper returns when no loaded library defines the real function: the same error a
// program gets from CUDA before it is initialised.
#define GMEMHOOK_RESULT_Runtime cudaError_t
#define GMEMHOOK_RESULT_Driver CUresult
#define GMEMHOOK_UNAVAILABLE_Runtime cudaErrorInitializationError
#define GMEMHOOK_UNAVAILABLE_Driver CUDA_ERROR_NOT_INITIALIZED

enum HookIndex : size_t {
#define GMEMHOOK_INDEX(ID, NAME, ...) kHook_##NAME,
  GMEMHOOK_FOR_EACH_API(GMEMHOOK_INDEX)
#undef GMEMHOOK_INDEX
      kApiHookCount
};

// cuMemCreate's location decides both the device and whether the memory is on the host.
struct HookFields : format::EventFields {
  void set_vmm_location(const CUmemAllocationProp* prop) {
    if (prop) set_pool_location(prop->location);
  }
  // The location of a graph allocation node's pool, runtime or driver spelling: the values are
  // the same (cudaMemLocationTypeDevice == CU_MEM_LOCATION_TYPE_DEVICE).
  template <typename Location>
  void set_pool_location(const Location& location) {
    if (static_cast<int>(location.type) == CU_MEM_LOCATION_TYPE_DEVICE) {
      set_device(location.id);
    } else {
      set_memory(format::MemoryType::HostPinned);
      set_device(-1);
    }
  }
  // After a launch or trim: the graph pool's used and reserved bytes as the event's totals (see
  // "Graph pool totals" in format.h), with the device they are of.
  void set_graph_pool(int device) {
    uint64_t used = 0, reserved = 0;
    if (!graph_pool_bytes(device, &used, &reserved)) return;
    set_device(device);
    set_totals(used, reserved);
  }
  // cudaGraphAddNode / cuGraphAddNode: an allocation node is recorded as
  // cudaGraphAddMemAllocNode's would be, a free node marked IsFree, a child graph node with the
  // child as its handle (event_kind_of in format.h tells them apart); any other node type is not
  // about memory and not recorded. Runtime and driver spell the parameters alike (same type
  // values, same layouts). Returns whether to record.
  template <typename Params>
  bool set_graph_node(const Params* p, bool ok) {
    if (!p) return false;
    switch (static_cast<int>(p->type)) {
      case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
        set_address(ok ? (uint64_t)p->alloc.dptr : 0);
        set_size(p->alloc.bytesize);
        set_pool_location(p->alloc.poolProps.location);
        return true;
      case CU_GRAPH_NODE_TYPE_MEM_FREE:
        set_address((uint64_t)p->free.dptr);
        set_free();
        return true;
      case CU_GRAPH_NODE_TYPE_GRAPH:
        set_handle((uint64_t)p->graph.graph);
        return true;
      default:
        return false;
    }
  }
  // Imported memory (IPC, pool pointers) comes without a size: ask the driver for the extent of
  // the allocation at `address`.
  void set_mapped_size() {
    if (uint64_t size = mapped_size_at(address)) set_size(size);
  }
};

// A wrapper's fields with only the mask, address and size cleared. Every reader of fields uses one
// only where the mask says it was set (codec.h's encoder, fill_device, the NVML sampler), so
// zeroing the other ~80 bytes would buy nothing for ~14 instructions an event. Address and
// size stay cleared: the usual event's encoder scales both before it looks at the mask (what it
// writes does not depend on them, but valgrind's memcheck would see a branch on unset bytes). The
// bytes are an unsigned char array, which implicitly creates the HookFields (an aggregate) in
// them (C++20 [intro.object]).
struct UnsetHookFields {
  static_assert(std::is_aggregate_v<HookFields>);
  alignas(HookFields) unsigned char bytes[sizeof(HookFields)];
  HookFields& start() {
    auto* e = std::launder(reinterpret_cast<HookFields*>(bytes));
    e->mask = 0;
    e->address = e->size = 0;
    return *e;
  }
};

}  // namespace

extern HookSlot g_hook_slots[];

}  // namespace gmemhook

using gmemhook::g_hook_slots;

// c10::Device as PyTorch passes it by value: a DeviceType (an int8_t enum) and a DeviceIndex
// (int8_t). Two trivially copyable bytes travel in one integer register, as this struct does.
struct C10Device {
  int8_t type;
  int8_t index;
};
inline constexpr int8_t kC10DeviceCuda = 1;  // c10::DeviceType::CUDA

// Each layer's wrapper shape: CUDA calls return a status and may fill out-parameters; allocator
// reports return nothing and are forwarded whatever happens.
#define GMEMHOOK_DEFINE_WRAPPER(ID, NAME, LAYER, ...) \
  GMEMHOOK_WRAPPER_##LAYER(ID, NAME, LAYER, __VA_ARGS__)
#define GMEMHOOK_WRAPPER_Runtime GMEMHOOK_CUDA_WRAPPER
#define GMEMHOOK_WRAPPER_Driver GMEMHOOK_CUDA_WRAPPER

// The real function's pointer put before a wrapper's parameters and arguments (PARAMS and ARGS
// are parenthesised lists, possibly empty).
#define GMEMHOOK_WITH_REAL_PARAM(...) (void* real_fn __VA_OPT__(, ) __VA_ARGS__)
#define GMEMHOOK_WITH_REAL_ARG(...) (real_fn __VA_OPT__(, ) __VA_ARGS__)

// The exported wrapper only tells a nested call (cudaMalloc reaching cuMemAlloc_v2 through our
// wrapper) from an outermost one: the nested call jumps straight to the real function, with no
// frame of its own (one would cost ~40 instructions, and a pair has two). The outermost call is
// recorded by record_NAME, which calls the real function inside a CallScope.
#define GMEMHOOK_CUDA_WRAPPER(ID, NAME, LAYER, KIND, MEMORY, PARAMS, ARGS, READ)               \
  namespace gmemhook {                                                                         \
  using NAME##_result = GMEMHOOK_RESULT_##LAYER;                                               \
  [[gnu::noinline]] static NAME##_result record_##NAME GMEMHOOK_WITH_REAL_PARAM PARAMS {       \
    using Real = GMEMHOOK_RESULT_##LAYER(*) PARAMS;                                            \
    if (!real_fn) real_fn = resolve_real_function(g_hook_slots[kHook_##NAME]);                 \
    if (!real_fn) return GMEMHOOK_UNAVAILABLE_##LAYER;                                         \
    auto real = reinterpret_cast<Real>(real_fn);                                               \
    CallScope scope;                                                                           \
    if (!scope.records()) return real ARGS;                                                    \
    auto clock = clock_before_call(format::EventKind::KIND);                                   \
    auto result = real ARGS;                                                                   \
    ErrnoGuard keep_errno;                                                                     \
    UnsetHookFields fields;                                                                    \
    HookFields& e = fields.start();                                                            \
    [[maybe_unused]] bool ok = result == 0;                                                    \
    [[maybe_unused]] bool record = true;                                                       \
    READ if (!record) return result;                                                           \
    record_event(format::ApiId::NAME, format::event_kind_of(format::EventKind::KIND, e.mask),  \
                 static_cast<uint32_t>(result), e, clock);                                     \
    return result;                                                                             \
  }                                                                                            \
  }                                                                                            \
  extern "C" __attribute__((visibility("default"))) GMEMHOOK_RESULT_##LAYER NAME PARAMS {      \
    void* real_fn = g_hook_slots[gmemhook::kHook_##NAME].real.load(std::memory_order_acquire); \
    using Real = GMEMHOOK_RESULT_##LAYER(*) PARAMS;                                            \
    if (real_fn && gmemhook::passes_through()) return reinterpret_cast<Real>(real_fn) ARGS;    \
    return gmemhook::record_##NAME GMEMHOOK_WITH_REAL_ARG ARGS;                                \
  }

// No next definition (a program that looked the symbol up itself, without PyTorch): there is
// nothing to forward to and nothing happened, so nothing is recorded. Frees take their sequence
// number before the call, as in clock_before_call: the caller's lock orders them.
#define GMEMHOOK_WRAPPER_Allocator(ID, NAME, LAYER, KIND, MEMORY, PARAMS, ARGS, READ)            \
  extern "C" __attribute__((visibility("default"))) void NAME PARAMS {                          \
    using Real = void(*) PARAMS;                                                                \
    auto real = reinterpret_cast<Real>(                                                         \
        gmemhook::real_function(g_hook_slots[gmemhook::kHook_##NAME]));                         \
    if (!real) return;                                                                          \
    gmemhook::UnsetHookFields fields;                                                           \
    gmemhook::HookFields& e = fields.start();                                                   \
    bool record = true;                                                                         \
    READ                                                                                        \
    if (!record) return real ARGS;                                                              \
    gmemhook::CallScope scope;                                                                  \
    if (!scope.records()) return real ARGS;                                                     \
    auto kind = gmemhook::format::event_kind_of(gmemhook::format::EventKind::KIND, e.mask);     \
    auto clock = gmemhook::clock_before_call(kind);                                             \
    real ARGS;                                                                                  \
    gmemhook::ErrnoGuard keep_errno;                                                            \
    gmemhook::record_event(gmemhook::format::ApiId::NAME, kind, 0, e, clock);                   \
  }

GMEMHOOK_FOR_EACH_API(GMEMHOOK_DEFINE_WRAPPER)
#undef GMEMHOOK_DEFINE_WRAPPER

namespace gmemhook {

HookSlot g_hook_slots[] = {
#define GMEMHOOK_SLOT(ID, NAME, LAYER, ...) \
  {#NAME, format::Layer::LAYER, reinterpret_cast<void*>(&::NAME), {nullptr}},
    GMEMHOOK_FOR_EACH_API(GMEMHOOK_SLOT)
#undef GMEMHOOK_SLOT
#define GMEMHOOK_RESOLVER_SLOT(NAME, LAYER) \
  {#NAME, format::Layer::LAYER, reinterpret_cast<void*>(&::NAME), {nullptr}},
    GMEMHOOK_FOR_EACH_RESOLVER(GMEMHOOK_RESOLVER_SLOT)
#undef GMEMHOOK_RESOLVER_SLOT
};

HookSlot* hook_slots() { return g_hook_slots; }
size_t hook_slot_count() { return sizeof(g_hook_slots) / sizeof(g_hook_slots[0]); }

HookSlot* find_hook(const char* name) {
  // Every name we hook starts with "cu" (CUDA) or "_Z" (C++); most dlsym lookups of other
  // libraries end here.
  if (!name || !((name[0] == 'c' && name[1] == 'u') || (name[0] == '_' && name[1] == 'Z')))
    return nullptr;
  for (size_t i = 0; i < hook_slot_count(); ++i)
    if (std::strcmp(g_hook_slots[i].name, name) == 0) return &g_hook_slots[i];
  return nullptr;
}

HookSlot* find_hook_by_real(const void* real) {
  for (size_t i = 0; i < hook_slot_count(); ++i)
    if (g_hook_slots[i].real.load(std::memory_order_acquire) == real) return &g_hook_slots[i];
  return nullptr;
}

void* resolve_real_function(HookSlot& slot) {
  void* p = find_real_symbol(slot.name, slot.layer);
  if (!p) return nullptr;
  void* expected = nullptr;
  slot.real.compare_exchange_strong(expected, p, std::memory_order_acq_rel);
  return slot.real.load(std::memory_order_acquire);
}

void* substitute(HookSlot& slot, void* real) {
  if (!real || real == slot.wrapper) return real;
  void* expected = nullptr;
  slot.real.compare_exchange_strong(expected, real, std::memory_order_acq_rel);
  return slot.wrapper;
}

}  // namespace gmemhook

// Function-pointer lookups that must return our wrappers: how XLA (dlsym), dynamic cudart
// (cuGetProcAddress) and torch's expandable segments (cudaGetDriverEntryPointByVersion) reach
// the allocation functions without calling the exported symbols.
#include "interposer/hooks/resolvers.h"

#include <dlfcn.h>

#include <atomic>
#include <cstring>

#include "interposer/base/real_symbols.h"
#include "interposer/base/text.h"
#include "interposer/hooks/hooks.h"
#include "interposer/record/recorder.h"

namespace gmemhook {
namespace {

HookSlot& slot_of(const char* name) { return *find_hook(name); }

// Learns the real address of every driver entry point from the libcuda that produced `sibling`,
// so pointers handed out by cuGetProcAddress can be matched by address — which honours the
// requested cudaVersion and per-thread-stream flag exactly as the driver resolved them.
void learn_driver_addresses(const void* sibling) {
  static std::atomic<bool> done{false};
  if (done.load(std::memory_order_acquire)) return;
  for (size_t i = 0; i < hook_slot_count(); ++i) {
    HookSlot& s = hook_slots()[i];
    if (s.layer != format::Layer::Driver || s.real.load(std::memory_order_acquire)) continue;
    if (void* p = find_symbol_beside(sibling, s.name)) {
      void* expected = nullptr;
      s.real.compare_exchange_strong(expected, p, std::memory_order_acq_rel);
    }
  }
  done.store(true, std::memory_order_release);
}

bool in_list(const char* name, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (std::strcmp(name, n) == 0) return true;
  return false;
}

// A driver pointer returned for base name `symbol` → our wrapper for the same ABI, else itself.
void* substitute_driver(const char* symbol, void* p, int cuda_version, uint64_t flags) {
  if (!p || !symbol || is_own_address(reinterpret_cast<uint64_t>(p))) return p;
  learn_driver_addresses(p);
  if (HookSlot* s = find_hook_by_real(p)) return s->wrapper;
  // Unknown address: fall back to the driver's naming rules. Versions before 3.2 return the
  // 32-bit v1 ABI, which we don't wrap.
  FixedString<128> name;
  // CUDA 12 renamed cuGraphInstantiate's ABI: from 12.0 on the base name means WithFlags (the
  // older ABI, with an error-log buffer, is not wrapped).
  if (std::strcmp(symbol, "cuGraphInstantiate") == 0) {
    if (cuda_version < 12000) return p;
    symbol = "cuGraphInstantiateWithFlags";
  }
  name.append(symbol);
  if (in_list(symbol, {"cuMemAlloc", "cuMemFree", "cuMemAllocPitch", "cuMemAllocHost",
                       "cuArrayCreate", "cuArray3DCreate"})) {
    if (cuda_version < 3020) return p;
    name.append("_v2");
  }
  // Its per-thread twin is cuStreamBeginCapture_ptsz, without the _v2.
  if (in_list(symbol, {"cuStreamBeginCapture"}) && cuda_version >= 10010 &&
      !(flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
    name.append("_v2");
  if (in_list(symbol, {"cuIpcOpenMemHandle"}) && cuda_version >= 11000) name.append("_v2");
  if (in_list(symbol, {"cuGetProcAddress"}) && cuda_version >= 12000) name.append("_v2");
  // cuGraphAddNode gained edge data in 12.3 (the _v2 ABI); 12.2's is not wrapped.
  if (in_list(symbol, {"cuGraphAddNode"})) {
    if (cuda_version < 12030) return p;
    name.append("_v2");
  }
  if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) &&
      in_list(symbol,
              {"cuMemAllocAsync", "cuMemFreeAsync", "cuMemAllocFromPoolAsync",
               "cuStreamBeginCapture", "cuStreamEndCapture", "cuGraphLaunch", "cuGraphUpload",
               "cuGraphInstantiateWithParams", "cuStreamBeginCaptureToGraph"}))
    name.append("_ptsz");
  HookSlot* s = find_hook(name.c_str());
  return s ? substitute(*s, p) : p;
}

template <typename Fn>
Fn real_of(const char* name) {
  return reinterpret_cast<Fn>(real_function(slot_of(name)));
}
}  // namespace

// Called by the dlsym trampoline for every handle except RTLD_NEXT.
extern "C" __attribute__((used)) void* gmemhook_dlsym_impl(void* handle, const char* name) {
  void* p = real_dlsym(handle, name);
  if (!p || !recording_enabled()) return p;
  HookSlot* s = find_hook(name);
  if (!s || is_own_address(reinterpret_cast<uint64_t>(p))) return p;
  return substitute(*s, p);
}

// glibc's dlsym, for the trampoline's RTLD_NEXT path: null until its first RTLD_NEXT lookup.
extern "C" {
__attribute__((used, visibility("hidden"))) void* gmemhook_glibc_dlsym = nullptr;

// The trampoline's first RTLD_NEXT lookup, which may come before our constructor: a library
// preloaded after us runs its constructor first, and its dlsym calls bind to ours. Another copy
// of the hook asking for its real dlclose is one; gmemhook_dlsym_impl would look RTLD_NEXT up
// from here, after us, and hand that copy its own dlclose (which then called itself until the
// stack ran out).
__attribute__((used, visibility("hidden"))) void* gmemhook_learn_glibc_dlsym() {
  void* f = glibc_dlsym_address();
  __atomic_store_n(&gmemhook_glibc_dlsym, f, __ATOMIC_RELEASE);
  return f;
}
}

}  // namespace gmemhook

// dlsym(RTLD_NEXT, …) means "the next definition after the *caller*", and glibc finds the caller
// from its own return address. A C++ wrapper would make us the caller and hand another
// interposer its own symbol back. So dlsym is a two-instruction trampoline: RTLD_NEXT jumps
// straight into glibc with the caller's return address intact; every other handle goes through
// gmemhook_dlsym_impl, which may substitute our wrappers. Before glibc's dlsym is known, the
// RTLD_NEXT path learns it first, saving the arguments around the call (the pushes keep the
// stack 16-byte aligned for it) and leaving the return address where it was.
#if defined(__x86_64__)
asm(R"(
  .text
  .globl dlsym
  .type dlsym, @function
  .p2align 4
dlsym:
  cmpq $-1, %rdi
  jne 1f
  movq gmemhook_glibc_dlsym(%rip), %rax
  testq %rax, %rax
  jz 2f
  jmp *%rax
2:
  pushq %rdi
  pushq %rsi
  subq $8, %rsp
  call gmemhook_learn_glibc_dlsym
  addq $8, %rsp
  popq %rsi
  popq %rdi
  testq %rax, %rax
  jz 1f
  jmp *%rax
1:
  jmp gmemhook_dlsym_impl
  .size dlsym, .-dlsym
)");
#else
#error "gmemhook's dlsym trampoline is written for x86-64"
#endif

extern "C" {

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(
    const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
    CUdriverProcAddressQueryResult* symbolStatus) {
  using Fn = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto real = gmemhook::real_of<Fn>("cuGetProcAddress_v2");
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = real(symbol, pfn, cudaVersion, flags, symbolStatus);
  if (r == CUDA_SUCCESS && pfn && gmemhook::recording_enabled())
    *pfn = gmemhook::substitute_driver(symbol, *pfn, cudaVersion, flags);
  return r;
}

__attribute__((visibility("default"))) CUresult cuGetProcAddress(const char* symbol, void** pfn,
                                                                 int cudaVersion,
                                                                 cuuint64_t flags) {
  using Fn = CUresult (*)(const char*, void**, int, cuuint64_t);
  auto real = gmemhook::real_of<Fn>("cuGetProcAddress");
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = real(symbol, pfn, cudaVersion, flags);
  if (r == CUDA_SUCCESS && pfn && gmemhook::recording_enabled())
    *pfn = gmemhook::substitute_driver(symbol, *pfn, cudaVersion, flags);
  return r;
}

#define GMEMHOOK_DEFINE_ENTRY_POINT(NAME)                                                       \
  __attribute__((visibility("default"))) cudaError_t NAME(                                      \
      const char* symbol, void** funcPtr, unsigned long long flags,                             \
      cudaDriverEntryPointQueryResult* driverStatus) {                                          \
    using Fn = cudaError_t (*)(const char*, void**, unsigned long long,                         \
                               cudaDriverEntryPointQueryResult*);                               \
    auto real = gmemhook::real_of<Fn>(#NAME);                                                   \
    if (!real) return cudaErrorInitializationError;                                             \
    cudaError_t r = real(symbol, funcPtr, flags, driverStatus);                                 \
    if (r == cudaSuccess && funcPtr && gmemhook::recording_enabled())                           \
      *funcPtr = gmemhook::substitute_driver(symbol, *funcPtr, CUDART_VERSION, flags);          \
    return r;                                                                                   \
  }
GMEMHOOK_DEFINE_ENTRY_POINT(cudaGetDriverEntryPoint)
GMEMHOOK_DEFINE_ENTRY_POINT(cudaGetDriverEntryPoint_ptsz)
#undef GMEMHOOK_DEFINE_ENTRY_POINT

#define GMEMHOOK_DEFINE_ENTRY_POINT_BY_VERSION(NAME)                                            \
  __attribute__((visibility("default"))) cudaError_t NAME(                                      \
      const char* symbol, void** funcPtr, unsigned int cudaVersion, unsigned long long flags,   \
      cudaDriverEntryPointQueryResult* driverStatus) {                                          \
    using Fn = cudaError_t (*)(const char*, void**, unsigned int, unsigned long long,           \
                               cudaDriverEntryPointQueryResult*);                               \
    auto real = gmemhook::real_of<Fn>(#NAME);                                                   \
    if (!real) return cudaErrorInitializationError;                                             \
    cudaError_t r = real(symbol, funcPtr, cudaVersion, flags, driverStatus);                    \
    if (r == cudaSuccess && funcPtr && gmemhook::recording_enabled())                           \
      *funcPtr = gmemhook::substitute_driver(symbol, *funcPtr, static_cast<int>(cudaVersion),   \
                                             flags);                                            \
    return r;                                                                                   \
  }
GMEMHOOK_DEFINE_ENTRY_POINT_BY_VERSION(cudaGetDriverEntryPointByVersion)
GMEMHOOK_DEFINE_ENTRY_POINT_BY_VERSION(cudaGetDriverEntryPointByVersion_ptsz)
#undef GMEMHOOK_DEFINE_ENTRY_POINT_BY_VERSION

}  // extern "C"

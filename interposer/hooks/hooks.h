// The hooked entry points as data: name → our wrapper and the real function behind it.
#pragma once

#include <atomic>
#include <cstddef>

#include "gmemhook/api_table.h"

namespace gmemhook {

struct HookSlot {
  const char* name;
  format::Layer layer;
  void* wrapper;
  std::atomic<void*> real;
};

// Every allocation entry point of api_table.h, then the resolvers (cuGetProcAddress,
// cudaGetDriverEntryPoint…) that hand out function pointers and must hand out ours.
HookSlot* hook_slots();
size_t hook_slot_count();

// The slot for an exported name, or nullptr when we don't hook it.
HookSlot* find_hook(const char* name);

// The slot whose real function is `real`, or nullptr.
HookSlot* find_hook_by_real(const void* real);

// Finds the real function of a slot (real_function's first use).
void* resolve_real_function(HookSlot& slot);

// The real function of a slot, resolved on first use; nullptr if no loaded library has it.
inline void* real_function(HookSlot& slot) {
  void* p = slot.real.load(std::memory_order_acquire);
  return p ? p : resolve_real_function(slot);
}

// Called when a lookup (dlsym, cuGetProcAddress…) found `real` for `slot`: remembers it as the
// real function if none is known yet, and returns what the caller should get instead: our wrapper.
void* substitute(HookSlot& slot, void* real);

}  // namespace gmemhook

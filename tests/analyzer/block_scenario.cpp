// The PyTorch-shaped process of block_scenario.h, event by event.
#include "block_scenario.h"

namespace gmemhook::test_logs {

void block_event(Scenario& s, uint64_t tid, uint64_t address, int64_t size, uint64_t allocated,
                 uint64_t reserved, uint32_t stack, int32_t device) {
  format::Event& ev =
      s.event(tid, format::ApiId::_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE, stack);
  ev.f.set_address(address);
  ev.f.set_size(size < 0 ? static_cast<uint64_t>(-size) : static_cast<uint64_t>(size));
  if (size < 0) ev.f.set_free();
  ev.f.set_device(device);
  ev.f.set_totals(allocated, reserved);
}

BlockScenario add_block_scenario(Scenario& s) {
  using format::ApiId;
  constexpr uint64_t kMiB = BlockScenario::kMiB;
  BlockScenario b;
  b.segment_stack = s.stack(11, {Scenario::kModuleBias + 0x1100});
  b.tensor_a = s.stack(11, {Scenario::kModuleBias + 0x1200});
  b.tensor_b = s.stack(11, {Scenario::kModuleBias + 0x1300});
  b.plain = s.stack(11, {Scenario::kModuleBias + 0x1400});
  const uint64_t a = BlockScenario::kSegA, bseg = BlockScenario::kSegB;
  s.alloc(11, ApiId::cudaMalloc, a, 2 * kMiB, 0, b.segment_stack);               // seq 1
  block_event(s, 11, a, 1024, 1024, 2 * kMiB, b.tensor_a);                       // seq 2
  block_event(s, 11, a + 1024, 4096, 5120, 2 * kMiB, b.tensor_b);                // seq 3
  s.alloc(11, ApiId::cudaMalloc, bseg, 20 * kMiB, 0, b.segment_stack);           // seq 4
  block_event(s, 11, bseg, 10 * kMiB, 5120 + 10 * kMiB, 22 * kMiB, b.tensor_b);  // seq 5
  block_event(s, 11, bseg, -int64_t(10 * kMiB), 5120, 22 * kMiB, b.tensor_b);    // seq 6
  block_event(s, 11, a, -1024, 4096, 22 * kMiB, b.tensor_a);                     // seq 7
  s.alloc(11, ApiId::cudaMalloc, BlockScenario::kPlain, kMiB, 0, b.plain);       // seq 8
  return b;
}

}  // namespace gmemhook::test_logs

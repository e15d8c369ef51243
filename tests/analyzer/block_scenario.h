// A PyTorch-shaped process for the allocated-layer tests: segments from cudaMalloc,
// blocks reported through c10's profiler hook inside them, one segment left cached, one plain
// cudaMalloc outside the allocator. Its answers are known by construction (see the .cpp).
#pragma once

#include <cstdint>

#include "report_scenario.h"

namespace gmemhook::test_logs {

// One block event: size > 0 hands a block out, size < 0 takes it back; `allocated` and
// `reserved` are PyTorch's totals after the call.
void block_event(Scenario& s, uint64_t tid, uint64_t address, int64_t size, uint64_t allocated,
                 uint64_t reserved, uint32_t stack, int32_t device = 0);

struct BlockScenario {
  static constexpr uint64_t kMiB = 1 << 20;
  static constexpr uint64_t kSegA = 0x10000000, kSegB = 0x20000000, kPlain = 0x30000000;
  // The allocated peak (seq 5): 1 KiB + 4 KiB + 10 MiB of blocks.
  static constexpr uint64_t kAllocatedPeak = 1024 + 4096 + 10 * kMiB;
  static constexpr uint64_t kAllocatedPeakSeq = 5;
  // The reserved peak (seq 8): 2 MiB + 20 MiB segments + the 1 MiB plain allocation, 4 KiB
  // allocated in blocks then.
  static constexpr uint64_t kReservedPeak = 23 * kMiB;
  static constexpr uint64_t kReservedPeakSeq = 8;
  static constexpr uint64_t kLiveBlockBytes = 4096;    // one block, stack `tensor_b`, at the end
  static constexpr uint64_t kCachedBytes = 20 * kMiB;  // segment B: held a block, holds none
  uint32_t segment_stack = 0, tensor_a = 0, tensor_b = 0, plain = 0;
};

// Writes the scenario's events into `s` (pid any, thread 11).
BlockScenario add_block_scenario(Scenario& s);

}  // namespace gmemhook::test_logs

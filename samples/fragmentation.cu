// fragmentation.cu — punches equal holes between live blocks, then asks for one block bigger
// than any hole, so the fragmentation report has a known layout to describe.
//
// carve_blocks() cudaMallocs 33 blocks of 8 MiB (264 MiB). punch_holes() sorts them by address
// and frees every other one, the 2nd, 4th, ..., 32nd lowest, leaving 17 live blocks (136 MiB)
// and 16 holes of 8 MiB (128 MiB); with an odd count the lowest and highest blocks stay live, so
// every hole has a live block on each side. large_request() then asks for 64 MiB: half of what
// the holes hold together, but eight times the largest hole, so it fits in none of them. At the
// end everything is freed.
//
// What the report should show (`gmemhook run build/bin/samples/fragmentation`, then
// `gmemhook fragmentation`), right after punch_holes():
//   17 live allocations, 136.0 MiB (142606336 bytes), from carve_blocks() in fragmentation.cu
//   16 holes of 8.0 MiB (8388608 bytes) between them, 128.0 MiB (134217728 bytes) in all;
//   the largest hole is 8.0 MiB, smaller than the 64.0 MiB (67108864 bytes) request from
//   large_request() that follows (live then 200.0 MiB = 209715200 bytes)
//   peak 264.0 MiB (276824064 bytes) when all 33 blocks were live; 0 bytes live at exit.
// Whether the blocks sit back to back is up to the device, so the program prints the layout it
// got in address order ('#' live, '.' hole, '|' where a block doesn't start at the end of the
// one before). An H200 hands out 8 MiB blocks from 32 MiB chunks, e.g.
//   #.|#.#.#.#.#.#.#.#.#.#.#.#.#.#.|#.#
// and the simulated device packs them, usually without a single '|'.
#include <algorithm>
#include <array>
#include <cstdint>

#include "sample_check.h"

namespace {

constexpr int kBlocks = 33;
constexpr std::size_t kBlockBytes = 8 * kMiB;
constexpr std::size_t kLargeBytes = 64 * kMiB;

struct Block {
  std::uintptr_t address = 0;
  bool live = false;
};

using Blocks = std::array<Block, kBlocks>;

bool by_address(const Block& a, const Block& b) { return a.address < b.address; }

void print_layout(const Blocks& blocks) {
  char pattern[2 * kBlocks] = {};
  int length = 0;
  int gaps = 0;  // places where a block does not start at the end of the one before
  int live = 0;
  for (int i = 0; i < kBlocks; ++i) {
    if (i > 0 && blocks[i - 1].address + kBlockBytes != blocks[i].address) {
      pattern[length++] = '|';
      ++gaps;
    }
    pattern[length++] = blocks[i].live ? '#' : '.';
    live += blocks[i].live;
  }
  const int holes = kBlocks - live;
  std::printf("  layout (address order, '#' live, '.' hole, '|' gap): %s\n", pattern);
  std::printf("  %d live blocks, %zu bytes; %d holes of %zu bytes, %zu bytes in holes\n", live,
              live * kBlockBytes, holes, kBlockBytes, holes * kBlockBytes);
  if (gaps == 0)
    std::printf("  the blocks are back to back: they span %zu bytes\n", kBlocks * kBlockBytes);
  else
    std::printf("  the blocks are not back to back: %d gap(s) between neighbours\n", gaps);
}

}  // namespace

SAMPLE_FRAME void carve_blocks(Blocks& blocks) {
  for (Block& block : blocks) {
    void* p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, kBlockBytes));
    fill(p, kBlockBytes, 7);
    block = {reinterpret_cast<std::uintptr_t>(p), true};
  }
}

SAMPLE_FRAME void punch_holes(Blocks& blocks) {
  // Address order, not allocation order: the device may hand blocks out in any order.
  std::sort(blocks.begin(), blocks.end(), by_address);
  for (int i = 1; i < kBlocks; i += 2) {
    CHECK_CUDA(cudaFree(reinterpret_cast<void*>(blocks[i].address)));
    blocks[i].live = false;
  }
}

SAMPLE_FRAME void* large_request() {
  void* p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, kLargeBytes));
  fill(p, kLargeBytes, 9);
  return p;
}

int main() {
  Blocks blocks{};
  carve_blocks(blocks);
  punch_holes(blocks);
  std::printf("fragmentation: after freeing every other block of %d x %zu bytes:\n", kBlocks,
              kBlockBytes);
  print_layout(blocks);

  void* large = large_request();
  std::printf("  then asked for %zu bytes, more than any hole holds: succeeded\n", kLargeBytes);
  CHECK_CUDA(cudaDeviceSynchronize());

  CHECK_CUDA(cudaFree(large));
  for (const Block& block : blocks)
    if (block.live) CHECK_CUDA(cudaFree(reinterpret_cast<void*>(block.address)));
  std::printf("  peak %zu bytes; live at exit: 0 bytes\n", kBlocks * kBlockBytes);
  return 0;
}

// A walk that read a stack word below its own frame is never kept among the recent walks: a
// recent walk stores each checked word's place as 4 bytes up from that frame, and a word below
// it has no such place (FrameRuleCache::keep_recent). Part of fast_unwind_tests.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>

#include "interposer/capture/fast_unwinder.h"

namespace {

struct Call {
  gmemhook::FrameRuleCache* cache;
  uint64_t out[8];
  int count;
  gmemhook::WalkView view;
};

}  // namespace

// The walk of the test: its frames are below_frame_walk's caller's and theirs.
extern "C" __attribute__((noinline, used)) void below_frame_walk(Call* c) {
  c->count = gmemhook::fast_backtrace(*c->cache, c->out, 4, {}, 0, &c->view);
}

extern "C" void rbp_chain_far_below(Call* c);
extern "C" void rbp_chain_at_home(Call* c);

// Two callers of below_frame_walk that differ only in where their CFI says rbp is saved, each
// called from a frame-pointer frame (whose rule reads that saved rbp, so the walk checks it).
// far_below saves rbp 16 KiB below its own rsp, far beyond the frames the walk itself runs in
// (as a wrong rule that stays inside the stack mapping would read); at_home pushes it as usual.
asm(R"(
  .text
  .p2align 4
  .type save_rbp_far_below, @function
save_rbp_far_below:
  .cfi_startproc
  sub $8, %rsp
  .cfi_def_cfa_offset 16
  mov %rbp, -16384(%rsp)
  .cfi_offset %rbp, -16400
  call below_frame_walk
  add $8, %rsp
  .cfi_def_cfa_offset 8
  ret
  .cfi_endproc
  .size save_rbp_far_below, .-save_rbp_far_below

  .p2align 4
  .type save_rbp_at_home, @function
save_rbp_at_home:
  .cfi_startproc
  push %rbp
  .cfi_def_cfa_offset 16
  .cfi_offset %rbp, -16
  call below_frame_walk
  pop %rbp
  .cfi_def_cfa_offset 8
  ret
  .cfi_endproc
  .size save_rbp_at_home, .-save_rbp_at_home

  .p2align 4
  .globl rbp_chain_far_below
  .type rbp_chain_far_below, @function
rbp_chain_far_below:
  .cfi_startproc
  push %rbp
  .cfi_def_cfa_offset 16
  .cfi_offset %rbp, -16
  mov %rsp, %rbp
  .cfi_def_cfa_register %rbp
  call save_rbp_far_below
  pop %rbp
  .cfi_def_cfa %rsp, 8
  ret
  .cfi_endproc
  .size rbp_chain_far_below, .-rbp_chain_far_below

  .p2align 4
  .globl rbp_chain_at_home
  .type rbp_chain_at_home, @function
rbp_chain_at_home:
  .cfi_startproc
  push %rbp
  .cfi_def_cfa_offset 16
  .cfi_offset %rbp, -16
  mov %rsp, %rbp
  .cfi_def_cfa_register %rbp
  call save_rbp_at_home
  pop %rbp
  .cfi_def_cfa %rsp, 8
  ret
  .cfi_endproc
  .size rbp_chain_at_home, .-rbp_chain_at_home
)");

namespace {

// Walks through `chain` three times in one frame (the same start each time); whether the walks
// were kept (a note) and how many were found whole among the recent walks. `stop_once_kept`: no
// more rounds after a walk was kept (one kept with a word below its frame would be checked
// nearly 4 GiB above it: a fault rather than a failed expectation).
struct Walked {
  int count = 0;
  bool kept = false;
  uint64_t recent_used = 0;
};

__attribute__((noinline)) Walked walk_three_times(void (*chain)(Call*), bool stop_once_kept) {
  Walked w;
  // A thread of its own: its whole stack is mapped, so the word 16 KiB down is inside it.
  std::thread([&] {
    gmemhook::FrameRuleCache cache;
    for (int round = 0; round < 3 && !(stop_once_kept && w.kept); ++round) {
      Call c{&cache, {}, 0, {}};
      chain(&c);
      w.count = c.count;
      w.kept |= c.view.note != nullptr;
    }
    w.recent_used = cache.recent_walks_used();
    cache.release();
  }).join();
  return w;
}

TEST(FastUnwind, WalkThatReadsBelowItsFrameIsNotKept) {
  // The same walk with rbp saved as usual is kept and found again: the test can tell.
  const Walked home = walk_three_times(rbp_chain_at_home, false);
  ASSERT_EQ(home.count, 4) << "the fast walk took the frames of the usual shape";
  EXPECT_TRUE(home.kept);
  EXPECT_GE(home.recent_used, 1u);

  const Walked below = walk_three_times(rbp_chain_far_below, true);
  ASSERT_EQ(below.count, 4) << "the fast walk read the saved rbp 16 KiB below";
  EXPECT_FALSE(below.kept) << "a walk with a word below its frame was kept among the recent walks";
  EXPECT_EQ(below.recent_used, 0u);
}

}  // namespace

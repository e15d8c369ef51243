// The k-way merge of ProcessReader for a process of 2 to 16 thread files, without the heap:
// sequence numbers are handed out process-wide and nearly without holes, so the event after seq s
// is almost always s + 1, and one compare of every head with s + 1 finds its file where the heap
// sifted (~42 instructions an event with eight files taking turns). A hole (an event lost, a
// damaged chunk), a seq in two files (damage) and the first event take a full search instead.
// Either way the files come out in MergeHeads' order, (seq, file), exactly.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "analyzer/log/merge_heads.h"

namespace gmemhook::analysis {

class MergeScan {
 public:
  using Head = MergeHeads::Head;
  static constexpr uint32_t kMaxFiles = 16;

  bool empty() const { return live_ == 0; }
  uint32_t top_file() const { return top_; }

  // Each file once (file < kMaxFiles), all before the first replace_top or pop_top.
  void push(Head h) {
    if (live_ == 0 || h.seq < seq_[top_] || (h.seq == seq_[top_] && h.file < top_)) top_ = h.file;
    set_head(h.file, h.seq);
    live_ |= 1u << h.file;
    // Nothing is known of the other heads yet: the first choice searches.
    others_min_ = 0;
    scannable_ = 0;
    stayed_ = false;
  }
  // The top's file delivered `delivered` and has a next event, `seq` (above it: read_event makes
  // sure). Returns whether that file stays on top, as MergeHeads::replace_top.
  bool replace_top(uint64_t seq, uint64_t delivered) {
    // A file that supplies several events in a row (in most programs one thread makes most
    // allocations) stays on top while its seq is below every other head, which do not move
    // meanwhile: one compare with their smallest (note_run), and nothing stored (the top's own
    // head is written when another file may take over). Equal is not below: the file index
    // breaks that tie, in choose().
    if (seq < others_min_) return true;
    set_head(top_, seq);
    const uint32_t was = top_;
    choose(delivered);
    return top_ == was;
  }
  // The top's file delivered `delivered` and has ended.
  void pop_top(uint64_t delivered) {
    live_ &= ~(1u << top_);
    scannable_ &= live_;
    if (live_ != 0) choose(delivered);
  }

 private:
  void set_head(uint32_t file, uint64_t seq) {
    seq_[file] = seq;
    low_[file] = static_cast<uint16_t>(seq);
  }

  // The top after the event `delivered`. Inlined into the merge loop, with search() and
  // min_of_others() (rare) kept out of it: with them inside, GCC made choose() a call an event.
  [[gnu::always_inline]] void choose(uint64_t delivered) {
    const uint32_t was = top_;
    const uint64_t next = delivered + 1;
    // When every other head was above `delivered` and the top's file's own next is too, no head
    // is below `next`, so the one that equals it is the smallest. The heads' low 16 bits are
    // compared, eight to an SSE2 compare (every x86-64 has SSE2); a head that matches only there
    // is caught by the compare of its whole seq, and two that match go to the search, which
    // orders a duplicate by file as the heap did.
    const uint32_t match = equal_lanes(static_cast<uint16_t>(next)) & scannable_;
    const uint32_t file = static_cast<uint32_t>(std::countr_zero(match));
    if (match != 0 && (match & (match - 1)) == 0 && seq_[file] == next) {
      top_ = file;
      note_run(was);
      return;
    }
    search();
    note_run(was);
  }

  // After a choice: when the top's file stays on top a second time in a row, the smallest of
  // the other heads is found, for replace_top's one compare while it goes on. Not the first
  // time: with files taking turns at random (eight: one stays in eight) the search over every
  // head would mostly be made for a run of one more event (~5 instructions an event more on
  // the synthetic run).
  void note_run(uint32_t was) {
    if (top_ != was) {
      others_min_ = 0;
      stayed_ = false;
    } else if (stayed_) {
      others_min_ = min_of_others();
    } else {
      stayed_ = true;
    }
  }

  // The smallest (seq, file) of the live heads; whether the rest are all above it.
  [[gnu::noinline]] void search() {
    uint32_t best = static_cast<uint32_t>(std::countr_zero(live_));
    bool tie = false;
    for (uint32_t m = live_ & (live_ - 1); m != 0; m &= m - 1) {
      const uint32_t f = static_cast<uint32_t>(std::countr_zero(m));
      if (seq_[f] < seq_[best]) {
        best = f;
        tie = false;
      } else if (seq_[f] == seq_[best]) {
        tie = true;  // best stays: files are visited in rising index
      }
    }
    top_ = best;
    scannable_ = tie ? 0 : live_;
  }

  // The smallest seq of the live heads but the top's (the largest value when there is none).
  [[gnu::noinline]] uint64_t min_of_others() const {
    uint64_t least = std::numeric_limits<uint64_t>::max();
    for (uint32_t m = live_ & ~(1u << top_); m != 0; m &= m - 1)
      least = std::min(least, seq_[std::countr_zero(m)]);
    return least;
  }

  // Bit f set where low_[f] == x, whether file f is live or not.
  uint32_t equal_lanes(uint16_t x) const {
#if defined(__SSE2__)
    const __m128i key = _mm_set1_epi16(static_cast<short>(x));
    const __m128i* lanes = reinterpret_cast<const __m128i*>(low_);
    // Packed to one byte a lane (a match is -1, which saturates to -1), one bit a lane.
    const __m128i eq = _mm_packs_epi16(_mm_cmpeq_epi16(_mm_load_si128(lanes), key),
                                       _mm_cmpeq_epi16(_mm_load_si128(lanes + 1), key));
    return static_cast<uint32_t>(_mm_movemask_epi8(eq));
#else
    uint32_t m = 0;
    for (uint32_t f = 0; f < kMaxFiles; ++f) m |= static_cast<uint32_t>(low_[f] == x) << f;
    return m;
#endif
  }

  alignas(16) uint16_t low_[kMaxFiles] = {};  // the heads' seqs' low 16 bits, for the compare
  // The heads' seqs; the top's is written only when another file may take over (replace_top).
  uint64_t seq_[kMaxFiles] = {};
  uint32_t live_ = 0;  // bit f: file f has a head
  uint32_t top_ = 0;
  // live_ while every live head but the top's is above the top's seq, 0 after a tie and before
  // the first choice: the files among which choose() may look for the one head equal to the
  // next seq (a mask rather than a flag: one AND instead of a test and a branch an event).
  uint32_t scannable_ = 0;
  // While the top stays the same file (from its second stay on: note_run), the smallest of the
  // other heads; 0 (below any seq, so never passed) otherwise.
  uint64_t others_min_ = 0;
  bool stayed_ = false;  // the last choice kept the top's file on top
};

}  // namespace gmemhook::analysis

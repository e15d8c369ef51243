// The next unread event of each thread file of a process, smallest sequence number on top: the
// k-way merge of ProcessReader for one file and for more than 16 (MergeScan merges 2 to 16). A
// binary heap that replaces its top in place, because after each event the file that supplied it
// comes back with its next one: one sift instead of a pop and a push (std::priority_queue's two
// sifts and its pair compares were a twentieth of `summary`), and none at all while that file's
// events come before every other head.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gmemhook::analysis {

class MergeHeads {
 public:
  struct Head {
    uint64_t seq;
    uint32_t file;  // index of the thread file; breaks ties, so a duplicate seq is met in order
  };

  bool empty() const { return heap_.empty(); }
  uint32_t top_file() const { return heap_.front().file; }

  void push(Head h) {
    size_t i = heap_.size();
    heap_.push_back(h);
    while (i > 0) {
      const size_t parent = (i - 1) / 2;
      if (!before(h, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = h;
  }
  // The top's file has a next event, `seq`. Returns whether that file stays on top: then its
  // next events are read with no heap work until one is not below another head. (`delivered`,
  // the top's last seq, is for MergeScan: the heap knows it.)
  bool replace_top(uint64_t seq, uint64_t /*delivered*/) {
    // A file that supplies several events in a row (in most programs one thread makes most
    // allocations) stays on top after a compare with the root's two children, which hold the
    // smallest of the other heads, on seq alone. An equal seq (a duplicate: damage) sifts, so
    // that the file index breaks the tie as before.
    const size_t n = heap_.size();
    if ((n < 2 || seq < heap_[1].seq) && (n < 3 || seq < heap_[2].seq)) {
      heap_.front().seq = seq;
      return true;
    }
    sift_down({seq, heap_.front().file});
    return false;
  }
  // The top's file has ended.
  void pop_top(uint64_t /*delivered*/) {
    const Head last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(last);
  }

 private:
  static bool before(const Head& a, const Head& b) {
    return a.seq < b.seq || (a.seq == b.seq && a.file < b.file);
  }
  // Puts `h` at the root and moves it down to its place.
  void sift_down(Head h) {
    const size_t n = heap_.size();
    size_t i = 0;
    for (;;) {
      size_t child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && before(heap_[child + 1], heap_[child])) ++child;
      if (!before(heap_[child], h)) break;
      heap_[i] = heap_[child];
      i = child;
    }
    heap_[i] = h;
  }

  std::vector<Head> heap_;
};

}  // namespace gmemhook::analysis

// Per-thread interning of call stacks (native frames plus Python frames): each distinct stack gets
// an id once, and events refer to it by id. Memory comes from mmap, never malloc (hooks).
#pragma once

#include <cstddef>
#include <cstdint>

namespace gmemhook {

class StackTable {
 public:
  // Returns the id of the stack made of native `frames` and Python frames `py` (packed as
  // python_frames.h writes them) and sets *is_new when it was not seen before. Ids start at 1.
  // Returns 0 if the table can't grow (out of memory): the event is then recorded without stack.
  uint32_t intern(const uint64_t* frames, size_t n, const uint64_t* py, size_t npy, bool* is_new);
  void release();
  // Forgets every stack; keeps the memory when the table never grew past its first size, so a
  // log handed to the next thread needs no new mapping.
  void reset();

 private:
  static constexpr size_t kFirstCapacity = 1024;
  struct Slot {
    uint64_t hash;  // 0 = empty
    uint32_t id;
    uint16_t frames;
    uint16_t py_frames;
  };
  bool grow();

  // Stacks are compared by a 64-bit hash of their frames and their depths, not frame by frame:
  // keeping every frame would cost 0.5 KiB per stack per thread, and a false match needs two
  // different stacks to collide in 64 bits within one thread.
  Slot* slots_ = nullptr;
  size_t capacity_ = 0;
  size_t used_ = 0;
  uint32_t next_id_ = 1;
};

}  // namespace gmemhook

// Per-thread interning of call stacks (native frames plus Python frames): each distinct stack gets
// an id once, and events refer to it by id. Memory comes from mmap, never malloc (hooks).
#pragma once

#include <cstddef>
#include <cstdint>

#include "interposer/capture/mapped_table.h"

namespace gmemhook {

class StackTable {
 public:
  // Returns the id of the stack made of native `frames` and Python frames `py` (packed as
  // python_frames.h writes them) and sets *is_new when it was not seen before. Ids start at 1.
  // Returns 0 if the table can't grow (out of memory): the event is then recorded without stack.
  uint32_t intern(const uint64_t* frames, size_t n, const uint64_t* py, size_t npy, bool* is_new);
  void release();
  // The largest stack `intern` remembers as the last one: native and Python frames together.
  static constexpr size_t kLastFrames = 512;
  // Forgets every stack; keeps the memory when the table never grew past its first size, so a
  // log handed to the next thread needs no new mapping.
  void reset();
  // Changes whenever reset() or release() forgets the ids: what an id kept elsewhere belongs to.
  uint32_t epoch() const { return epoch_; }

 private:
  struct Slot {
    uint64_t hash;  // 0 = empty
    uint32_t id;
    uint16_t frames;
    uint16_t py_frames;
    bool empty() const { return hash == 0; }
    uint64_t home() const { return hash; }
  };
  uint32_t find_or_add(const uint64_t* frames, size_t n, const uint64_t* py, size_t npy,
                       bool* is_new);

  // Stacks are compared by a 64-bit hash of their frames and their depths, not frame by frame:
  // keeping every frame would cost 0.5 KiB per stack per thread, and a false match needs two
  // different stacks to collide in 64 bits within one thread.
  MappedTable<Slot> slots_;
  uint32_t next_id_ = 1;
  uint32_t epoch_ = 0;

  // The last stack interned, frame by frame: a loop allocates from one place over and over, and
  // comparing with it is a few cycles where hashing every frame costs a tenth of an event.
  // last_id_ 0: none.
  uint32_t last_id_ = 0;
  uint16_t last_frames_ = 0;
  uint16_t last_py_frames_ = 0;
  uint64_t last_[kLastFrames];
};

}  // namespace gmemhook

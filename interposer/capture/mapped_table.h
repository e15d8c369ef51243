// An open-addressing hash table whose memory comes from mmap, never malloc (it grows inside
// hooks): where StackTable (stacks → ids) and PyCodeTable (code objects → ids) keep their ids.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace gmemhook {

// Mixes `v` into the hash `h`: the low bits, which choose a slot, depend on every bit of both.
inline uint64_t mix_hash(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 29);
}

// Slots found by linear probing from their hash, the table doubled when half full. A Slot is
// trivially copyable, empty when zeroed (`bool empty() const`), and knows the hash its probe
// starts from (`uint64_t home() const`), by which grow() places it again. The first mapping holds
// kFirstCapacity slots.
template <class Slot, size_t kFirstCapacity = 1024>
class MappedTable {
  static_assert(std::is_trivially_copyable_v<Slot>);
  static_assert((kFirstCapacity & (kFirstCapacity - 1)) == 0, "a power of two");

 public:
  // Makes room for one more slot; false when the table would have to grow and cannot (out of
  // memory).
  bool reserve_one() { return (used_ + 1) * 2 <= capacity_ || grow(); }

  // The slot, probing from `home`, that `matches(const Slot&)` accepts, or the empty slot where
  // it would go (then fill() it, or leave it empty). Only after reserve_one() returned true.
  template <class Matches>
  Slot& find(uint64_t home, Matches matches) {
    size_t i = home & (capacity_ - 1);
    while (!slots_[i].empty()) {
      if (matches(slots_[i])) return slots_[i];
      i = (i + 1) & (capacity_ - 1);
    }
    return slots_[i];
  }
  // Stores `s` in the empty slot `at` that find() returned.
  void fill(Slot& at, const Slot& s) {
    at = s;
    ++used_;
  }

  // Forgets every slot. The memory is kept while the table never grew past its first size, so a
  // table handed to another thread needs no new mapping; a larger one is given back.
  void clear() {
    if (capacity_ > kFirstCapacity) return release();
    if (slots_) std::memset(static_cast<void*>(slots_), 0, capacity_ * sizeof(Slot));
    used_ = 0;
  }
  // Forgets every slot and gives the memory back.
  void release() {
    if (slots_) munmap(slots_, capacity_ * sizeof(Slot));
    slots_ = nullptr;
    capacity_ = used_ = 0;
  }

 private:
  bool grow() {
    const size_t cap = capacity_ ? capacity_ * 2 : kFirstCapacity;
    void* m = mmap(nullptr, cap * sizeof(Slot), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (m == MAP_FAILED) return false;
    auto* fresh = static_cast<Slot*>(m);
    for (size_t i = 0; i < capacity_; ++i) {
      if (slots_[i].empty()) continue;
      size_t j = slots_[i].home() & (cap - 1);
      while (!fresh[j].empty()) j = (j + 1) & (cap - 1);
      fresh[j] = slots_[i];
    }
    if (slots_) munmap(slots_, capacity_ * sizeof(Slot));
    slots_ = fresh;
    capacity_ = cap;
    return true;
  }

  Slot* slots_ = nullptr;
  size_t capacity_ = 0;
  size_t used_ = 0;
};

}  // namespace gmemhook

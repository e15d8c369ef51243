// A flat open-addressing hash map keyed by a non-zero 64-bit address: the live set is looked up
// once per allocation and per free, so it must cost a few nanoseconds, not a node allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "analyzer/model/prefetch.h"

namespace gmemhook::analysis {

template <typename Value>
class AddressMap {
 public:
  AddressMap() { slots_.resize(kInitialCapacity); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // The value stored under `address`, or nullptr. Address 0 is never stored.
  Value* find(uint64_t address) {
    for (size_t i = home(address);; i = next(i)) {
      Slot& s = slots_[i];
      if (s.key == address) return &s.value;
      if (s.key == 0) return nullptr;
    }
  }
  const Value* find(uint64_t address) const { return const_cast<AddressMap*>(this)->find(address); }

  // Starts loading the slot where a lookup of `address` begins: the live set of a large program
  // is megabytes, and each lookup's first slot was a cache miss.
  void prefetch(uint64_t address) const {
    const Slot* s = &slots_[home(address)];
    analysis::prefetch(s);
    // A probe goes on past its home slot, and removing a slot shifts the ones after it back: at
    // 24 bytes a slot, they are often on the next line.
    analysis::prefetch(reinterpret_cast<const char*>(s) + 64);
  }

  // Inserts or overwrites; `address` must not be 0.
  void insert(uint64_t address, const Value& value) {
    if (full()) grow();
    for (size_t i = home(address);; i = next(i)) {
      Slot& s = slots_[i];
      if (s.key == address) {
        s.value = value;
        return;
      }
      if (s.key == 0) {
        s.key = address;
        s.value = value;
        ++size_;
        return;
      }
    }
  }

  // Finds `address` or makes room for it: returns its value and whether it was absent (then
  // the value is default-constructed, ready to be filled). One probe sequence for both.
  std::pair<Value*, bool> find_or_add(uint64_t address) {
    if (full()) grow();
    for (size_t i = home(address);; i = next(i)) {
      Slot& s = slots_[i];
      if (s.key == address) return {&s.value, false};
      if (s.key == 0) {
        s.key = address;
        s.value = Value{};
        ++size_;
        return {&s.value, true};
      }
    }
  }

  // Removes `address` if present, copying its value to `*out`. Backward-shift deletion keeps
  // probe chains intact without tombstones, so a long run of allocations and frees never
  // degrades lookups.
  bool take(uint64_t address, Value* out) {
    size_t i = home(address);
    for (;; i = next(i)) {
      if (slots_[i].key == address) break;
      if (slots_[i].key == 0) return false;
    }
    *out = slots_[i].value;
    remove_at(i);
    return true;
  }

  bool erase(uint64_t address) {
    Value ignored;
    return take(address, &ignored);
  }

  // Calls fn(address, value) for every entry, in no particular order.
  template <typename Fn>
  void for_each(Fn&& fn) const {
    for (const Slot& s : slots_)
      if (s.key != 0) fn(s.key, s.value);
  }

  void clear() {
    slots_.assign(kInitialCapacity, Slot{});
    mask_ = kInitialCapacity - 1;
    size_ = 0;
  }

 private:
  struct Slot {
    uint64_t key = 0;
    Value value{};
  };
  static constexpr size_t kInitialCapacity = 1024;  // a power of two

  size_t home(uint64_t key) const {
    // Fibonacci hashing: allocations are aligned, so the low bits alone would collide.
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & mask_;
  }
  size_t next(size_t i) const { return (i + 1) & mask_; }
  // At most half full: a free's backward shift walks on to the next empty slot, on average ~4
  // slots at the ~0.6 load a three-quarters limit left (20 000 live in 32 768 slots) and ~1.5 at
  // ~0.3; the live set's probes and shifts were a tenth of `gmemhook summary`.
  // From the mask, not slots_.size(): the vector's size is its byte length divided by 24, a
  // multiply and shift on every insert.
  bool full() const { return (size_ + 1) * 2 > mask_ + 1; }

  void remove_at(size_t i) {
    size_t hole = i;
    for (size_t j = next(hole);; j = next(j)) {
      const uint64_t key = slots_[j].key;
      if (key == 0) break;
      const size_t h = home(key);
      // Move slot j into the hole when its home position does not lie in (hole, j].
      const bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
      if (!stays) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole].key = 0;
    --size_;
  }

  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    size_ = 0;
    for (const Slot& s : old)
      if (s.key != 0) insert(s.key, s.value);
  }

  std::vector<Slot> slots_;
  // slots_.size() - 1, kept: the size of a vector of 24-byte slots is a division, and every
  // probe step of an allocation or free needs the mask.
  size_t mask_ = kInitialCapacity - 1;
  size_t size_ = 0;
};

}  // namespace gmemhook::analysis

// A flat open-addressing hash map keyed by a non-zero 64-bit address: the live set is looked up
// once per allocation and per free, so it must cost a few nanoseconds, not a node allocation.
// Keys and values are two arrays: probes and the backward shift of a removal read only keys,
// eight to a cache line, and a value's line is touched only where its key is.
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
  AddressMap() { clear(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // The value stored under `address`, or nullptr. Address 0 is never stored.
  Value* find(uint64_t address) {
    for (size_t i = home(address);; i = next(i)) {
      if (keys_[i] == address) return &values_[i];
      if (keys_[i] == 0) return nullptr;
    }
  }
  const Value* find(uint64_t address) const { return const_cast<AddressMap*>(this)->find(address); }

  // Starts loading the key and the value where a lookup of `address` begins: the live set of a
  // large program is megabytes, and each lookup's first slot was a cache miss.
  void prefetch(uint64_t address) const {
    const size_t i = home(address);
    analysis::prefetch(&keys_[i]);
    analysis::prefetch(&values_[i]);
  }

  // Inserts or overwrites; `address` must not be 0.
  void insert(uint64_t address, const Value& value) {
    if (full()) grow();
    for (size_t i = home(address);; i = next(i)) {
      if (keys_[i] == address) {
        values_[i] = value;
        return;
      }
      if (keys_[i] == 0) {
        keys_[i] = address;
        values_[i] = value;
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
      if (keys_[i] == address) return {&values_[i], false};
      if (keys_[i] == 0) {
        keys_[i] = address;
        values_[i] = Value{};
        ++size_;
        return {&values_[i], true};
      }
    }
  }

  // Removes `address` if present, copying its value to `*out`. Backward-shift deletion keeps
  // probe chains intact without tombstones, so a long run of allocations and frees never
  // degrades lookups.
  bool take(uint64_t address, Value* out) {
    size_t i = home(address);
    for (;; i = next(i)) {
      if (keys_[i] == address) break;
      if (keys_[i] == 0) return false;
    }
    *out = values_[i];
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
    for (size_t i = 0; i < keys_.size(); ++i)
      if (keys_[i] != 0) fn(keys_[i], values_[i]);
  }

  void clear() {
    keys_.assign(kInitialCapacity, 0);
    values_.assign(kInitialCapacity, Value{});
    mask_ = kInitialCapacity - 1;
    size_ = 0;
  }

 private:
  static constexpr size_t kInitialCapacity = 1024;  // a power of two

  size_t home(uint64_t key) const {
    // Fibonacci hashing: allocations are aligned, so the low bits alone would collide.
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & mask_;
  }
  size_t next(size_t i) const { return (i + 1) & mask_; }
  // At most half full: a free's backward shift walks on to the next empty slot, on average ~4
  // slots at the ~0.6 load a three-quarters limit left (20 000 live in 32 768 slots) and ~1.5 at
  // ~0.3; the live set's probes and shifts were a tenth of `gmemhook summary`.
  // From the mask, not a vector's size (a value vector's is its byte length divided by the
  // value's size, a multiply and shift on every insert).
  bool full() const { return (size_ + 1) * 2 > mask_ + 1; }

  void remove_at(size_t i) {
    size_t hole = i;
    for (size_t j = next(hole);; j = next(j)) {
      const uint64_t key = keys_[j];
      if (key == 0) break;
      const size_t h = home(key);
      // Move slot j into the hole when its home position does not lie in (hole, j].
      const bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
      if (!stays) {
        keys_[hole] = key;
        values_[hole] = values_[j];
        hole = j;
      }
    }
    keys_[hole] = 0;
    --size_;
  }

  void grow() {
    std::vector<uint64_t> old_keys;
    std::vector<Value> old_values;
    old_keys.swap(keys_);
    old_values.swap(values_);
    keys_.assign(old_keys.size() * 2, 0);
    values_.assign(old_keys.size() * 2, Value{});
    mask_ = keys_.size() - 1;
    size_ = 0;
    for (size_t i = 0; i < old_keys.size(); ++i)
      if (old_keys[i] != 0) insert(old_keys[i], old_values[i]);
  }

  std::vector<uint64_t> keys_;
  std::vector<Value> values_;  // values_[i] belongs to keys_[i]
  // keys_.size() - 1, kept: every probe step of an allocation or free needs the mask.
  size_t mask_ = kInitialCapacity - 1;
  size_t size_ = 0;
};

}  // namespace gmemhook::analysis

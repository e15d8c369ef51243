// Open-addressing hash set of stack hashes → ids (see stack_table.h).
#include "interposer/capture/stack_table.h"

#include <sys/mman.h>

#include <cstring>

namespace gmemhook {

namespace {
inline uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 29);
}

uint64_t hash_frames(const uint64_t* f, size_t n, const uint64_t* py, size_t npy) {
  uint64_t h = 0x84222325cbf29ce4ull ^ n;
  for (size_t i = 0; i < n; ++i) h = mix(h, f[i]);
  h = mix(h, npy);
  for (size_t i = 0; i < npy; ++i) h = mix(h, py[i]);
  return h ? h : 1;  // 0 marks an empty slot
}
}  // namespace

bool StackTable::grow() {
  size_t cap = capacity_ ? capacity_ * 2 : kFirstCapacity;
  void* m = mmap(nullptr, cap * sizeof(Slot), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  if (m == MAP_FAILED) return false;
  Slot* fresh = static_cast<Slot*>(m);
  for (size_t i = 0; i < capacity_; ++i) {
    if (!slots_[i].hash) continue;
    size_t j = slots_[i].hash & (cap - 1);
    while (fresh[j].hash) j = (j + 1) & (cap - 1);
    fresh[j] = slots_[i];
  }
  if (slots_) munmap(slots_, capacity_ * sizeof(Slot));
  slots_ = fresh;
  capacity_ = cap;
  return true;
}

uint32_t StackTable::intern(const uint64_t* frames, size_t n, const uint64_t* py, size_t npy,
                            bool* is_new) {
  *is_new = false;
  if (last_id_ && n == last_frames_ && npy == last_py_frames_ &&
      std::memcmp(last_, frames, n * sizeof(uint64_t)) == 0 &&
      std::memcmp(last_ + n, py, npy * sizeof(uint64_t)) == 0)
    return last_id_;
  if ((used_ + 1) * 2 > capacity_ && !grow()) return 0;
  const uint32_t id = find_or_add(frames, n, py, npy, is_new);
  if (id && n + npy <= kLastFrames) {
    last_id_ = id;
    last_frames_ = static_cast<uint16_t>(n);
    last_py_frames_ = static_cast<uint16_t>(npy);
    std::memcpy(last_, frames, n * sizeof(uint64_t));
    std::memcpy(last_ + n, py, npy * sizeof(uint64_t));
  } else {
    last_id_ = 0;
  }
  return id;
}

uint32_t StackTable::find_or_add(const uint64_t* frames, size_t n, const uint64_t* py, size_t npy,
                                 bool* is_new) {
  uint64_t h = hash_frames(frames, n, py, npy);
  size_t i = h & (capacity_ - 1);
  while (slots_[i].hash) {
    const Slot& s = slots_[i];
    if (s.hash == h && s.frames == n && s.py_frames == npy) return s.id;
    i = (i + 1) & (capacity_ - 1);
  }
  slots_[i] = Slot{h, next_id_, static_cast<uint16_t>(n), static_cast<uint16_t>(npy)};
  ++used_;
  *is_new = true;
  return next_id_++;
}

void StackTable::reset() {
  if (capacity_ > kFirstCapacity) return release();
  ++epoch_;
  if (slots_) std::memset(slots_, 0, capacity_ * sizeof(Slot));
  used_ = 0;
  next_id_ = 1;
  last_id_ = 0;
}

void StackTable::release() {
  if (slots_) munmap(slots_, capacity_ * sizeof(Slot));
  slots_ = nullptr;
  capacity_ = used_ = 0;
  next_id_ = 1;
  last_id_ = 0;
  ++epoch_;
}

}  // namespace gmemhook

// Stack hashes → ids in a MappedTable (see stack_table.h).
#include "interposer/capture/stack_table.h"

#include <cstring>

namespace gmemhook {

namespace {
uint64_t hash_frames(const uint64_t* f, size_t n, const uint64_t* py, size_t npy) {
  uint64_t h = 0x84222325cbf29ce4ull ^ n;
  for (size_t i = 0; i < n; ++i) h = mix_hash(h, f[i]);
  h = mix_hash(h, npy);
  for (size_t i = 0; i < npy; ++i) h = mix_hash(h, py[i]);
  return h ? h : 1;  // 0 marks an empty slot
}
}  // namespace

uint32_t StackTable::intern(const uint64_t* frames, size_t n, const uint64_t* py, size_t npy,
                            bool* is_new) {
  *is_new = false;
  if (last_id_ && n == last_frames_ && npy == last_py_frames_ &&
      std::memcmp(last_, frames, n * sizeof(uint64_t)) == 0 &&
      std::memcmp(last_ + n, py, npy * sizeof(uint64_t)) == 0)
    return last_id_;
  if (!slots_.reserve_one()) return 0;
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
  const uint64_t h = hash_frames(frames, n, py, npy);
  Slot& at = slots_.find(
      h, [&](const Slot& s) { return s.hash == h && s.frames == n && s.py_frames == npy; });
  if (!at.empty()) return at.id;
  slots_.fill(at, Slot{h, next_id_, static_cast<uint16_t>(n), static_cast<uint16_t>(npy)});
  *is_new = true;
  return next_id_++;
}

void StackTable::reset() {
  slots_.clear();
  next_id_ = 1;
  last_id_ = 0;
  ++epoch_;
}

void StackTable::release() {
  slots_.release();
  next_id_ = 1;
  last_id_ = 0;
  ++epoch_;
}

}  // namespace gmemhook

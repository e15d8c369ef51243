// Content-hashed interning of call stacks across a process's thread files.
#include "analyzer/model/stack_interner.h"

#include <algorithm>

namespace gmemhook::analysis {

namespace {

uint64_t hash_words(std::span<const uint64_t> words, size_t native_count) {
  uint64_t h = 0xcbf29ce484222325ull ^ (words.size() << 20) ^ native_count;
  for (uint64_t w : words) {
    h ^= w;
    h *= 0x100000001b3ull;
    h ^= h >> 29;
  }
  return h;
}

}  // namespace

void StackInterner::add_code(size_t thread_index, const PyCode& code) {
  if (code.id == 0) return;
  std::string key = code.filename;
  for (const std::string* part : {&code.name, &code.qualname, &code.line_table}) {
    key += '\0';
    key += *part;
  }
  key += '\0' + std::to_string(code.first_line) + '\0' + std::to_string(code.py_version);
  auto [it, inserted] =
      codes_.try_emplace(std::move(key), static_cast<uint32_t>(codes_.size() + 1));
  if (thread_index >= codes_by_thread_.size()) codes_by_thread_.resize(thread_index + 1);
  auto& ids = codes_by_thread_[thread_index];
  if (code.id >= ids.size()) ids.resize(code.id + 1, 0);
  ids[code.id] = it->second;
}

uint32_t StackInterner::code_id(size_t thread_index, uint32_t code_id) const {
  if (thread_index >= codes_by_thread_.size()) return 0;
  const auto& ids = codes_by_thread_[thread_index];
  return code_id < ids.size() ? ids[code_id] : 0;
}

void StackInterner::add(size_t thread_index, uint32_t id, std::span<const uint64_t> frames,
                        std::span<const PyFrameRef> python) {
  if (id == 0) return;
  if (thread_index >= by_thread_.size()) by_thread_.resize(thread_index + 1);
  std::vector<uint32_t>& ids = by_thread_[thread_index];
  if (id < ids.size() && ids[id] != 0) return;  // seen in an earlier pass
  if (id >= ids.size()) ids.resize(id + 1, 0);
  scratch_.assign(frames.begin(), frames.end());
  for (const PyFrameRef& p : python)
    scratch_.push_back((uint64_t{code_id(thread_index, p.code_id)} << 33) |
                       (uint64_t{p.offset} << 1) | (p.is_entry ? 1 : 0));
  ids[id] = intern(scratch_, frames.size(), {thread_index, id});
}

uint32_t StackInterner::intern(std::span<const uint64_t> key, size_t native_count, Origin origin) {
  const uint64_t h = hash_words(key, native_count);
  auto [first, last] = by_hash_.equal_range(h);
  for (auto it = first; it != last; ++it) {
    const uint32_t id = it->second;
    std::span<const uint64_t> known(keys_.data() + starts_[id - 1], starts_[id] - starts_[id - 1]);
    if (native_[id - 1] == native_count &&
        std::equal(known.begin(), known.end(), key.begin(), key.end()))
      return id;
  }
  keys_.insert(keys_.end(), key.begin(), key.end());
  starts_.push_back(keys_.size());
  native_.push_back(static_cast<uint32_t>(native_count));
  origins_.push_back(origin);
  const uint32_t id = size();
  by_hash_.emplace(h, id);
  return id;
}

std::span<const uint64_t> StackInterner::frames(uint32_t id) const {
  if (id == 0 || id > size()) return {};
  return std::span<const uint64_t>(keys_).subspan(starts_[id - 1], native_[id - 1]);
}

}  // namespace gmemhook::analysis

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
  threads_ = by_thread_.size();
  std::vector<uint32_t>& ids = by_thread_[thread_index];
  if (id < ids.size() && ids[id] != 0) return;  // seen in an earlier pass
  if (id >= ids.size()) ids.resize(id + 1, 0);
  scratch_.assign(frames.begin(), frames.end());
  for (const PyFrameRef& p : python)
    scratch_.push_back((uint64_t{code_id(thread_index, p.code_id)} << 33) |
                       (uint64_t{p.offset} << 1) | (p.is_entry ? 1 : 0));
  const uint32_t group = epochs_ ? epochs_->group(frames, epoch_) : 0;
  if (group) scratch_.push_back(group);
  ids[id] = intern(scratch_, frames.size(), {thread_index, id}, group);
  if (!epochs_ || epochs_->count() == 1) return;
  if (thread_index >= seen_.size()) seen_.resize(thread_index + 1);
  if (id >= seen_[thread_index].size()) seen_[thread_index].resize(id + 1, 0);
  seen_[thread_index][id] = ids[id];
}

void StackInterner::enter_epoch(size_t e) {
  if (!epochs_ || e == epoch_ || e >= epochs_->count()) return;
  other_epochs_.resize(epochs_->count());
  other_epochs_[epoch_] = std::move(by_thread_);
  by_thread_ = std::move(other_epochs_[e]);
  epoch_ = e;
  // A thread file writes a stack once and refers to it by id after the reload too (the hook's
  // ids are by address), and its Stack record can come before the snapshot's sequence number
  // is passed: every stack seen so far gets its id of this epoch now.
  by_thread_.resize(std::max(by_thread_.size(), seen_.size()));
  threads_ = by_thread_.size();
  for (size_t t = 0; t < seen_.size(); ++t) {
    std::vector<uint32_t>& ids = by_thread_[t];
    ids.resize(std::max(ids.size(), seen_[t].size()), 0);
    for (uint32_t id = 1; id < seen_[t].size(); ++id) {
      const uint32_t known = seen_[t][id];
      if (known == 0 || ids[id] != 0) continue;
      const bool had_group = groups_[known - 1] != 0;
      scratch_.assign(keys_.begin() + starts_[known - 1],
                      keys_.begin() + starts_[known] - (had_group ? 1 : 0));
      const size_t native = native_[known - 1];
      const uint32_t group = epochs_->group(std::span(scratch_).first(native), e);
      if (group) scratch_.push_back(group);
      ids[id] = intern(scratch_, native, {t, id}, group);
    }
  }
}

size_t StackInterner::naming_epoch(uint32_t id) const {
  if (!epochs_ || id == 0 || id > size()) return 0;
  return epochs_->naming_epoch(frames(id), groups_[id - 1]);
}

uint32_t StackInterner::intern(std::span<const uint64_t> key, size_t native_count, Origin origin,
                               uint32_t group) {
  const uint64_t h = hash_words(key, native_count);
  auto [first, last] = by_hash_.equal_range(h);
  for (auto it = first; it != last; ++it) {
    const uint32_t id = it->second;
    std::span<const uint64_t> known(keys_.data() + starts_[id - 1], starts_[id] - starts_[id - 1]);
    if (native_[id - 1] == native_count && groups_[id - 1] == group &&
        std::equal(known.begin(), known.end(), key.begin(), key.end()))
      return id;
  }
  keys_.insert(keys_.end(), key.begin(), key.end());
  starts_.push_back(keys_.size());
  native_.push_back(static_cast<uint32_t>(native_count));
  origins_.push_back(origin);
  groups_.push_back(group);
  const uint32_t id = size();
  by_hash_.emplace(h, id);
  return id;
}

std::span<const uint64_t> StackInterner::frames(uint32_t id) const {
  if (id == 0 || id > size()) return {};
  return std::span<const uint64_t>(keys_).subspan(starts_[id - 1], native_[id - 1]);
}

}  // namespace gmemhook::analysis

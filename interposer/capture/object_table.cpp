// Finding the object that holds a code address, and its unwind tables, for find_frame_rule (see
// frame_rules.h): dl_iterate_phdr over every object, or a remembered ObjectTable while the
// loader's counts say no object came or went.
#include <link.h>

#include <cstddef>

#include "interposer/capture/frame_rules.h"
#include "interposer/capture/unload_watch.h"

namespace gmemhook {

namespace {

struct Lookup {
  uint64_t pc;
  ObjectTable* table;
  bool found = false;  // the object holding pc was seen; `rule` and `why` are its answer
  bool rebuilding = false;
  FrameRule rule{FrameRule::kUnsupported};
  const char* why = "not in any loaded object";
};

// The rule for the lookup's pc from an object's .eh_frame_hdr (null: none).
void rule_from(Lookup& q, const uint8_t* hdr, uint64_t hdr_size) {
  q.found = true;
  q.rule = rule_in_unwind_tables(hdr, hdr_size, q.pc, &q.why);
}

// The remembered object whose span holds pc, or null.
const ObjectTable::Object* object_at(const ObjectTable& t, uint64_t pc) {
  int lo = 0, hi = t.count;  // objects below lo start at or below pc, those from hi above it
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (t.objects[mid].lo <= pc)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0 || pc >= t.objects[lo - 1].hi) return nullptr;
  return &t.objects[lo - 1];
}

constexpr size_t kCountersEnd =
    offsetof(dl_phdr_info, dlpi_subs) + sizeof(static_cast<dl_phdr_info*>(nullptr)->dlpi_subs);

// dl_iterate_phdr's callback, with the loader's lock held. With a table whose counts still
// match, the first object's call answers from it and ends the iteration; otherwise every object
// is looked at (and the table made again from them).
int find_object(dl_phdr_info* info, size_t size, void* data) {
  auto* q = static_cast<Lookup*>(data);
  ObjectTable* t = q->table;
  if (t && !q->rebuilding) {
    const bool counted = size >= kCountersEnd;
    if (counted && t->valid && info->dlpi_adds == t->adds && info->dlpi_subs == t->subs) {
      const ObjectTable::Object* o = object_at(*t, q->pc);
      if (o) rule_from(*q, o->eh_frame_hdr, o->eh_frame_hdr_size);
      return 1;
    }
    q->rebuilding = counted;
    t->valid = false;
    t->count = 0;
    ++t->made;
    if (counted) {
      t->adds = info->dlpi_adds;
      t->subs = info->dlpi_subs;
      // An unload that did not pass through our dlclose (unload_watch.cpp) is seen here.
      note_unload_counter(info->dlpi_subs);
    } else {
      q->table = t = nullptr;  // an old loader without the counts: scan every time
    }
  }
  bool inside = false;
  uint64_t lo = UINT64_MAX, hi = 0;
  const ElfW(Phdr)* eh = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    uint64_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD) {
      if (q->pc >= start && q->pc - start < ph.p_memsz) inside = true;
      if (start < lo) lo = start;
      if (start + ph.p_memsz > hi) hi = start + ph.p_memsz;
    }
    if (ph.p_type == PT_GNU_EH_FRAME) eh = &ph;
  }
  const uint8_t* hdr =
      eh ? reinterpret_cast<const uint8_t*>(info->dlpi_addr + eh->p_vaddr) : nullptr;
  const uint64_t hdr_size = eh ? eh->p_memsz : 0;
  if (inside && !q->found) rule_from(*q, hdr, hdr_size);
  if (!q->rebuilding) return q->found ? 1 : 0;
  if (lo < hi) {
    if (t->count == ObjectTable::kMaxObjects) {
      // Too many: left invalid, every lookup scans rather than misses objects.
      q->rebuilding = false;
      q->table = nullptr;
      return q->found ? 1 : 0;
    }
    // Insertion keeps the table sorted (loaders list objects mostly in address order anyway).
    int k = t->count++;
    for (; k > 0 && t->objects[k - 1].lo > lo; --k) t->objects[k] = t->objects[k - 1];
    t->objects[k] = ObjectTable::Object{lo, hi, hdr, hdr_size};
  }
  return 0;
}

}  // namespace

FrameRule find_frame_rule(uint64_t pc, const char** why, ObjectTable* objects) {
  Lookup q{pc, objects};
  dl_iterate_phdr(find_object, &q);
  // Complete: the next lookup may answer from it.
  if (q.rebuilding) q.table->valid = true;
  if (why) *why = q.why;
  return q.rule;
}

}  // namespace gmemhook

// Module-map snapshots via dl_iterate_phdr. Records are written from inside the iteration
// (glibc holds its loader lock there, so the set can't change mid-snapshot); no allocation.
#include "interposer/log/module_map.h"

#include <elf.h>
#include <link.h>

#include <cstring>

#include "gmemhook/codec.h"
#include "interposer/log/log_file.h"

namespace gmemhook {

namespace {
int read_counters(dl_phdr_info* info, size_t size, void* data) {
  auto* c = static_cast<LoadCounters*>(data);
  if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
    c->adds = info->dlpi_adds;
    c->subs = info->dlpi_subs;
  }
  return 1;  // the counters are global: the first object is enough
}

int count_objects(dl_phdr_info*, size_t, void* data) {
  ++*static_cast<uint64_t*>(data);
  return 0;
}

// Finds the NT_GNU_BUILD_ID note in the object's loaded PT_NOTE segments.
std::string_view build_id_of(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    auto* p = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
    const uint8_t* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
      size_t name_len = (nh->n_namesz + 3u) & ~3u;
      size_t desc_len = (nh->n_descsz + 3u) & ~3u;
      const uint8_t* name = p + sizeof(ElfW(Nhdr));
      const uint8_t* desc = name + name_len;
      if (desc + desc_len > end) break;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0)
        return {reinterpret_cast<const char*>(desc), nh->n_descsz};
      p = desc + desc_len;
    }
  }
  return {};
}

struct SnapshotWriter {
  LogFile* file;
  const char* exe_path;
  uint64_t remaining;  // never write more Module records than ModulesBegin announced
  format::Segment segments[format::kMaxSegments];
};

int write_object(dl_phdr_info* info, size_t, void* data) {
  auto* w = static_cast<SnapshotWriter*>(data);
  if (w->remaining == 0) return 1;
  --w->remaining;
  const char* path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : w->exe_path;
  std::string_view p(path);
  if (p.size() > 4000) p = p.substr(0, 4000);
  std::string_view id = build_id_of(info);
  if (id.size() > 64) id = id.substr(0, 64);
  size_t nsegs = 0;
  for (int i = 0; i < info->dlpi_phnum && nsegs < format::kMaxSegments; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD) w->segments[nsegs++] = {ph.p_vaddr, ph.p_memsz, ph.p_flags};
  }
  w->file->append(format::ModulePayload{p, id, info->dlpi_addr, {w->segments, nsegs}});
  return 0;
}
}  // namespace

LoadCounters current_load_counters() {
  LoadCounters c;
  dl_iterate_phdr(read_counters, &c);
  return c;
}

void write_module_snapshot(LogFile& file, uint64_t seq, const char* exe_path) {
  uint64_t count = 0;
  dl_iterate_phdr(count_objects, &count);
  if (count > format::kMaxModules) count = format::kMaxModules;
  file.append(format::ModulesBeginPayload{seq, count});
  // Off the stack (threads that call CUDA may have small ones); guarded by the caller. constinit:
  // a guarded static would take a lock and pull the C++ runtime into the library.
  constinit static SnapshotWriter w{};
  w.file = &file;
  w.exe_path = exe_path;
  w.remaining = count;
  dl_iterate_phdr(write_object, &w);
}

}  // namespace gmemhook

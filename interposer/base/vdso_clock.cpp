// Finds clock_gettime in the vDSO the kernel maps into every process (see vdso_clock.h). The
// image is an ordinary ELF shared object already in memory: its program headers lead to its
// dynamic section, which names its symbol, string and hash tables.
#include "interposer/base/vdso_clock.h"

#include <elf.h>
#include <link.h>
#include <sys/auxv.h>

#include <cstring>

namespace gmemhook {

ClockRead find_vdso_clock_gettime(uintptr_t image) {
  if (!image) return nullptr;
  const auto* header = reinterpret_cast<const ElfW(Ehdr)*>(image);
  if (std::memcmp(header->e_ident, ELFMAG, SELFMAG) != 0 ||
      header->e_ident[EI_CLASS] != (sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32) ||
      header->e_type != ET_DYN)
    return nullptr;
  // The image is mapped from its start, so the first PT_LOAD tells where its addresses point.
  const auto* phdrs = reinterpret_cast<const ElfW(Phdr)*>(image + header->e_phoff);
  const ElfW(Dyn)* dynamic = nullptr;
  uintptr_t bias = 0;
  bool loaded = false;
  for (unsigned i = 0; i < header->e_phnum; ++i) {
    if (phdrs[i].p_type == PT_LOAD && !loaded) {
      bias = image + phdrs[i].p_offset - phdrs[i].p_vaddr;
      loaded = true;
    } else if (phdrs[i].p_type == PT_DYNAMIC) {
      dynamic = reinterpret_cast<const ElfW(Dyn)*>(image + phdrs[i].p_offset);
    }
  }
  if (!loaded || !dynamic) return nullptr;
  const ElfW(Sym)* symbols = nullptr;
  const char* names = nullptr;
  const Elf32_Word* hash = nullptr;
  for (const ElfW(Dyn)* d = dynamic; d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_SYMTAB) symbols = reinterpret_cast<const ElfW(Sym)*>(bias + d->d_un.d_ptr);
    if (d->d_tag == DT_STRTAB) names = reinterpret_cast<const char*>(bias + d->d_un.d_ptr);
    if (d->d_tag == DT_HASH) hash = reinterpret_cast<const Elf32_Word*>(bias + d->d_un.d_ptr);
  }
  // DT_HASH's second word is the number of symbols; x86's vDSO is linked with both hash styles.
  if (!symbols || !names || !hash) return nullptr;
  for (Elf32_Word i = 0; i < hash[1]; ++i) {
    const ElfW(Sym)& s = symbols[i];
    if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || s.st_shndx == SHN_UNDEF) continue;
    if (std::strcmp(names + s.st_name, "__vdso_clock_gettime") == 0)
      return reinterpret_cast<ClockRead>(bias + s.st_value);
  }
  return nullptr;
}

ClockRead find_vdso_clock_gettime() { return find_vdso_clock_gettime(getauxval(AT_SYSINFO_EHDR)); }

}  // namespace gmemhook

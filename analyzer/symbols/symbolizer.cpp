// Symbolizer: one offline libdwfl session per module, reported at the module's recorded load bias
// so the log's absolute addresses are looked up unchanged.
#include "analyzer/symbols/symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string_view>

namespace gmemhook::analysis {

namespace {

// Modules are reported by file name, so find_elf is only a formality; find_debuginfo finds
// /usr/lib/debug/.build-id/xx/yyyy.debug and .gnu_debuglink files (checked against the build-id).
// libdwfl keeps a pointer to this for the session's lifetime, hence static storage.
const Dwfl_Callbacks kOfflineCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = nullptr,  // the default ":.debug:/usr/lib/debug"
};

std::string demangle(const char* name) {
  if (std::strncmp(name, "_Z", 2) == 0) {
    int status = 0;
    char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    std::string result = status == 0 && out ? out : name;
    std::free(out);
    return result;
  }
  return name;
}

std::string hex(std::string_view bytes) {
  if (bytes.empty()) return "(none)";
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  for (unsigned char b : bytes) {
    s += kDigits[b >> 4];
    s += kDigits[b & 15];
  }
  return s;
}

// Objects with no file behind them: the kernel's vDSO, which dl_iterate_phdr names without a
// directory, or a module whose name was not recorded.
bool is_pseudo_module(const std::string& path) {
  return path.empty() || path.starts_with("linux-vdso") || path.starts_with("linux-gate") ||
         path.front() == '[';
}

bool is_function(Dwarf_Die* die) {
  int tag = dwarf_tag(die);
  return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
}

// Reports name a function as written in the source: GCC's clones (foo.constprop.0, foo.cold)
// would otherwise split one function's allocations over several names.
std::string without_clone_suffixes(std::string name) {
  for (size_t pos; name.ends_with(']') && (pos = name.rfind(" [clone .")) != std::string::npos &&
                   name.find(']', pos) == name.size() - 1;)
    name.resize(pos);
  return name;
}

std::string demangled_symbol(const char* name) { return without_clone_suffixes(demangle(name)); }

// The qualified, demangled name. Inlined instances and out-of-line copies carry no name of
// their own: dwarf_attr_integrate follows DW_AT_abstract_origin / DW_AT_specification to it.
std::optional<std::string> function_name(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name})
    if (const char* s = dwarf_formstring(dwarf_attr_integrate(die, at, &attr))) return demangle(s);
  // GCC gives functions with internal linkage (static, anonymous namespace) no linkage name:
  // qualify the plain name with the namespaces and classes around its declaration.
  Dwarf_Die decl = *die;
  for (int hops = 0; hops < 8; ++hops) {
    Dwarf_Die next;
    if (!dwarf_formref_die(dwarf_attr(&decl, DW_AT_abstract_origin, &attr), &next) &&
        !dwarf_formref_die(dwarf_attr(&decl, DW_AT_specification, &attr), &next))
      break;
    decl = next;
  }
  const char* name = dwarf_diename(&decl);
  if (!name) return std::nullopt;
  std::string qualified = name;
  Dwarf_Die* scopes = nullptr;
  int n = dwarf_getscopes_die(&decl, &scopes);
  for (int i = 1; i < n; ++i) {
    int tag = dwarf_tag(&scopes[i]);
    if (tag != DW_TAG_namespace && tag != DW_TAG_class_type && tag != DW_TAG_structure_type &&
        tag != DW_TAG_union_type)
      continue;
    const char* scope = dwarf_diename(&scopes[i]);
    qualified = (scope ? scope : "(anonymous namespace)") + ("::" + qualified);
  }
  std::free(scopes);
  return qualified;
}

std::string join(const char* dir, const char* file) {
  if (file[0] == '/' || !dir || !*dir) return file;
  return std::string(dir) + "/" + file;
}

// The function DIEs whose code contains `pc` (a module address), innermost first: the inlined
// instances, then the subprogram. Empty when no CU covers pc.
std::vector<Dwarf_Die> function_chain(Dwfl_Module* mod, Dwarf_Addr pc) {
  std::vector<Dwarf_Die> chain;
  Dwarf_Addr bias = 0;
  Dwarf_Die* cu = dwfl_module_addrdie(mod, pc, &bias);
  if (!cu) return chain;
  Dwarf_Die* scopes = nullptr;
  int n = dwarf_getscopes(cu, pc - bias, &scopes);
  for (int i = 0; i < n; ++i) {
    if (!is_function(&scopes[i])) continue;
    // Past an inlined instance dwarf_getscopes continues with the scopes around its *abstract*
    // definition, which loses the callers; the DIE's own parents are the concrete call chain.
    Dwarf_Die* parents = nullptr;
    int m = dwarf_getscopes_die(&scopes[i], &parents);
    for (int j = 0; j < m; ++j)
      if (is_function(&parents[j])) chain.push_back(parents[j]);
    std::free(parents);
    break;
  }
  std::free(scopes);
  return chain;
}

// Where `inlined` was called from, written into the frame of the function it was inlined into.
void set_call_site(Dwarf_Die* inlined, Frame& caller) {
  Dwarf_Attribute attr;
  Dwarf_Word value = 0;
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &attr), &value) == 0 && value > 0)
    caller.line = static_cast<uint32_t>(value);
  Dwarf_Die cu;
  Dwarf_Files* files = nullptr;
  size_t count = 0;
  // DW_AT_call_file indexes the file table of the CU's line program.
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr), &value) == 0 &&
      dwarf_diecu(inlined, &cu, nullptr, nullptr) && dwarf_getsrcfiles(&cu, &files, &count) == 0 &&
      value < count) {
    if (const char* file = dwarf_filesrc(files, value, nullptr, nullptr))
      caller.file = join(dwarf_formstring(dwarf_attr(&cu, DW_AT_comp_dir, &attr)), file);
  }
}

}  // namespace

// mod is null when the module cannot be used (no file, missing, changed since the run).
namespace {
// elfutils does not promise that separate Dwfl sessions may be used from several threads at
// once, and reports analyse processes on several threads (-j): one libdw call at a
// time in the whole program. Lookups are cached per address, so this is rarely contended.
std::mutex& libdw_mutex() {
  static std::mutex m;
  return m;
}
}  // namespace

struct Symbolizer::Binary {
  Dwfl* dwfl = nullptr;
  Dwfl_Module* mod = nullptr;
  ~Binary() {
    if (!dwfl) return;
    std::lock_guard lock(libdw_mutex());
    dwfl_end(dwfl);
  }
};

Symbolizer::Symbolizer(std::vector<Module> modules) : modules_(std::move(modules)) {
  binaries_.resize(modules_.size());
  for (size_t i = 0; i < modules_.size(); ++i)
    for (const Segment& s : modules_[i].segments)
      if (s.memsz > 0)
        ranges_.push_back(
            {modules_[i].load_bias + s.vaddr, modules_[i].load_bias + s.vaddr + s.memsz, i});
  std::sort(ranges_.begin(), ranges_.end(),
            [](const Range& a, const Range& b) { return a.start < b.start; });
}

Symbolizer::~Symbolizer() = default;

bool Symbolizer::is_recorder_module(const std::string& path) {
  size_t slash = path.rfind('/');
  return std::string_view(path).substr(slash == std::string::npos ? 0 : slash + 1) ==
         "libgmemhook.so";
}

const std::vector<Frame>& Symbolizer::symbolize(uint64_t return_address) {
  auto it = cache_.find(return_address);
  if (it != cache_.end()) return it->second;
  std::vector<Frame> frames;
  {
    std::lock_guard lock(libdw_mutex());
    frames = lookup(return_address);
  }
  return cache_.emplace(return_address, std::move(frames)).first->second;
}

const Module* Symbolizer::module_at(uint64_t address, size_t* index) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), address,
                             [](uint64_t a, const Range& r) { return a < r.start; });
  if (it == ranges_.begin()) return nullptr;
  --it;
  if (address >= it->end) return nullptr;
  *index = it->module;
  return &modules_[it->module];
}

Symbolizer::Binary& Symbolizer::binary(size_t index) {
  if (binaries_[index]) return *binaries_[index];
  binaries_[index] = std::make_unique<Binary>();
  Binary& b = *binaries_[index];
  const Module& m = modules_[index];
  if (is_pseudo_module(m.path)) return b;
  b.dwfl = dwfl_begin(&kOfflineCallbacks);
  if (!b.dwfl) {
    warnings_.push_back(m.path + ": cannot start libdwfl (" + dwfl_errmsg(-1) +
                        "); its frames show as module+offset");
    return b;
  }
  dwfl_report_begin(b.dwfl);
  // add_p_vaddr: the base is the load bias (dlpi_addr), as recorded, not the first segment's
  // address; the two differ for prelinked objects.
  Dwfl_Module* mod = dwfl_report_elf(b.dwfl, m.path.c_str(), m.path.c_str(), -1, m.load_bias, true);
  std::string why = mod ? "" : dwfl_errmsg(-1);
  dwfl_report_end(b.dwfl, nullptr, nullptr);
  if (!mod) {
    warnings_.push_back(m.path + ": cannot open (" + why + "); its frames show as module+offset");
    return b;
  }
  const unsigned char* bits = nullptr;
  GElf_Addr id_vaddr = 0;
  int len = dwfl_module_build_id(mod, &bits, &id_vaddr);
  std::string on_disk = len > 0 ? std::string(reinterpret_cast<const char*>(bits), len) : "";
  // A rebuilt or upgraded binary would name the wrong functions: better no name than a wrong one.
  if (on_disk != m.build_id) {
    warnings_.push_back(m.path + ": changed since the run (build-id " + hex(m.build_id) +
                        " recorded, " + hex(on_disk) +
                        " on disk); its frames show as module+offset");
    return b;
  }
  b.mod = mod;
  Dwarf_Addr bias = 0;
  if (!dwfl_module_getdwarf(mod, &bias)) {
    warnings_.push_back(no_debug_info_warning(m.path));
    no_debug_info_.push_back(m.path);
  }
  return b;
}

std::string Symbolizer::no_debug_info_warning(const std::string& path) {
  return path +
         ": no debug info (install its debug symbols); its frames show function names without "
         "file:line";
}

std::vector<Frame> Symbolizer::lookup(uint64_t return_address) {
  Frame unknown;
  unknown.address = return_address;
  unknown.module_offset = return_address;
  size_t index = 0;
  // Address 0 is a truncated stack's filler, not a return address.
  const Module* m = return_address ? module_at(return_address - 1, &index) : nullptr;
  if (!m) return {unknown};
  unknown.module = m->path;
  unknown.module_offset = return_address - m->load_bias;
  Dwfl_Module* mod = binary(index).mod;
  if (!mod) return {unknown};

  // The call instruction ends just before the return address; the byte after it may belong to
  // the next line, or to another function when the call was the last (noreturn) instruction.
  const Dwarf_Addr pc = return_address - 1;
  std::vector<Dwarf_Die> chain = function_chain(mod, pc);
  std::vector<Frame> frames(std::max<size_t>(chain.size(), 1), unknown);
  for (size_t i = 0; i < chain.size(); ++i) {
    frames[i].function = function_name(&chain[i]);
    frames[i].inlined = dwarf_tag(&chain[i]) == DW_TAG_inlined_subroutine;
    if (i > 0) set_call_site(&chain[i - 1], frames[i]);
  }
  // The symbol table names the real function even without DWARF, and with its parameter types
  // where DWARF has no linkage name (internal linkage).
  if (const char* sym = dwfl_module_addrname(mod, pc); sym && !frames.back().inlined)
    frames.back().function = demangled_symbol(sym);
  if (Dwfl_Line* line = dwfl_module_getsrc(mod, pc)) {
    int lineno = 0;
    if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
      frames.front().file = join(dwfl_line_comp_dir(line), file);
      if (lineno > 0) frames.front().line = static_cast<uint32_t>(lineno);
    }
  }
  return frames;
}

}  // namespace gmemhook::analysis

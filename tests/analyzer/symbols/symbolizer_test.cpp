// The symbolizer on real code: return addresses captured in this process (fixture libraries built
// -g -O2 and without debug info) against this process's module map, read as the recorder reads it.
#include "analyzer/symbols/symbolizer.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>
#include <sys/auxv.h>

#include <cstring>
#include <filesystem>

#include "symbolizer_fixture/fixture.h"

namespace gmemhook::analysis {
namespace {

std::string build_id_of(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    auto* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const char* name = p + sizeof(ElfW(Nhdr));
      const char* desc = name + ((nh->n_namesz + 3) & ~3u);
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0)
        return std::string(desc, nh->n_descsz);
      p = desc + ((nh->n_descsz + 3) & ~3u);
    }
  }
  return "";
}

int add_module(dl_phdr_info* info, size_t, void* data) {
  Module m;
  // The main program has no name here; the recorder writes /proc/self/exe's target instead.
  m.path = info->dlpi_name && *info->dlpi_name
               ? info->dlpi_name
               : std::filesystem::read_symlink("/proc/self/exe").string();
  m.build_id = build_id_of(info);
  m.load_bias = info->dlpi_addr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD) m.segments.push_back({ph.p_vaddr, ph.p_memsz, ph.p_flags});
  }
  static_cast<std::vector<Module>*>(data)->push_back(std::move(m));
  return 0;
}

std::vector<Module> live_modules() {
  std::vector<Module> modules;
  dl_iterate_phdr(add_module, &modules);
  return modules;
}

Module& module_named(std::vector<Module>& modules, const std::string& file_name) {
  for (Module& m : modules)
    if (std::filesystem::path(m.path).filename() == file_name) return m;
  throw std::runtime_error("no loaded module " + file_name);
}

std::string base_name(const std::optional<std::string>& path) {
  return path ? std::filesystem::path(*path).filename().string() : "(none)";
}

std::optional<uint32_t> line(int n) { return static_cast<uint32_t>(n); }

std::string all(const std::vector<std::string>& warnings) {
  std::string s;
  for (const auto& w : warnings) s += w + "\n";
  return s;
}

constexpr const char* kFixture = "libsymbolizer_fixture.so";

// Addresses in three different fixture functions.
std::vector<uint64_t> fixture_return_addresses() {
  std::vector<uint64_t> out;
  fixture_plain(1);
  out.push_back(fixture_return_address);
  fixture_with_inline(1);
  out.push_back(fixture_return_address);
  gmh_fixture::scaled(1);
  out.push_back(fixture_return_address);
  return out;
}

__attribute__((noinline)) int caller_in_test_binary(int x) {
  fixture_capture();
  asm volatile("" ::: "memory");  // not a tail call
  return x + 2;
}

TEST(Symbolizer, NamesAPlainFunctionWithFileAndLine) {
  fixture_plain(1);
  const uint64_t ra = fixture_return_address;
  auto modules = live_modules();
  const Module lib = module_named(modules, kFixture);
  Symbolizer s(modules);
  const std::vector<Frame>& frames = s.symbolize(ra);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "fixture_plain");
  EXPECT_EQ(base_name(frames[0].file), "fixture.cpp");
  EXPECT_TRUE(std::filesystem::path(*frames[0].file).is_absolute()) << *frames[0].file;
  EXPECT_EQ(frames[0].line, line(fixture_lines.plain_call));
  EXPECT_FALSE(frames[0].inlined);
  EXPECT_FALSE(frames[0].python);
  EXPECT_EQ(frames[0].module, lib.path);
  EXPECT_EQ(frames[0].address, ra);
  EXPECT_EQ(frames[0].module_offset, ra - lib.load_bias);
  EXPECT_TRUE(s.warnings().empty()) << all(s.warnings());
}

TEST(Symbolizer, InlinedCalleesComeFirstThenEachCallerAtItsCallSite) {
  fixture_with_inline(1);
  Symbolizer s(live_modules());
  const std::vector<Frame>& frames = s.symbolize(fixture_return_address);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].function, "gmh_fixture::(anonymous namespace)::capture_inlined");
  EXPECT_EQ(frames[0].line, line(fixture_lines.inlined_call));
  EXPECT_TRUE(frames[0].inlined);
  EXPECT_EQ(frames[1].function, "gmh_fixture::triple(int)");
  EXPECT_EQ(frames[1].line, line(fixture_lines.nested_site));
  EXPECT_TRUE(frames[1].inlined);
  EXPECT_EQ(frames[2].function, "fixture_with_inline");
  EXPECT_EQ(frames[2].line, line(fixture_lines.inline_site));
  EXPECT_FALSE(frames[2].inlined);
  for (const Frame& f : frames) {
    EXPECT_EQ(base_name(f.file), "fixture.cpp");
    EXPECT_EQ(f.file, frames[0].file);
    EXPECT_EQ(f.address, frames[0].address);
    EXPECT_EQ(f.module_offset, frames[0].module_offset);
  }
}

TEST(Symbolizer, DemanglesNamespacedFunctions) {
  gmh_fixture::scaled(1);
  Symbolizer s(live_modules());
  const std::vector<Frame>& frames = s.symbolize(fixture_return_address);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "gmh_fixture::scaled(int)");
  EXPECT_EQ(frames[0].line, line(fixture_lines.namespaced_call));
}

TEST(Symbolizer, NamesFunctionsOfTheMainProgram) {
  caller_in_test_binary(1);
  auto modules = live_modules();
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  Symbolizer s(modules);
  const std::vector<Frame>& frames = s.symbolize(fixture_return_address);
  ASSERT_EQ(frames.size(), 1u);
  // GCC clones this function ("[clone .constprop.0] [clone .isra.0]"); reports name the function
  // of the source.
  EXPECT_EQ(frames[0].function,
            "gmemhook::analysis::(anonymous namespace)::caller_in_test_binary(int)");
  EXPECT_EQ(base_name(frames[0].file), "symbolizer_test.cpp");
  EXPECT_EQ(frames[0].module, exe);
}

TEST(Symbolizer, RepeatedAddressesAreLookedUpOnce) {
  fixture_plain(1);
  Symbolizer s(live_modules());
  const std::vector<Frame>& first = s.symbolize(fixture_return_address);
  const std::vector<Frame>& again = s.symbolize(fixture_return_address);
  EXPECT_EQ(&first, &again);
}

TEST(Symbolizer, ChangedBinaryGivesModulePlusOffsetAndOneWarning) {
  const auto addresses = fixture_return_addresses();
  auto modules = live_modules();
  Module& lib = module_named(modules, kFixture);
  ASSERT_FALSE(lib.build_id.empty()) << "the fixture must be linked with --build-id";
  lib.build_id[0] = static_cast<char>(lib.build_id[0] ^ 0xff);
  const Module recorded = lib;
  Symbolizer s(modules);
  for (int round = 0; round < 3; ++round) {
    for (uint64_t ra : addresses) {
      const std::vector<Frame>& frames = s.symbolize(ra);
      ASSERT_EQ(frames.size(), 1u);
      EXPECT_EQ(frames[0].function, std::nullopt);
      EXPECT_EQ(frames[0].file, std::nullopt);
      EXPECT_EQ(frames[0].module, recorded.path);
      EXPECT_EQ(frames[0].module_offset, ra - recorded.load_bias);
    }
    s.symbolize(addresses[0] + 5);  // a new address in the same module
  }
  ASSERT_EQ(s.warnings().size(), 1u) << all(s.warnings());
  EXPECT_NE(s.warnings()[0].find(recorded.path), std::string::npos) << s.warnings()[0];
  EXPECT_NE(s.warnings()[0].find("changed"), std::string::npos) << s.warnings()[0];
}

TEST(Symbolizer, MissingBinaryGivesModulePlusOffsetAndOneWarning) {
  const auto addresses = fixture_return_addresses();
  auto modules = live_modules();
  Module& lib = module_named(modules, kFixture);
  lib.path = "/nonexistent/gmemhook-test/" + std::string(kFixture);
  const Module recorded = lib;
  Symbolizer s(modules);
  for (int round = 0; round < 3; ++round) {
    for (uint64_t ra : addresses) {
      const std::vector<Frame>& frames = s.symbolize(ra);
      ASSERT_EQ(frames.size(), 1u);
      EXPECT_EQ(frames[0].function, std::nullopt);
      EXPECT_EQ(frames[0].module, recorded.path);
      EXPECT_EQ(frames[0].module_offset, ra - recorded.load_bias);
    }
  }
  ASSERT_EQ(s.warnings().size(), 1u) << all(s.warnings());
  EXPECT_NE(s.warnings()[0].find(recorded.path), std::string::npos) << s.warnings()[0];
}

TEST(Symbolizer, WithoutDebugInfoNamesFromTheSymbolTableAndWarnsOnce) {
  fixture_nodebug(1);
  const uint64_t ra = fixture_return_address;
  Symbolizer s(live_modules());
  for (uint64_t address : {ra, ra + 1, reinterpret_cast<uint64_t>(&fixture_nodebug) + 1}) {
    const std::vector<Frame>& frames = s.symbolize(address);
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].function, "fixture_nodebug");
    EXPECT_EQ(frames[0].file, std::nullopt);
    EXPECT_EQ(frames[0].line, std::nullopt);
  }
  ASSERT_EQ(s.warnings().size(), 1u) << all(s.warnings());
  EXPECT_NE(s.warnings()[0].find("libsymbolizer_fixture_nodebug.so"), std::string::npos);
  EXPECT_NE(s.warnings()[0].find("no debug info"), std::string::npos);
  // Named apart too, so a report says every such module in one line after it.
  ASSERT_EQ(s.modules_without_debug_info().size(), 1u);
  EXPECT_NE(s.modules_without_debug_info()[0].find("libsymbolizer_fixture_nodebug.so"),
            std::string::npos);
  EXPECT_EQ(s.warnings()[0], Symbolizer::no_debug_info_warning(s.modules_without_debug_info()[0]));
}

TEST(Symbolizer, AddressOutsideEveryModuleIsUnknown) {
  Symbolizer s(live_modules());
  for (uint64_t address : {uint64_t{0}, uint64_t{0x10}}) {
    const std::vector<Frame>& frames = s.symbolize(address);
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].function, std::nullopt);
    EXPECT_EQ(frames[0].module, "");
    EXPECT_EQ(frames[0].address, address);
  }
  EXPECT_TRUE(s.warnings().empty()) << all(s.warnings());
}

TEST(Symbolizer, VdsoAndNamelessModulesAreUnknownWithoutWarnings) {
  auto modules = live_modules();
  const uint64_t vdso = getauxval(AT_SYSINFO_EHDR);
  if (vdso == 0) GTEST_SKIP() << "no vDSO in this process";
  const uint64_t vdso_bias = module_named(modules, "linux-vdso.so.1").load_bias;
  modules.push_back({"", "", 0x7000'0000'0000, {{0, 0x1000, PF_X | PF_R}}});
  Symbolizer s(modules);
  const std::vector<Frame>& in_vdso = s.symbolize(vdso + 0x10);
  ASSERT_EQ(in_vdso.size(), 1u);
  EXPECT_EQ(in_vdso[0].function, std::nullopt);
  EXPECT_EQ(in_vdso[0].module, "linux-vdso.so.1");
  EXPECT_EQ(in_vdso[0].module_offset, vdso + 0x10 - vdso_bias);
  const std::vector<Frame>& nameless = s.symbolize(0x7000'0000'0010);
  ASSERT_EQ(nameless.size(), 1u);
  EXPECT_EQ(nameless[0].function, std::nullopt);
  EXPECT_EQ(nameless[0].module_offset, 0x10u);
  EXPECT_TRUE(s.warnings().empty()) << all(s.warnings());
}

TEST(Symbolizer, RecognizesTheRecorderLibrary) {
  EXPECT_TRUE(Symbolizer::is_recorder_module("/opt/gmemhook/lib/libgmemhook.so"));
  EXPECT_TRUE(Symbolizer::is_recorder_module("libgmemhook.so"));
  EXPECT_FALSE(Symbolizer::is_recorder_module("/opt/lib/libgmemhook.so.bak"));
  EXPECT_FALSE(Symbolizer::is_recorder_module("/opt/libgmemhook.so/libc.so.6"));
  EXPECT_FALSE(Symbolizer::is_recorder_module(""));
}

}  // namespace
}  // namespace gmemhook::analysis

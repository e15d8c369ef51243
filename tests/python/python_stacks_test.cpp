// Python frames end to end: python_stacks.py calls the simulated CUDA runtime through ctypes under
// libgmemhook.so, once per CPython 3.10–3.13 found at configure time, and prints what the
// interpreter itself reports for each call (qualname, f_lineno, filename). The recorder must
// reconstruct exactly that from raw interpreter memory, and its is_entry marks must match the
// native _PyEval_EvalFrameDefault frames of the same stack.
#include <elf.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "analyzer/log/event_info.h"
#include "analyzer/log/reader.h"
#include "analyzer/symbols/python_stack.h"
#include "harness.h"

namespace gmemhook::test {
namespace {

namespace fs = std::filesystem;
using analysis::PyFrameRef;
using analysis::ThreadFileReader;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<std::string> interpreters() { return split(GMEMHOOK_TEST_PYTHONS, ','); }

// What one allocation's Python frames must read: "function|line|filename", innermost first.
std::vector<std::vector<std::string>> expected_stacks(const std::string& out) {
  std::vector<std::vector<std::string>> stacks;
  for (const std::string& line : split(out, '\n')) {
    auto fields = split(line, '\t');
    if (fields.empty() || fields[0] != "EXPECT") continue;
    stacks.emplace_back(fields.begin() + 1, fields.end());
  }
  return stacks;
}

bool is_ascii(const std::string& s) {
  for (unsigned char c : s)
    if (c >= 0x80) return false;
  return true;
}

// Recorded and expected frame agree; a non-ASCII name may be recorded as "<non-ascii>" (the
// recorder never converts strings, it only copies an encoding the interpreter already has).
bool same_frame(const std::string& got, const std::string& want) {
  if (got == want) return true;
  auto g = split(got, '|'), w = split(want, '|');
  if (g.size() != 3 || w.size() != 3) return false;
  for (int i = 0; i < 3; ++i)
    if (g[i] != w[i] && !(g[i] == "<non-ascii>" && !is_ascii(w[i]))) return false;
  return true;
}

std::string describe(const analysis::Frame& f) {
  return f.function.value_or("?") + "|" + (f.line ? std::to_string(*f.line) : "?") + "|" +
         f.file.value_or("?");
}

struct Allocation {
  const ThreadFileReader* thread;
  uint32_t stack_id;
  std::vector<uint64_t> native;
  std::vector<PyFrameRef> python;
};

struct TracedRun {
  RunResult result;
  fs::path dir;
  std::optional<analysis::ProcessReader> reader;
  std::vector<Allocation> allocations;  // cudaMalloc events in sequence order
};

TracedRun trace(const std::string& python, std::map<std::string, std::string> extra_env = {}) {
  TracedRun t;
  fs::path out = temp_dir("python");
  auto env = traced_env(out);
  env["GMEMHOOK_DEPTH"] = "256";  // whole native stacks: the entry check counts every loop call
  env["GMEMHOOK_QUIET"] = "1";
  env["PYTHONPATH"] = "";
  env["PYTHONHOME"] = "";
  for (auto& [k, v] : extra_env) env[k] = v;
  t.result =
      run({python, GMEMHOOK_TEST_SCRIPT, GMEMHOOK_TEST_FAKECUDA_DIR "/libcudart.so.13"}, env);
  auto dirs = process_dirs(out);
  if (dirs.size() != 1) {
    ADD_FAILURE() << dirs.size() << " process directories in " << out;
    return t;
  }
  t.dir = dirs[0];
  t.reader.emplace(analysis::ProcessReader::open(t.dir));
  t.reader->for_each_event([&](const format::Event& ev, const ThreadFileReader& thread) {
    if (analysis::api_name(ev.api) != "cudaMalloc") return;
    auto native = thread.stack(ev.stack_id);
    auto py = thread.python_frames(ev.stack_id);
    t.allocations.push_back(
        {&thread, ev.stack_id, {native.begin(), native.end()}, {py.begin(), py.end()}});
  });
  return t;
}

// --- The interpreter loop's address range, from the ELF symbol tables of the module ---------

struct Range {
  uint64_t lo = 0, hi = 0;
  bool contains(uint64_t a) const { return a >= lo && a < hi; }
};

std::optional<Range> elf_symbol(const std::string& path, const std::string& name) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < sizeof(Elf64_Ehdr)) return std::nullopt;
  auto* eh = reinterpret_cast<const Elf64_Ehdr*>(bytes.data());
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
      eh->e_shoff + uint64_t{eh->e_shnum} * sizeof(Elf64_Shdr) > bytes.size())
    return std::nullopt;
  auto* sh = reinterpret_cast<const Elf64_Shdr*>(bytes.data() + eh->e_shoff);
  for (int i = 0; i < eh->e_shnum; ++i) {
    if (sh[i].sh_type != SHT_DYNSYM && sh[i].sh_type != SHT_SYMTAB) continue;
    if (sh[i].sh_link >= eh->e_shnum) continue;
    const Elf64_Shdr& strtab = sh[sh[i].sh_link];
    if (sh[i].sh_offset + sh[i].sh_size > bytes.size() ||
        strtab.sh_offset + strtab.sh_size > bytes.size())
      continue;
    auto* syms = reinterpret_cast<const Elf64_Sym*>(bytes.data() + sh[i].sh_offset);
    for (size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); ++k) {
      if (syms[k].st_name >= strtab.sh_size || syms[k].st_size == 0) continue;
      if (name == bytes.data() + strtab.sh_offset + syms[k].st_name)
        return Range{syms[k].st_value, syms[k].st_value + syms[k].st_size};
    }
  }
  return std::nullopt;
}

// The runtime range of _PyEval_EvalFrameDefault in the traced process.
std::optional<Range> interpreter_loop(const analysis::ProcessReader& r) {
  if (r.module_snapshots().empty()) return std::nullopt;
  for (const analysis::Module& m : r.module_snapshots().back().modules) {
    std::string base = fs::path(m.path).filename().string();
    if (base.rfind("libpython", 0) != 0 && base.rfind("python", 0) != 0) continue;
    if (auto s = elf_symbol(m.path, "_PyEval_EvalFrameDefault"))
      return Range{s->lo + m.load_bias, s->hi + m.load_bias};
  }
  return std::nullopt;
}

// --- Tests ------------------------------------------------------------------------------------

class PythonStacks : public ::testing::TestWithParam<std::string> {};

TEST_P(PythonStacks, FramesFilesAndLinesMatchWhatTheInterpreterReports) {
  TracedRun t = trace(GetParam());
  ASSERT_TRUE(t.result.exited(0)) << t.result.err;
  auto expected = expected_stacks(t.result.out);
  ASSERT_GT(expected.size(), 60u);
  ASSERT_EQ(t.allocations.size(), expected.size()) << "cudaMalloc events vs calls made";
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("allocation " + std::to_string(i) + ", innermost " + expected[i][0]);
    const Allocation& a = t.allocations[i];
    EXPECT_FALSE(a.native.empty());
    ASSERT_EQ(a.python.size(), expected[i].size());
    for (size_t k = 0; k < a.python.size(); ++k) {
      std::string got = describe(analysis::python_frame(a.python[k], *a.thread));
      EXPECT_TRUE(same_frame(got, expected[i][k]))
          << "frame " << k << ": recorded " << got << ", interpreter says " << expected[i][k];
    }
    // The outermost frame (<module> or a thread's bootstrap) always starts a loop call.
    EXPECT_TRUE(a.python.back().is_entry);
  }
  // Stacks are interned with their Python part: 50 calls from one line share a handful of stacks
  // (the interpreter's own specialization may change the native path once or twice).
  std::set<uint32_t> loop_stacks;
  for (size_t i = t.allocations.size() - 50; i < t.allocations.size(); ++i)
    loop_stacks.insert(t.allocations[i].stack_id);
  EXPECT_LE(loop_stacks.size(), 5u);
  for (size_t i = 0; i < t.reader->thread_count(); ++i)
    EXPECT_GT(t.reader->thread(i).py_code_count(), 0u) << "each thread file describes its code";
  for (const auto& n : t.reader->notes())
    EXPECT_EQ(n.text.find("python"), std::string::npos) << n.text;
}

// How many of a native stack's frames are calls of the interpreter loop, and whether its last
// (outermost) frame is one.
struct LoopFrames {
  size_t count = 0;
  bool last = false;
};
LoopFrames loop_frames(const std::vector<uint64_t>& native, const Range& loop) {
  LoopFrames l;
  for (uint64_t pc : native) l.count += loop.contains(pc - 1);
  l.last = !native.empty() && loop.contains(native.back() - 1);
  return l;
}

// With the whole native walk (GMEMHOOK_FULL_NATIVE_STACKS=1) every loop call is in the stack.
TEST_P(PythonStacks, EntryFramesMatchTheNativeInterpreterLoopCalls) {
  TracedRun t = trace(GetParam(), {{"GMEMHOOK_FULL_NATIVE_STACKS", "1"}});
  ASSERT_TRUE(t.result.exited(0)) << t.result.err;
  auto loop = interpreter_loop(*t.reader);
  if (!loop) GTEST_SKIP() << "no _PyEval_EvalFrameDefault symbol in the interpreter's objects";
  ASSERT_FALSE(t.allocations.empty());
  size_t past_loop = 0;  // stacks that go on past their innermost loop call
  for (const Allocation& a : t.allocations) {
    LoopFrames l = loop_frames(a.native, *loop);
    past_loop += l.count >= 1 && !l.last;
  }
  EXPECT_EQ(past_loop, t.allocations.size()) << "the setting keeps the interpreter's callers";
  for (size_t i = 0; i < t.allocations.size(); ++i) {
    const Allocation& a = t.allocations[i];
    SCOPED_TRACE("allocation " + std::to_string(i));
    // A stack cut at the depth limit may miss outer loop calls.
    ASSERT_LT(a.native.size(), 256u);
    std::vector<analysis::Frame> native;
    size_t loops = 0;
    for (uint64_t pc : a.native) {
      analysis::Frame f;
      f.address = pc;
      if (loop->contains(pc - 1)) {
        f.function = "_PyEval_EvalFrameDefault";
        ++loops;
      }
      native.push_back(f);
    }
    size_t entries = 0;
    for (const PyFrameRef& f : a.python) entries += f.is_entry;
    EXPECT_EQ(entries, loops) << "is_entry marks vs native interpreter-loop frames";

    // Merged, every loop frame gives way to its group: all Python frames, in order, none left.
    auto merged = analysis::merge_python_frames(native, a.python, *a.thread);
    EXPECT_EQ(merged.size(), a.native.size() - loops + a.python.size());
    size_t k = 0;
    for (const analysis::Frame& f : merged) {
      EXPECT_FALSE(f.function && *f.function == "_PyEval_EvalFrameDefault");
      if (f.python) {
        ASSERT_LT(k, a.python.size());
        EXPECT_EQ(describe(f), describe(analysis::python_frame(a.python[k++], *a.thread)));
      }
    }
    EXPECT_EQ(k, a.python.size());
  }
}

// By default an event with Python frames ends its native walk at the innermost interpreter-loop
// call, kept as its last frame: the Python frames carry the callers from there.
TEST_P(PythonStacks, NativeStacksEndAtTheInnermostInterpreterLoopCall) {
  TracedRun t = trace(GetParam());
  ASSERT_TRUE(t.result.exited(0)) << t.result.err;
  auto loop = interpreter_loop(*t.reader);
  if (!loop) GTEST_SKIP() << "no _PyEval_EvalFrameDefault symbol in the interpreter's objects";
  ASSERT_GT(t.allocations.size(), 60u);
  for (size_t i = 0; i < t.allocations.size(); ++i) {
    const Allocation& a = t.allocations[i];
    SCOPED_TRACE("allocation " + std::to_string(i));
    ASSERT_FALSE(a.python.empty());
    LoopFrames l = loop_frames(a.native, *loop);
    EXPECT_EQ(l.count, 1u) << "one loop call, the innermost";
    EXPECT_TRUE(l.last) << "the stack ends at it";
    // Merged: the native frames up to the loop, then every Python frame in order.
    std::vector<analysis::Frame> native;
    for (uint64_t pc : a.native) {
      analysis::Frame f;
      f.address = pc;
      if (loop->contains(pc - 1)) f.function = "_PyEval_EvalFrameDefault";
      native.push_back(f);
    }
    auto merged = analysis::merge_python_frames(native, a.python, *a.thread);
    ASSERT_EQ(merged.size(), a.native.size() - 1 + a.python.size());
    for (size_t k = 0; k < a.python.size(); ++k)
      EXPECT_EQ(describe(merged[a.native.size() - 1 + k]),
                describe(analysis::python_frame(a.python[k], *a.thread)));
  }
}

TEST_P(PythonStacks, OffMeansNativeStacksOnly) {
  TracedRun t = trace(GetParam(), {{"GMEMHOOK_PYTHON", "0"}});
  ASSERT_TRUE(t.result.exited(0)) << t.result.err;
  ASSERT_GT(t.allocations.size(), 60u);
  auto loop = interpreter_loop(*t.reader);
  for (const Allocation& a : t.allocations) {
    EXPECT_FALSE(a.native.empty());
    EXPECT_TRUE(a.python.empty());
    // Without Python frames nothing else says who called: the walk goes past the loop.
    if (loop) {
      LoopFrames l = loop_frames(a.native, *loop);
      EXPECT_GE(l.count, 1u);
      EXPECT_FALSE(l.last);
    }
  }
  for (size_t i = 0; i < t.reader->thread_count(); ++i)
    EXPECT_EQ(t.reader->thread(i).py_code_count(), 0u);
  for (const auto& n : t.reader->notes())
    EXPECT_EQ(n.text.find("python"), std::string::npos) << n.text;
}

// An interpreter the recorder refuses (here forced) leaves native stacks and one note.
TEST_P(PythonStacks, UnsupportedInterpreterGivesNativeStacksAndOneNote) {
  TracedRun t = trace(GetParam(), {{"GMEMHOOK_PYTHON_FORCE_UNSUPPORTED", "1"}});
  ASSERT_TRUE(t.result.exited(0)) << t.result.err;
  ASSERT_GT(t.allocations.size(), 60u);
  for (const Allocation& a : t.allocations) {
    EXPECT_FALSE(a.native.empty());
    EXPECT_TRUE(a.python.empty());
  }
  int notes = 0;
  for (const auto& n : t.reader->notes())
    if (n.text.find("native stacks only") != std::string::npos) {
      ++notes;
      EXPECT_EQ(n.text.rfind("python 3.", 0), 0u) << n.text;
    }
  EXPECT_EQ(notes, 1);
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  // "/root/.pyenv/versions/3.12.1/bin/python3.12" → "python3_12_1"; "/usr/bin/python3.11" →
  // "usr_bin_python3_11": unique and readable in ctest's list.
  std::string p = info.param, name;
  auto versions = p.find("/versions/");
  if (versions != std::string::npos) {
    p = "python" + p.substr(versions + 10, p.find('/', versions + 10) - versions - 10);
  }
  for (char c : p) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  while (!name.empty() && name[0] == '_') name.erase(0, 1);
  return name + "_" + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(FoundInterpreters, PythonStacks, ::testing::ValuesIn(interpreters()),
                         test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(PythonStacks);

// A real interpreter older than 3.10 (when one is installed): one note, native stacks.
TEST(OlderPython, GivesNativeStacksAndOneNote) {
  std::string old = GMEMHOOK_TEST_OLD_PYTHON;
  if (old.empty()) GTEST_SKIP() << "no CPython 3.7–3.9 found at configure time";
  TracedRun t = trace(old);
  ASSERT_TRUE(t.result.exited(0)) << t.result.err;
  ASSERT_GT(t.allocations.size(), 60u);
  for (const Allocation& a : t.allocations) EXPECT_TRUE(a.python.empty());
  int notes = 0;
  for (const auto& n : t.reader->notes())
    if (n.text.find("native stacks only") != std::string::npos) {
      ++notes;
      EXPECT_EQ(n.text.rfind("python 3.", 0), 0u) << n.text;
      EXPECT_NE(n.text.find(" not supported: native stacks only"), std::string::npos) << n.text;
    }
  EXPECT_EQ(notes, 1);
}

}  // namespace
}  // namespace gmemhook::test

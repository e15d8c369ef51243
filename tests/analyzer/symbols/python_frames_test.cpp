// Python frames in the reader: PyCode records and the Python part of stacks, their damage
// checks, and the merge that puts Python frames in place of interpreter-loop frames.
#include <gtest/gtest.h>

#include <random>

#include "analyzer/log/reader.h"
#include "analyzer/symbols/python_stack.h"
#include "log_builder.h"
#include "sample_logs.h"

namespace gmemhook::test_logs {
namespace {

using analysis::Frame;
using analysis::ProcessReader;
using analysis::PyCode;
using analysis::PyFrameRef;
using format::ApiId;
using format::RecordType;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

// 3.12 location table: 4 bytes on first_line + 1, 2 without a line, 2 on first_line.
const std::string kTable312("\xd9\x00\x04\xf8\xe8\x03", 6);

PyCode code(std::string name, std::string qualname, uint32_t first_line,
            uint16_t version = 0x030c) {
  PyCode c;
  c.py_version = version;
  c.filename = "/src/train.py";
  c.name = std::move(name);
  c.qualname = std::move(qualname);
  c.first_line = first_line;
  c.line_table = kTable312;
  return c;
}

// Thread 4243 of the sample process, with Python frames on its allocation.
ProcessLogs python_process(ThreadLogBuilder& t) {
  ProcessLogs logs = small_two_thread_process(true);
  logs.threads = {{4243, t.file.bytes()}, logs.threads[1]};
  return logs;
}

std::string read_error(const ProcessLogs& logs) {
  try {
    ProcessReader r = read_in_memory(logs);
    collect_events(r);
  } catch (const analysis::ReadError& e) {
    return e.what();
  }
  return "";
}

Bytes varints(std::initializer_list<uint64_t> values) {
  Bytes out(values.size() * 10);
  format::PayloadWriter w(out.data());
  for (uint64_t v : values) w.varint(v);
  out.resize(w.size());
  return out;
}

TEST(PythonFrames, StacksCarryPythonFramesAndCodeObjects) {
  ThreadLogBuilder t(4242, 4243, kStartNs);
  uint32_t step = t.py_code(code("step", "Trainer.step", 40));
  uint32_t main = t.py_code(code("<module>", "<module>", 1, 0x030c));
  uint32_t s1 = t.stack({0x401000, 0x402000}, {{step, 2, false}, {main, 6, true}});
  uint32_t s2 = t.stack({0x401000}, {});
  auto e1 = make_event(ApiId::cudaMalloc, 1, kStartNs + 10, s1);
  t.event(e1);
  t.event(make_event(ApiId::cudaMalloc, 3, kStartNs + 20, s2));
  ProcessLogs logs = python_process(t);
  ProcessReader r = read_in_memory(logs);

  struct Order : analysis::EventVisitor {
    std::vector<std::string> seen;
    void on_event(const format::Event& ev, const analysis::ThreadFileReader& t) override {
      if (t.tid() == 4243) seen.push_back("e" + std::to_string(ev.seq));
    }
    void on_stack(uint32_t id, std::span<const uint64_t>,
                  const analysis::ThreadFileReader& t) override {
      if (t.tid() == 4243)
        seen.push_back("s" + std::to_string(id) + "/py" +
                       std::to_string(t.python_frames(id).size()));
    }
    void on_py_code(const PyCode& c, const analysis::ThreadFileReader&) override {
      seen.push_back("c" + std::to_string(c.id) + "/" + c.name);
    }
  } order;
  r.read_events(order);
  EXPECT_EQ(order.seen,
            (std::vector<std::string>{"c1/step", "c2/<module>", "s1/py2", "s2/py0", "e1", "e3"}));

  const analysis::ThreadFileReader& t0 = r.thread(0);
  ASSERT_EQ(t0.tid(), 4243u);
  EXPECT_EQ(t0.py_code_count(), 2u);
  ASSERT_NE(t0.py_code(1), nullptr);
  EXPECT_EQ(t0.py_code(1)->qualname, "Trainer.step");
  EXPECT_EQ(t0.py_code(1)->filename, "/src/train.py");
  EXPECT_EQ(t0.py_code(1)->first_line, 40u);
  EXPECT_EQ(t0.py_code(1)->py_version, 0x030c);
  EXPECT_EQ(t0.py_code(1)->line_table, kTable312);
  EXPECT_EQ(t0.py_code(0), nullptr);
  EXPECT_EQ(t0.py_code(3), nullptr);
  auto py = t0.python_frames(s1);
  ASSERT_EQ(py.size(), 2u);
  EXPECT_EQ(py[0], (PyFrameRef{1, 2, false}));
  EXPECT_EQ(py[1], (PyFrameRef{2, 6, true}));
  EXPECT_TRUE(t0.python_frames(s2).empty());
  EXPECT_TRUE(t0.python_frames(0).empty());
  EXPECT_TRUE(t0.python_frames(99).empty());
  // Native frames are untouched by the Python part.
  EXPECT_EQ(std::vector<uint64_t>(t0.stack(s1).begin(), t0.stack(s1).end()),
            (std::vector<uint64_t>{0x401000, 0x402000}));

  Frame f = analysis::python_frame(py[0], t0);
  EXPECT_TRUE(f.python);
  EXPECT_EQ(f.function, "Trainer.step");
  EXPECT_EQ(f.file, "/src/train.py");
  EXPECT_EQ(f.line, 41u);
  EXPECT_EQ(f.address, 0u);
  Frame g = analysis::python_frame(py[1], t0);
  EXPECT_EQ(g.line, 1u);  // offset 6: the entry back on first_line
}

TEST(PythonFrames, NameStandsInForQualnameBefore311AndMissingLinesStayEmpty) {
  ThreadLogBuilder t(4242, 4243, kStartNs);
  PyCode c = code("forward", "", 12, 0x030a);
  c.line_table = std::string("\x04\x01\x02\x80", 4);  // 4 bytes on line 13, 2 without a line
  uint32_t id = t.py_code(c);
  uint32_t s = t.stack({0x1}, {{id, 2, true}, {id, 4, true}});
  t.event(make_event(ApiId::cudaMalloc, 1, kStartNs + 10, s));
  ProcessLogs logs = python_process(t);
  ProcessReader r = read_in_memory(logs);
  collect_events(r);
  auto py = r.thread(0).python_frames(s);
  Frame a = analysis::python_frame(py[0], r.thread(0));
  EXPECT_EQ(a.function, "forward");
  EXPECT_EQ(a.line, 13u);
  Frame b = analysis::python_frame(py[1], r.thread(0));
  EXPECT_FALSE(b.line.has_value());
}

TEST(PythonFrames, DamageIsReportedWithTheField) {
  {
    ThreadLogBuilder t(4242, 4243, kStartNs);
    t.file.record(RecordType::Stack, varints({1, 0, format::kMaxPyFrames + 1}));
    EXPECT_CONTAINS(read_error(python_process(t)),
                    "stack record: expected python frame count <= 1024, got 1025");
  }
  {
    ThreadLogBuilder t(4242, 4243, kStartNs);
    t.file.record(RecordType::Stack, varints({1, 0, 1000, 1, 2}));
    EXPECT_CONTAINS(read_error(python_process(t)), "python frame count items to fit the payload");
  }
  {
    ThreadLogBuilder t(4242, 4243, kStartNs);
    t.py_code(code("f", "f", 1));
    t.file.record(RecordType::Stack, varints({1, 0, 1, 0, 2}));
    EXPECT_CONTAINS(read_error(python_process(t)), "expected a python frame code_id in [1, 2^32)");
  }
  {
    ThreadLogBuilder t(4242, 4243, kStartNs);
    t.py_code(code("f", "f", 1));
    t.file.record(RecordType::Stack, varints({1, 0, 1, 1, 1ull << 33}));
    EXPECT_CONTAINS(read_error(python_process(t)), "expected a python frame where < 2^32");
  }
  {
    ThreadLogBuilder t(4242, 4243, kStartNs);
    t.py_code(code("f", "f", 1));
    t.stack({0x1}, {{2, 0, true}});
    EXPECT_CONTAINS(read_error(python_process(t)),
                    "stack record: expected python frame code ids recorded earlier in this file "
                    "(1..1), got 2");
  }
  {
    ThreadLogBuilder t(4242, 4243, kStartNs);
    t.file.record(RecordType::Stack, varints({1, 1, 2}));  // native frames, no pycount
    EXPECT_CONTAINS(read_error(python_process(t)), "expected python frame count (a varint)");
  }
  {
    ThreadLogBuilder t(4242, 4243, kStartNs);
    PyCode c = code("f", "f", 1);
    c.id = 2;
    t.file.record(RecordType::PyCode, py_code_payload(c));
    EXPECT_CONTAINS(read_error(python_process(t)), "py-code record: expected id 1");
  }
  {
    ThreadLogBuilder t(4242, 4243, kStartNs);
    PyCode c = code("f", "f", 1);
    c.id = 1;
    Bytes p = py_code_payload(c);
    p.pop_back();  // the line table is cut short
    t.file.record(RecordType::PyCode, p);
    EXPECT_CONTAINS(read_error(python_process(t)), "py-code record: expected line_table");
  }
  {
    ThreadLogBuilder t(4242, 4243, kStartNs);
    t.file.record(RecordType::PyCode, varints({1, 1ull << 20}));
    EXPECT_CONTAINS(read_error(python_process(t)), "expected py_version = (major << 8) | minor");
  }
  {
    ThreadLogBuilder t(4242, 4243, kStartNs);
    t.file.record(RecordType::PyCode, varints({1, 0x030c, 0, 0, 0, 1ull << 31, 0}));
    EXPECT_CONTAINS(read_error(python_process(t)), "expected first_line < 2^31");
  }
  {
    // A PyCode record belongs in thread files only.
    ProcessLogs logs = small_two_thread_process(true);
    ProcessLogBuilder p(4242, kStartNs);
    p.info({});
    PyCode c = code("f", "f", 1);
    c.id = 1;
    p.file.record(RecordType::PyCode, py_code_payload(c));
    logs.process = p.file.bytes();
    EXPECT_NE(read_error(logs), "");
  }
}

// Every prefix and many bit flips of a thread file with Python frames: what was committed is
// used, damage is reported, and decoding the frames' lines never crashes on any of it.
TEST(PythonFrames, CutAndFlippedFilesNeverCrash) {
  ThreadLogBuilder t(4242, 4243, kStartNs);
  uint32_t a = t.py_code(code("step", "Trainer.step", 40));
  uint32_t b = t.py_code(code("<module>", "<module>", 1, 0x030a));
  uint32_t s = t.stack({0x401000, 0x402000}, {{a, 2, false}, {b, 6, true}});
  for (uint64_t seq = 1; seq <= 5; seq += 2)
    t.event(make_event(ApiId::cudaMalloc, seq, kStartNs + seq, s));
  const ProcessLogs full = python_process(t);
  auto touch = [](const ProcessLogs& logs) {
    size_t frames = 0;
    try {
      ProcessReader r = read_in_memory(logs);
      r.for_each_event([&](const format::Event& ev, const analysis::ThreadFileReader& th) {
        for (const PyFrameRef& f : th.python_frames(ev.stack_id)) {
          Frame fr = analysis::python_frame(f, th);
          frames += fr.line.value_or(0) > 0;
        }
      });
    } catch (const analysis::ReadError&) {
    }
    return frames;
  };
  EXPECT_EQ(touch(full), 6u);
  const Bytes& bytes = full.threads[0].second;
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    ProcessLogs logs = full;
    logs.threads[0].second.resize(cut);
    touch(logs);
  }
  std::mt19937 rng(5);
  for (int i = 0; i < 3000; ++i) {
    ProcessLogs logs = full;
    Bytes& b = logs.threads[0].second;
    for (int k = 0; k < 3; ++k)
      b[64 + rng() % (b.size() - 64)] ^= static_cast<uint8_t>(1u << (rng() % 8));
    touch(logs);
  }
}

// --- Merging ---------------------------------------------------------------------------------

Frame native(uint64_t address, std::optional<std::string> function, bool inlined = false) {
  Frame f;
  f.address = address;
  f.function = std::move(function);
  f.inlined = inlined;
  f.module = "/usr/lib/libpython3.12.so";
  return f;
}

struct MergeFixture : ::testing::Test {
  void SetUp() override {
    ThreadLogBuilder t(4242, 4243, kStartNs);
    for (const char* name : {"alloc", "forward", "step", "train", "<module>"})
      t.py_code(code(name, name, 10));
    logs = python_process(t);
    reader.emplace(read_in_memory(logs));
    collect_events(*reader);
  }
  const analysis::ThreadFileReader& thread() const { return reader->thread(0); }
  static std::vector<std::string> names(const std::vector<Frame>& frames) {
    std::vector<std::string> out;
    for (const Frame& f : frames) out.push_back((f.python ? "py:" : "") + f.function.value_or("?"));
    return out;
  }
  ProcessLogs logs;
  std::optional<ProcessReader> reader;
};

// alloc, forward (one loop call), step (its own), train, <module> (one loop call).
const std::vector<PyFrameRef> kPython = {
    {1, 0, false}, {2, 0, true}, {3, 0, true}, {4, 0, false}, {5, 0, true}};

TEST_F(MergeFixture, EachLoopFrameGivesWayToItsGroup) {
  std::vector<Frame> frames = {native(0x10, "cudaMalloc"),
                               native(0x20, "ffi_call"),
                               native(0x30, "_PyEval_EvalFrameDefault"),
                               native(0x40, "PyObject_Call"),
                               native(0x50, "_PyEval_EvalFrameDefault.cold"),
                               native(0x60, "method_vectorcall"),
                               native(0x70, "_PyEval_EvalFrameDefault"),
                               native(0x80, "main")};
  auto merged = analysis::merge_python_frames(frames, kPython, thread());
  EXPECT_EQ(names(merged), (std::vector<std::string>{
                               "cudaMalloc", "ffi_call", "py:alloc", "py:forward", "PyObject_Call",
                               "py:step", "method_vectorcall", "py:train", "py:<module>", "main"}));
  EXPECT_EQ(merged[2].file, "/src/train.py");
  EXPECT_EQ(merged[2].line, 11u);
  EXPECT_TRUE(merged[2].python);
  EXPECT_EQ(merged[2].module, "");
}

TEST_F(MergeFixture, InlinedFramesOfALoopCallGoWithIt) {
  std::vector<Frame> frames = {native(0x10, "cudaMalloc"),
                               native(0x30, "_PyObject_VectorcallTstate", true),
                               native(0x30, "_PyEval_EvalFrameDefault"), native(0x80, "main")};
  auto merged =
      analysis::merge_python_frames(frames, {kPython.begin(), kPython.begin() + 2}, thread());
  EXPECT_EQ(names(merged),
            (std::vector<std::string>{"cudaMalloc", "py:alloc", "py:forward", "main"}));
}

TEST_F(MergeFixture, UnsymbolizedStacksGetPythonFramesAppended) {
  std::vector<Frame> frames = {native(0x10, std::nullopt), native(0x20, std::nullopt)};
  auto merged = analysis::merge_python_frames(frames, kPython, thread());
  EXPECT_EQ(names(merged), (std::vector<std::string>{"?", "?", "py:alloc", "py:forward", "py:step",
                                                     "py:train", "py:<module>"}));
}

TEST_F(MergeFixture, LeftoverGroupsAndLoopFramesStayInOrder) {
  // The native stack was cut after the first loop call: the other groups follow it.
  std::vector<Frame> cut = {native(0x10, "cudaMalloc"), native(0x30, "_PyEval_EvalFrameDefault")};
  EXPECT_EQ(names(analysis::merge_python_frames(cut, kPython, thread())),
            (std::vector<std::string>{"cudaMalloc", "py:alloc", "py:forward", "py:step", "py:train",
                                      "py:<module>"}));
  // More loop frames than groups (a Python walk cut short): the extra ones stay native.
  std::vector<Frame> more = {native(0x30, "_PyEval_EvalFrameDefault"),
                             native(0x70, "_PyEval_EvalFrameDefault")};
  EXPECT_EQ(
      names(analysis::merge_python_frames(more, {kPython.begin(), kPython.begin() + 2}, thread())),
      (std::vector<std::string>{"py:alloc", "py:forward", "_PyEval_EvalFrameDefault"}));
  // No Python frames: native frames unchanged.
  EXPECT_EQ(names(analysis::merge_python_frames(more, {}, thread())),
            (std::vector<std::string>{"_PyEval_EvalFrameDefault", "_PyEval_EvalFrameDefault"}));
}

TEST(PythonFrames, InterpreterLoopNames) {
  EXPECT_TRUE(analysis::is_interpreter_loop("_PyEval_EvalFrameDefault"));
  EXPECT_TRUE(analysis::is_interpreter_loop("_PyEval_EvalFrameDefault.cold"));
  EXPECT_TRUE(analysis::is_interpreter_loop("_PyEval_EvalFrameDefault.lto_priv.0"));
  EXPECT_FALSE(analysis::is_interpreter_loop("_PyEval_EvalFrameDefaultX"));
  EXPECT_FALSE(analysis::is_interpreter_loop("_PyEval_EvalFrame"));
  EXPECT_FALSE(analysis::is_interpreter_loop(std::nullopt));
}

}  // namespace
}  // namespace gmemhook::test_logs

// `gmemhook dump` end to end: the built binary on runs written to a temp directory.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "log_builder.h"
#include "sample_logs.h"

#ifndef GMEMHOOK_CLI
#error "GMEMHOOK_CLI (path of the built gmemhook binary) must be defined by CMake"
#endif

namespace gmemhook::test_logs {
namespace {

struct CommandResult {
  int status = -1;
  std::string out, err;
};

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs the gmemhook binary with `args` (already shell-quoted) and captures its output.
CommandResult gmemhook_cli(const std::string& args) {
  auto tmp = make_temp_dir("cli-out");
  std::string cmd = std::string("'") + GMEMHOOK_CLI + "' " + args + " >'" + (tmp / "out").string() +
                    "' 2>'" + (tmp / "err").string() + "'";
  int rc = std::system(cmd.c_str());
  CommandResult r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  r.out = slurp(tmp / "out");
  r.err = slurp(tmp / "err");
  std::filesystem::remove_all(tmp);
  return r;
}

std::string quote(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

TEST(DumpCommand, PrintsEveryRecordOfARun) {
  auto run = make_temp_dir("dump");
  auto dir = write_process_dir(run, small_two_thread_process(true));
  CommandResult r = gmemhook_cli("dump " + quote(run));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string d = dir.string();
  const std::string expected =
      "process pid=4242 ppid=1 exe=/opt/bin/train argv=[train, --epochs, 2] rank=0 world_size=1 "
      "started=2026-11-30T01:10:00.000000Z library=0.1.0 chunk_size=4096 file=" +
      d +
      "/process.gmh\n"
      "modules seq=0 count=2\n"
      "module /opt/bin/train build-id=1234ab base=0x400000 segs=r-x@0x0+0x2000,rw-@0x3000+0x100\n"
      "module /usr/lib/libcudart.so.13 build-id=- base=0x7f0000000000 segs=r-x@0x0+0x10000\n"
      "note: \"hello from the recorder\"\n"
      "thread tid=4243 file=" +
      d +
      "/thread.4243.gmh chunk_size=4096 start=+0.000001s\n"
      "thread tid=4244 file=" +
      d +
      "/thread.4244.gmh chunk_size=4096 start=+0.000002s\n"
      "stack 1 tid=4243: 0x401000 0x401100 0x7f0000001000\n"
      "seq=1 t=+0.001000s tid=4243 cudaMalloc alloc mem=device device=0 ptr=0x7f1000000000 "
      "size=1048576 result=0 stack=1\n"
      "stack 1 tid=4244: 0x501000 0x501200\n"
      "seq=2 t=+0.002000s tid=4244 cuMemAlloc_v2 alloc mem=device ptr=0x7f2000000000 size=256 "
      "result=0 stack=1\n"
      "seq=3 t=+0.003000s tid=4243 cudaMallocAsync alloc mem=device ptr=0x7f1000100000 "
      "size=4096 stream=0x55 result=0 stack=1\n"
      "seq=4 t=+0.004000s tid=4244 cudaMallocHost alloc mem=host-pinned ptr=0x600000 size=64 "
      "result=2\n"
      "stack 2 tid=4243: 0x402000\n"
      "seq=5 t=+0.005000s tid=4243 cudaFree free mem=device ptr=0x7f1000000000 result=0 "
      "stack=2\n"
      "seq=6 t=+0.004500s tid=4244 cuMemFree_v2 free mem=device ptr=0x7f2000000000 result=0 "
      "stack=1\n"
      // Not cut and sealed by a finished writer: as a process still running would leave them.
      "unsealed file=" +
      d + "/process.gmh chunk=0 bytes=186 (no seal: read without a check)\n" +
      "unsealed file=" + d + "/thread.4243.gmh chunk=0 bytes=75 (no seal: read without a check)\n" +
      "unsealed file=" + d + "/thread.4244.gmh chunk=0 bytes=59 (no seal: read without a check)\n" +
      "end: exit(0) after seq=6 cuda_used=1 t=+0.005000s\n";
  EXPECT_EQ(r.out, expected);
  std::filesystem::remove_all(run);
}

// PyTorch's blocks: alloc and free by the IsFree marker, with the allocator's two totals.
TEST(DumpCommand, PrintsAllocatorBlocksWithTheirTotals) {
  auto run = make_temp_dir("dump-blocks");
  ProcessLogs logs = small_two_thread_process(true);
  ThreadLogBuilder t(4242, 4243, kStartNs);
  const auto api = format::ApiId::_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE;
  format::Event alloc = make_event(api, 1, kStartNs + 1000);
  alloc.f.set_address(0x7f1000000000);
  alloc.f.set_size(4096);
  alloc.f.set_device(0);
  alloc.f.set_totals(4096, 2097152);
  t.event(alloc);
  format::Event free = make_event(api, 2, kStartNs + 2000);
  free.f = alloc.f;
  free.f.set_free();
  free.f.set_totals(0, 2097152);
  t.event(free);
  logs.threads = {{4243, t.file.bytes()}};
  write_process_dir(run, logs);
  CommandResult r = gmemhook_cli("dump " + quote(run));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("seq=1 t=+0.000001s tid=4243 "
                       "_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE block-alloc "
                       "mem=device device=0 ptr=0x7f1000000000 size=4096 allocated=4096 "
                       "reserved=2097152 result=0\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("block-free mem=device device=0 ptr=0x7f1000000000 size=4096 allocated=0 "
                       "reserved=2097152 result=0\n"),
            std::string::npos)
      << r.out;
  std::filesystem::remove_all(run);
}

TEST(DumpCommand, ReportsAbruptEndAndUnknownApis) {
  auto run = make_temp_dir("dump-abrupt");
  ProcessLogs logs = small_two_thread_process(false);
  ThreadLogBuilder t(logs.pid, 5000, kStartNs);
  auto ev = make_event(format::ApiId::cudaMalloc, 7, kStartNs + 7000000);
  ev.api = 77;
  ev.f.set_memory(format::MemoryType::Managed);
  ev.f.set_pool(0xabc);
  ev.f.set_handle(0x10);
  ev.f.set_offset(4096);
  ev.f.set_device(-1);
  t.event(ev);
  t.note("line one\nline two");
  logs.threads.push_back({5000, t.file.bytes()});
  write_process_dir(run, logs);
  CommandResult r = gmemhook_cli("dump " + quote(run));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\nseq=7 t=+0.007000s tid=5000 api#77 mem=managed device=-1 pool=0xabc "
                       "handle=0x10 offset=4096 result=0\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\nnote tid=5000: \"line one\\nline two\"\n"), std::string::npos) << r.out;
  EXPECT_TRUE(r.out.ends_with(
      "end: none \u2014 process 4242 ended abruptly after record 7 (killed or crashed)\n"))
      << r.out;
  std::filesystem::remove_all(run);
}

TEST(DumpCommand, WarnsAboutTruncatedTails) {
  auto run = make_temp_dir("dump-torn");
  ProcessLogs logs = small_two_thread_process(true);
  logs.threads[0].second.resize(logs.threads[0].second.size() - 3);
  auto dir = write_process_dir(run, logs);
  CommandResult r = gmemhook_cli("dump " + quote(dir));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("seq=5 "), std::string::npos);
  EXPECT_NE(r.out.find("seq=6 "), std::string::npos);
  EXPECT_NE(r.err.find("gmemhook: warning: " + (dir / "thread.4243.gmh").string() + ": offset "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("truncated tail"), std::string::npos) << r.err;
  std::filesystem::remove_all(run);
}

TEST(DumpCommand, DamageExitsWithStatus2) {
  auto run = make_temp_dir("dump-damage");
  ProcessLogs logs = small_two_thread_process(true);
  logs.threads[1].second[64] = 0x42;  // first record header of thread 4244
  auto dir = write_process_dir(run, logs);
  CommandResult r = gmemhook_cli("dump " + quote(run));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "gmemhook: " + (dir / "thread.4244.gmh").string() +
                       ": offset 64: expected a record header, found unknown record type 0x42\n");
  std::filesystem::remove_all(run);
}

TEST(DumpCommand, UnreadableInputExitsWithStatus2) {
  CommandResult r = gmemhook_cli("dump /nonexistent/gmemhook-run");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "gmemhook: /nonexistent/gmemhook-run: expected a run directory, it does not "
            "exist\n");

  auto run = make_temp_dir("dump-version");
  ProcessLogs logs = small_two_thread_process(true);
  const int next = format::kFormatVersion + 1;  // a version from the future
  reinterpret_cast<format::FileHeader*>(logs.process.data())->version = next;
  auto dir = write_process_dir(run, logs);
  r = gmemhook_cli("dump " + quote(run));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "gmemhook: " + (dir / "process.gmh").string() +
                       ": offset 8: was written by format version " + std::to_string(next) +
                       "; this gmemhook reads versions 1 to " +
                       std::to_string(format::kFormatVersion) + "\n");
  std::filesystem::remove_all(run);
}

// gmemhook html on a run it cannot read says why and exits 2, as every report does (it aborted
// on an uncaught ReadError).
TEST(HtmlCommand, UnreadableRunExitsWithStatus2) {
  auto run = make_temp_dir("html-empty-run");
  CommandResult r = gmemhook_cli("html " + quote(run) + " -o " + quote(run / "page.html"));
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(r.err, "gmemhook: " + run.string() +
                       ": expected process directories (<exe>.<pid>/ holding process.gmh), "
                       "found none\n");
  EXPECT_FALSE(std::filesystem::exists(run / "page.html"));
  std::filesystem::remove_all(run);
}

TEST(DumpCommand, PrintsCodeObjectsAndPythonFrames) {
  auto run = make_temp_dir("dump-python");
  ProcessLogs logs = small_two_thread_process(true);
  ThreadLogBuilder t(logs.pid, 4243, kStartNs + 1000);
  analysis::PyCode step;
  step.py_version = 0x030c;
  step.filename = "/src/my train.py";
  step.name = "step";
  step.qualname = "Trainer.step";
  step.first_line = 40;
  step.line_table = std::string("\xd9\x00\x04\xf8\xe8\x03", 6);
  uint32_t code = t.py_code(step);
  uint32_t s = t.stack({0x401000}, {{code, 2, false}, {code, 4, true}});
  t.event(make_event(format::ApiId::cudaMalloc, 1, kStartNs + 1000000, s));
  logs.threads[0] = {4243, t.file.bytes()};
  write_process_dir(run, logs);
  CommandResult r = gmemhook_cli("dump " + quote(run));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("pycode 1 tid=4243: python=3.12 file=\"/src/my train.py\" name=step "
                       "qualname=Trainer.step first_line=40 line_table=6B\n"
                       "stack 1 tid=4243: 0x401000 py: 1@2:41 1@4:?*\n"),
            std::string::npos)
      << r.out;
  std::filesystem::remove_all(run);
}

TEST(Cli, VersionAndHelp) {
  CommandResult r = gmemhook_cli("--version");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out.rfind("gmemhook ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("log format " + std::to_string(format::kFormatVersion)), std::string::npos) << r.out;

  r = gmemhook_cli("--help");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("dump"), std::string::npos) << r.out;

  // Usage errors exit 2 (1 is "the report could not be made").
  r = gmemhook_cli("");
  EXPECT_EQ(r.status, 2);
  r = gmemhook_cli("dump");
  EXPECT_EQ(r.status, 2);
}

}  // namespace
}  // namespace gmemhook::test_logs

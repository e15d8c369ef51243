// Scenario logs and the CLI runner for the report tests (see report_scenario.h).
#include "report_scenario.h"

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#ifndef GMEMHOOK_CLI
#error "GMEMHOOK_CLI (path of the built gmemhook binary) must be defined by CMake"
#endif

namespace gmemhook::test_logs {

using format::ApiId;

Scenario::Scenario(uint32_t pid, std::string exe_name, std::string rank)
    : pid_(pid), exe_name_(std::move(exe_name)), rank_(std::move(rank)) {}

uint32_t Scenario::stack(uint64_t tid, const std::vector<uint64_t>& frames,
                         const std::vector<analysis::PyFrameRef>& python) {
  auto& stacks = threads_[tid].stacks;
  stacks.push_back({frames, python});
  return static_cast<uint32_t>(stacks.size());
}

uint32_t Scenario::py_code(uint64_t tid, const analysis::PyCode& code) {
  auto& codes = threads_[tid].codes;
  codes.push_back(code);
  return static_cast<uint32_t>(codes.size());
}

format::Event& Scenario::event(uint64_t tid, ApiId api, uint32_t stack) {
  ++seq_;
  const uint64_t ms = time_ms_ ? time_ms_ : seq_;
  time_ms_ = 0;
  threads_[tid];  // the thread has a file even without stacks
  events_.push_back({tid, make_event(api, seq_, kStartNs + ms * 1000000, stack)});
  return events_.back().second;
}

void Scenario::alloc(uint64_t tid, ApiId api, uint64_t address, uint64_t size, int32_t device,
                     uint32_t stack, uint32_t result) {
  format::Event& ev = event(tid, api, stack);
  ev.result = result;
  ev.f.set_address(result ? 0 : address);
  ev.f.set_size(size);
  if (device >= -1) ev.f.set_device(device);
}

void Scenario::free(uint64_t tid, ApiId api, uint64_t address, uint32_t stack) {
  event(tid, api, stack).f.set_address(address);
}

void Scenario::create(uint64_t tid, uint64_t handle, uint64_t size, int32_t device, uint32_t stack,
                      bool host, uint32_t result) {
  format::Event& ev = event(tid, ApiId::cuMemCreate, stack);
  ev.result = result;
  if (!result) ev.f.set_handle(handle);
  ev.f.set_size(size);
  if (host) {
    ev.f.set_memory(format::MemoryType::HostPinned);
    ev.f.set_device(-1);
  } else {
    ev.f.set_device(device);
  }
}

void Scenario::release(uint64_t tid, uint64_t handle) {
  event(tid, ApiId::cuMemRelease).f.set_handle(handle);
}

void Scenario::reserve(uint64_t tid, uint64_t address, uint64_t size, int32_t device) {
  format::Event& ev = event(tid, ApiId::cuMemAddressReserve);
  ev.f.set_address(address);
  ev.f.set_size(size);
  ev.f.set_device(device);
}

void Scenario::address_free(uint64_t tid, uint64_t address, uint64_t size) {
  format::Event& ev = event(tid, ApiId::cuMemAddressFree);
  ev.f.set_address(address);
  ev.f.set_size(size);
}

void Scenario::map(uint64_t tid, uint64_t address, uint64_t size, uint64_t handle) {
  format::Event& ev = event(tid, ApiId::cuMemMap);
  ev.f.set_address(address);
  ev.f.set_size(size);
  ev.f.set_offset(0);
  ev.f.set_handle(handle);
}

void Scenario::unmap(uint64_t tid, uint64_t address, uint64_t size) {
  format::Event& ev = event(tid, ApiId::cuMemUnmap);
  ev.f.set_address(address);
  ev.f.set_size(size);
}

uint64_t Scenario::graph_pool_call(uint64_t tid, ApiId api, uint64_t exec, uint64_t used,
                                   uint64_t reserved, int32_t device) {
  format::Event& ev = event(tid, api);
  ev.f.set_handle(exec);
  ev.f.set_device(device);
  ev.f.set_totals(used, reserved);
  return ev.seq;
}

ProcessLogs Scenario::build(bool with_end, int64_t status) const {
  ProcessLogs logs;
  logs.pid = pid_;
  logs.exe_name = exe_name_;
  ProcessLogBuilder p(pid_, kStartNs);
  p.file.header().time_step_ns = time_step_ns_;
  analysis::ProcessInfo info;
  info.pid = pid_;
  info.ppid = 1;
  info.exe = "/nonexistent/" + exe_name_;
  info.argv = {exe_name_};
  info.rank = rank_;
  info.world_size = rank_.empty() ? "" : "2";
  info.library_version = "0.1.0";
  info.chunk_size_hint = 4096;
  p.info(info);
  std::vector<analysis::Module> modules = {
      {"/nonexistent/" + exe_name_, "", module_bias_, {{0, 0x100000, 5}}}};
  // Libraries only named (e.g. to say which framework was loaded), each in its own 1 MiB.
  for (size_t i = 0; i < libraries_.size(); ++i)
    modules.push_back({libraries_[i], "", 0x10000000 + i * 0x100000, {{0, 0x100000, 5}}});
  p.snapshot(0, modules);
  for (const auto& sample : nvml_) p.nvml_sample(sample);
  const uint64_t end_ms = seq_ + 1;
  if (with_end) p.end(format::EndHow::Exit, status, seq_, end_ms * 1000000, true);
  logs.process = p.file.bytes();

  for (const auto& [tid, records] : threads_) {
    ThreadLogBuilder t(pid_, tid, kStartNs);
    for (const auto& code : records.codes) t.py_code(code);
    for (const auto& [frames, python] : records.stacks) t.stack(frames, python);
    for (const auto& [event_tid, ev] : events_)
      if (event_tid == tid) t.event(ev);
    logs.threads.push_back({tid, t.file.bytes()});
  }
  return logs;
}

std::filesystem::path Scenario::write(const std::filesystem::path& run, bool with_end,
                                      int64_t status) const {
  return write_process_dir(run, build(with_end, status));
}

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::string file_contents(std::FILE* f) {
  std::rewind(f);
  std::string s;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
  return s;
}

std::string quote(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

std::unique_ptr<Replayed> replay(const Scenario& s, bool with_end) {
  const ProcessLogs logs = s.build(with_end);
  auto reader = read_in_memory(logs);
  auto r = std::make_unique<Replayed>();
  r->replay.observe(r->pools);
  r->replay.observe(r->graphs);
  r->replay.observe(r->graph_pool);
  r->replay.observe(r->peaks);
  reader.read_events(r->replay);
  r->replay.finish();
  return r;
}

CliResult run_cli(const std::string& args) {
  auto tmp = make_temp_dir("report-cli");
  const std::string cmd = std::string("'") + GMEMHOOK_CLI + "' " + args + " >" +
                          quote(tmp / "out") + " 2>" + quote(tmp / "err");
  const int rc = std::system(cmd.c_str());
  CliResult r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  r.out = slurp(tmp / "out");
  r.err = slurp(tmp / "err");
  std::filesystem::remove_all(tmp);
  return r;
}

}  // namespace gmemhook::test_logs

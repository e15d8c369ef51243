// Ready-made test processes (see sample_logs.h).
#include "sample_logs.h"

namespace gmemhook::test_logs {

using format::ApiId;

ProcessLogs small_two_thread_process(bool with_end) {
  ProcessLogs logs;
  logs.pid = 4242;
  logs.exe_name = "train";

  ProcessLogBuilder p(logs.pid, kStartNs);
  analysis::ProcessInfo info;
  info.pid = logs.pid;
  info.ppid = 1;
  info.exe = "/opt/bin/train";
  info.argv = {"train", "--epochs", "2"};
  info.rank = "0";
  info.world_size = "1";
  info.library_version = "0.1.0";
  info.chunk_size_hint = 4096;
  p.info(info);
  p.snapshot(0, {{"/opt/bin/train", "\x12\x34\xab", 0x400000, {{0, 0x2000, 5}, {0x3000, 0x100, 6}}},
                 {"/usr/lib/libcudart.so.13", "", 0x7f0000000000, {{0, 0x10000, 5}}}});
  p.note("hello from the recorder");
  if (with_end) p.end(format::EndHow::Exit, 0, 6, 5000000, true);
  logs.process = p.file.bytes();

  ThreadLogBuilder a(logs.pid, 4243, kStartNs + 1000);
  uint32_t s1 = a.stack({0x401000, 0x401100, 0x7f0000001000});
  auto e1 = make_event(ApiId::cudaMalloc, 1, kStartNs + 1000000, s1);
  e1.f.set_address(0x7f1000000000);
  e1.f.set_size(1 << 20);
  e1.f.set_device(0);
  a.event(e1);
  auto e3 = make_event(ApiId::cudaMallocAsync, 3, kStartNs + 3000000, s1);
  e3.f.set_address(0x7f1000100000);
  e3.f.set_size(4096);
  e3.f.set_stream(0x55);
  a.event(e3);
  uint32_t s2 = a.stack({0x402000});
  auto e5 = make_event(ApiId::cudaFree, 5, kStartNs + 5000000, s2);
  e5.f.set_address(0x7f1000000000);
  a.event(e5);
  logs.threads.push_back({4243, a.file.bytes()});

  ThreadLogBuilder b(logs.pid, 4244, kStartNs + 2000);
  uint32_t t1 = b.stack({0x501000, 0x501200});
  auto e2 = make_event(ApiId::cuMemAlloc_v2, 2, kStartNs + 2000000, t1);
  e2.f.set_address(0x7f2000000000);
  e2.f.set_size(256);
  b.event(e2);
  auto e4 = make_event(ApiId::cudaMallocHost, 4, kStartNs + 4000000, 0);
  e4.f.set_address(0x600000);
  e4.f.set_size(64);
  e4.result = 2;
  b.event(e4);
  auto e6 = make_event(ApiId::cuMemFree_v2, 6, kStartNs + 4500000, t1);
  e6.f.set_address(0x7f2000000000);
  b.event(e6);
  logs.threads.push_back({4244, b.file.bytes()});
  return logs;
}

analysis::ProcessReader read_in_memory(const ProcessLogs& logs) {
  std::vector<analysis::LogBytes> threads;
  for (const auto& [tid, bytes] : logs.threads)
    threads.push_back(analysis::LogBytes::borrow(bytes, "thread." + std::to_string(tid) + ".gmh"));
  return analysis::ProcessReader::from_logs(analysis::LogBytes::borrow(logs.process, "process.gmh"),
                                            std::move(threads));
}

std::filesystem::path write_process_dir(const std::filesystem::path& run, const ProcessLogs& logs) {
  auto dir = run / (logs.exe_name + "." + std::to_string(logs.pid));
  write_file(dir / "process.gmh", logs.process);
  for (const auto& [tid, bytes] : logs.threads)
    write_file(dir / ("thread." + std::to_string(tid) + ".gmh"), bytes);
  return dir;
}

std::vector<SeenEvent> collect_events(analysis::ProcessReader& r) {
  std::vector<SeenEvent> seen;
  r.for_each_event([&](const format::Event& ev, const analysis::ThreadFileReader& t) {
    auto frames = t.stack(ev.stack_id);
    seen.push_back({ev.seq, t.tid(), ev.api, ev.f.address, {frames.begin(), frames.end()}});
  });
  return seen;
}

}  // namespace gmemhook::test_logs

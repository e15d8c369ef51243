// The reader on well-formed logs: merge order, stacks, module snapshots, End records, chunking
// and finding processes in a run directory.
#include "analyzer/log/reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <utility>
#include <vector>

#include "log_builder.h"
#include "sample_logs.h"

namespace gmemhook::test_logs {
namespace {

using analysis::ProcessReader;
using format::ApiId;

// Three threads (tids 100, 101, 102) whose events interleave, `per_thread` each: event seq n has
// address 0x1000 * n and comes from thread 100 + (n - 1) % 3. Each file only knows its own seqs.
ProcessLogs three_interleaved_threads(uint64_t per_thread) {
  ProcessLogs logs = small_two_thread_process(true);
  logs.threads.clear();
  for (uint64_t k = 0; k < 3; ++k) {
    ThreadLogBuilder t(logs.pid, 100 + k, kStartNs);
    for (uint64_t i = 0; i < per_thread; ++i) {
      auto ev = make_event(ApiId::cudaMalloc, 1 + k + 3 * i, kStartNs + 10 * (1 + k + 3 * i));
      ev.f.set_address(0x1000 * (1 + k + 3 * i));
      t.event(ev);
    }
    logs.threads.push_back({100 + k, t.file.bytes()});
  }
  return logs;
}

// Threads 100, 101, ... holding the events of `seqs` (each rising), an allocation each; a thread
// with none has no file.
ProcessLogs threads_with_seqs(const std::vector<std::vector<uint64_t>>& seqs) {
  ProcessLogs logs = small_two_thread_process(true);
  logs.threads.clear();
  for (uint64_t k = 0; k < seqs.size(); ++k) {
    if (seqs[k].empty()) continue;
    ThreadLogBuilder t(logs.pid, 100 + k, kStartNs);
    for (uint64_t seq : seqs[k]) {
      auto ev = make_event(ApiId::cudaMalloc, seq, kStartNs + 10 * seq);
      ev.f.set_address(0x1000 * seq);
      t.event(ev);
    }
    logs.threads.push_back({100 + k, t.file.bytes()});
  }
  return logs;
}

TEST(Reader, MergesThreeThreadFilesBySequence) {
  const ProcessLogs logs = three_interleaved_threads(5);
  ProcessReader r = read_in_memory(logs);
  auto seen = collect_events(r);
  ASSERT_EQ(seen.size(), 15u);
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].seq, i + 1);
    EXPECT_EQ(seen[i].tid, 100 + i % 3);
    EXPECT_EQ(seen[i].address, 0x1000 * (i + 1));  // address deltas decoded per file
  }
  EXPECT_EQ(r.events_read(), 15u);
  EXPECT_EQ(r.last_seq(), 15u);
  // A second pass gives the same stream.
  EXPECT_EQ(collect_events(r), seen);
}

// The merge takes the file holding the next seq among up to 16 files (MergeScan) and keeps a
// heap beyond: both give every event in seq order, files taking turns every event, ending at
// different times, with holes (events lost) between. (seq, tid) of each event against a sort.
TEST(Reader, MergesAnyNumberOfThreadFilesBySequence) {
  std::mt19937_64 rng(3);
  for (int round = 0; round < 300; ++round) {
    const size_t files = 1 + rng() % 20;
    std::vector<std::vector<uint64_t>> seqs(files);
    std::vector<std::pair<uint64_t, uint64_t>> expected;  // (seq, tid)
    uint64_t seq = rng() % 2, first_gap_after = 0;
    bool gap = seq != 0;  // a first event above 1 is a hole after 0
    for (int i = 0; i < 60; ++i) {
      const size_t f = round % 2 ? i % files : rng() % files;  // turns, or at random
      ++seq;
      if (rng() % 13 == 0) {
        if (!gap) first_gap_after = seq - 1;
        gap = true;
        seq += 1 + rng() % 3;
      }
      seqs[f].push_back(seq);
      expected.emplace_back(seq, 100 + f);
    }
    std::sort(expected.begin(), expected.end());
    const ProcessLogs logs = threads_with_seqs(seqs);  // the reader borrows its bytes
    ProcessReader r = read_in_memory(logs);
    std::vector<std::pair<uint64_t, uint64_t>> seen;
    for (const SeenEvent& e : collect_events(r)) seen.emplace_back(e.seq, e.tid);
    EXPECT_EQ(seen, expected) << "round " << round << ", " << files << " files";
    EXPECT_EQ(r.first_gap_after().has_value(), gap) << "round " << round;
    if (gap) {
      EXPECT_EQ(*r.first_gap_after(), first_gap_after) << "round " << round;
    }
  }
}

// What a pass announces (upcoming: "u<seq>/<tid>") and delivers ("e<seq>"), in order.
struct AnnounceOrder : analysis::EventVisitor {
  std::vector<std::string> log;
  bool announce = true;
  bool wants_upcoming() const override { return announce; }
  void on_event(const format::Event& ev, const analysis::ThreadFileReader&) override {
    log.push_back("e" + std::to_string(ev.seq));
  }
  void upcoming(const analysis::ThreadFileReader& t) override {
    log.push_back("u" + std::to_string(t.current_seq()) + "/" + std::to_string(t.tid()));
  }
};

// upcoming() is how the replay prefetches: with threads taking turns each event is announced
// once, before it is delivered, and well before (its file's head waits while the others are
// merged).
TEST(Reader, AnnouncesEachEventBeforeDeliveringIt) {
  const ProcessLogs logs = three_interleaved_threads(4);
  ProcessReader r = read_in_memory(logs);
  AnnounceOrder order;
  r.read_events(order);
  EXPECT_EQ(order.log,
            (std::vector<std::string>{"u1/100", "u2/101", "u3/102", "e1", "u4/100", "e2", "u5/101",
                                      "e3", "u6/102", "e4", "u7/100", "e5", "u8/101", "e6",
                                      "u9/102", "e7", "u10/100", "e8", "u11/101", "e9", "u12/102",
                                      "e10", "e11", "e12"}));
}

// An event delivered next, with no other file's between (its file stays on top), is not
// announced: the hint would come too late to help, and cost a call on every event of a process
// of one thread file. Thread 100 has seqs 1, 2, 3 and 6, thread 101 has 4 and 5.
TEST(Reader, AnnouncesOnlyEventsThatOthersOvertake) {
  const ProcessLogs logs = threads_with_seqs({{1, 2, 3, 6}, {4, 5}});  // the reader borrows it
  ProcessReader r = read_in_memory(logs);
  AnnounceOrder order;
  r.read_events(order);
  EXPECT_EQ(order.log, (std::vector<std::string>{"u1/100", "u4/101", "e1", "e2", "e3", "u6/100",
                                                 "e4", "e5", "e6"}));
  // The same beyond the scan's 16 files (the heap), with seventeen more threads whose events
  // come after these.
  std::vector<std::vector<uint64_t>> seqs = {{1, 2, 3, 6}, {4, 5}};
  for (uint64_t k = 0; k < 17; ++k) seqs.push_back({100 + k});
  const ProcessLogs more_logs = threads_with_seqs(seqs);
  ProcessReader many = read_in_memory(more_logs);
  AnnounceOrder all;
  many.read_events(all);
  all.log.resize(9 + 17);  // the first events' part, after the other files' first announcements
  std::vector<std::string> expected = {"u1/100", "u4/101"};
  for (uint64_t k = 0; k < 17; ++k)
    expected.push_back("u" + std::to_string(100 + k) + "/" + std::to_string(102 + k));
  for (const char* s : {"e1", "e2", "e3", "u6/100", "e4", "e5", "e6"}) expected.push_back(s);
  EXPECT_EQ(all.log, expected);
}

// A visitor that takes no hints says so, and the pass announces nothing (the merge without the
// calls), delivering the same events in the same order.
TEST(Reader, AnnouncesNothingToAVisitorThatWantsNoHints) {
  const ProcessLogs logs = three_interleaved_threads(4);
  ProcessReader r = read_in_memory(logs);
  AnnounceOrder order;
  order.announce = false;
  r.read_events(order);
  std::vector<std::string> delivered;
  for (int seq = 1; seq <= 12; ++seq) delivered.push_back("e" + std::to_string(seq));
  EXPECT_EQ(order.log, delivered);
  // And the next pass with hints announces again.
  order.log.clear();
  order.announce = true;
  r.read_events(order);
  EXPECT_EQ(order.log.size(), 24u);  // each event announced once (AnnouncesEachEvent...)
}

TEST(Reader, LooksUpStacksPerFile) {
  ProcessLogs logs = small_two_thread_process(true);
  ProcessReader r = read_in_memory(logs);
  auto seen = collect_events(r);
  ASSERT_EQ(seen.size(), 6u);
  EXPECT_EQ(seen[0].frames, (std::vector<uint64_t>{0x401000, 0x401100, 0x7f0000001000}));
  EXPECT_EQ(seen[1].frames, (std::vector<uint64_t>{0x501000, 0x501200}));  // same id 1, other file
  EXPECT_EQ(seen[3].frames, std::vector<uint64_t>{});                      // stack_id 0
  EXPECT_EQ(seen[4].frames, std::vector<uint64_t>{0x402000});
  // Stacks stay available after the pass, by (thread index, id).
  ASSERT_EQ(r.thread_count(), 2u);
  EXPECT_EQ(r.thread(0).stacks().size(), 2u);
  EXPECT_EQ(r.stack(1, 1).size(), 2u);
  EXPECT_TRUE(r.stack(1, 2).empty());
  EXPECT_TRUE(r.stack(7, 1).empty());
}

TEST(Reader, DeliversStacksBeforeTheEventsUsingThem) {
  ProcessLogs logs = small_two_thread_process(true);
  ProcessReader r = read_in_memory(logs);
  struct Order : analysis::EventVisitor {
    std::vector<std::string> log;
    void on_event(const format::Event& ev, const analysis::ThreadFileReader& t) override {
      log.push_back("e" + std::to_string(ev.seq) + "/" + std::to_string(t.tid()));
    }
    void on_stack(uint32_t id, std::span<const uint64_t>,
                  const analysis::ThreadFileReader& t) override {
      log.push_back("s" + std::to_string(id) + "/" + std::to_string(t.tid()));
    }
  } order;
  r.read_events(order);
  EXPECT_EQ(order.log,
            (std::vector<std::string>{"s1/4243", "e1/4243", "s1/4244", "e2/4244", "e3/4243",
                                      "e4/4244", "s2/4243", "e5/4243", "e6/4244"}));
}

TEST(Reader, ReadsProcessInfoModulesAndNotes) {
  ProcessLogs logs = small_two_thread_process(true);
  ProcessLogBuilder p(logs.pid, kStartNs);
  analysis::ProcessInfo info;
  info.pid = 4242;
  info.exe = "/x";
  info.argv = {"x", ""};
  p.info(info);
  p.snapshot(0, {{"/x", "\x01", 0x1000, {{0, 10, 5}}}});
  p.note("first");
  p.snapshot(7, {{"/x", "\x01", 0x1000, {}}, {"/lib/y.so", "", 0x2000, {{0x10, 20, 6}}}});
  p.modules_begin(9, 3);  // a snapshot cut short by a kill
  p.module({"/z", "", 0, {}});
  logs.process = p.file.bytes();

  ProcessReader r = read_in_memory(logs);
  EXPECT_EQ(r.info().exe, "/x");
  EXPECT_EQ(r.info().argv, (std::vector<std::string>{"x", ""}));
  ASSERT_EQ(r.module_snapshots().size(), 3u);
  const auto& s1 = r.module_snapshots()[1];
  EXPECT_EQ(s1.seq, 7u);
  ASSERT_EQ(s1.modules.size(), 2u);
  EXPECT_EQ(s1.modules[1].path, "/lib/y.so");
  EXPECT_EQ(s1.modules[1].load_bias, 0x2000u);
  ASSERT_EQ(s1.modules[1].segments.size(), 1u);
  EXPECT_EQ(s1.modules[1].segments[0].memsz, 20u);
  EXPECT_TRUE(s1.complete());
  EXPECT_FALSE(r.module_snapshots()[2].complete());
  ASSERT_EQ(r.notes().size(), 1u);
  EXPECT_EQ(r.notes()[0].text, "first");
  EXPECT_FALSE(r.end().has_value());
  auto warnings = r.warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].message.find("announced 3 modules, only 1"), std::string::npos);
}

TEST(Reader, EndRecordPresent) {
  ProcessLogs logs = small_two_thread_process(true);
  ProcessReader r = read_in_memory(logs);
  collect_events(r);
  ASSERT_TRUE(r.end().has_value());
  EXPECT_EQ(r.end()->how, format::EndHow::Exit);
  EXPECT_EQ(r.end()->last_seq, 6u);
  EXPECT_TRUE(r.end()->cuda_used);
  EXPECT_FALSE(analysis::abrupt_end_message(r).has_value());
  EXPECT_TRUE(r.warnings().empty());
}

TEST(Reader, EndRecordAbsentMeansAbruptEnd) {
  ProcessLogs logs = small_two_thread_process(false);
  ProcessReader r = read_in_memory(logs);
  collect_events(r);
  EXPECT_FALSE(r.end().has_value());
  EXPECT_EQ(analysis::abrupt_end_message(r),
            "process 4242 ended abruptly after record 6 (killed or crashed)");
}

TEST(Reader, FollowsChunkEndAcrossManyChunks) {
  ProcessLogs logs = small_two_thread_process(true);
  logs.threads.clear();
  ThreadLogBuilder t(logs.pid, 7, kStartNs, 4096);
  uint64_t seq = 0;
  std::vector<uint64_t> big_frames(200);
  for (size_t i = 0; i < big_frames.size(); ++i) big_frames[i] = 0x7f0000000000 + i * 0x1234567;
  for (int i = 0; i < 3000; ++i) {
    if (i % 500 == 0) t.stack(big_frames);  // ~1 KiB stacks force early chunk ends
    ++seq;
    auto ev = make_event(ApiId::cudaMallocAsync, seq, kStartNs + seq * 1000, 1);
    ev.f.set_address(0x7f0000000000 + (seq * 7919 % 100000) * 256);
    ev.f.set_size(seq * 64);
    ev.f.set_stream(0x1234);
    t.event(ev);
  }
  ASSERT_GT(t.file.bytes().size(), 8 * 4096u);
  t.file.pad_to_chunk();
  logs.threads.push_back({7, t.file.bytes()});
  ProcessReader r = read_in_memory(logs);
  auto seen = collect_events(r);
  ASSERT_EQ(seen.size(), 3000u);
  for (size_t i = 0; i < seen.size(); ++i) {
    ASSERT_EQ(seen[i].seq, i + 1);
    ASSERT_EQ(seen[i].address, 0x7f0000000000 + ((i + 1) * 7919 % 100000) * 256);
  }
  EXPECT_EQ(r.thread(0).stacks().size(), 6u);
  EXPECT_TRUE(r.warnings().empty());
}

TEST(Reader, SkipsOneByteChunkTail) {
  // A record ending one byte before the seal leaves no room for a ChunkEnd header.
  ProcessLogs logs = small_two_thread_process(true);
  logs.threads.clear();
  ThreadLogBuilder t(logs.pid, 7, kStartNs, 4096);
  auto& bytes = t.file.bytes();
  t.note(std::string(4096 - 8 - 64 - 1 - 6 - 2, 'n'));  // 6-byte header, 2-byte length
  ASSERT_EQ(bytes.size(), 4087u);
  bytes.push_back(0);
  t.event(make_event(ApiId::cudaFree, 1, kStartNs));
  ASSERT_EQ(bytes.size(), 4096u + 2 + 2);  // a free without fields: api and time
  logs.threads.push_back({7, bytes});
  ProcessReader r = read_in_memory(logs);
  EXPECT_EQ(collect_events(r).size(), 1u);
}

TEST(Reader, SkipsEmptyThreadFiles) {
  ProcessLogs logs = small_two_thread_process(true);
  logs.threads.push_back({9, Bytes{}});
  logs.threads.push_back({10, Bytes(4096, 0)});
  ProcessReader r = read_in_memory(logs);
  EXPECT_EQ(r.thread_count(), 2u);
  EXPECT_EQ(collect_events(r).size(), 6u);
  EXPECT_EQ(r.warnings().size(), 2u);
}

TEST(RunDir, FindsProcessDirectoriesSortedByPid) {
  auto run = make_temp_dir("rundir");
  ProcessLogs a = small_two_thread_process(true);
  ProcessLogs b = a;
  b.pid = 999;
  ProcessLogs c = a;
  c.pid = 10000;
  c.exe_name = "my.tool";
  write_process_dir(run, a);
  write_process_dir(run, b);
  write_process_dir(run, c);
  std::filesystem::create_directories(run / "unrelated");
  auto dirs = analysis::find_process_dirs(run);
  ASSERT_EQ(dirs.size(), 3u);
  EXPECT_EQ(dirs[0].filename(), "train.999");
  EXPECT_EQ(dirs[1].filename(), "train.4242");
  EXPECT_EQ(dirs[2].filename(), "my.tool.10000");
  // A process directory is a run of one.
  EXPECT_EQ(analysis::find_process_dirs(dirs[1]).size(), 1u);
  EXPECT_EQ(analysis::find_process_dirs(dirs[1] / "process.gmh"), std::vector{dirs[1]});

  auto threads = analysis::find_thread_files(dirs[1]);
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_EQ(threads[0].filename(), "thread.4243.gmh");
  ProcessReader r = ProcessReader::open(dirs[1]);
  EXPECT_EQ(collect_events(r).size(), 6u);
  std::filesystem::remove_all(run);
}

TEST(RunDir, MissingOrEmptyRunIsAnError) {
  EXPECT_THROW(analysis::find_process_dirs("/nonexistent/gmemhook-run"), analysis::ReadError);
  auto run = make_temp_dir("empty");
  try {
    analysis::find_process_dirs(run);
    FAIL() << "expected ReadError";
  } catch (const analysis::ReadError& e) {
    EXPECT_NE(std::string(e.what()).find("process.gmh"), std::string::npos);
  }
  std::filesystem::remove_all(run);
}

}  // namespace
}  // namespace gmemhook::test_logs

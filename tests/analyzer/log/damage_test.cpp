// Damaged and foreign logs: each must give a ReadError naming the file, the offset and what was
// expected, before any length or count from the file is trusted.
#include <gtest/gtest.h>

#include <cstring>

#include "analyzer/log/reader.h"
#include "log_builder.h"
#include "sample_logs.h"

namespace gmemhook::test_logs {
namespace {

using analysis::ProcessReader;
using format::ApiId;
using format::RecordType;

// The error a full read of `logs` gives, or "" when it reads cleanly.
std::string read_error(const ProcessLogs& logs) {
  try {
    ProcessReader r = read_in_memory(logs);
    collect_events(r);
  } catch (const analysis::ReadError& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

format::FileHeader& header_of(Bytes& b) { return *reinterpret_cast<format::FileHeader*>(b.data()); }

Bytes varints(std::initializer_list<uint64_t> values) {
  Bytes out(values.size() * 10);
  format::PayloadWriter w(out.data());
  for (uint64_t v : values) w.varint(v);
  out.resize(w.size());
  return out;
}

// A thread file holding `t`'s records so far, replacing the sample's first thread.
ProcessLogs with_thread(ThreadLogBuilder& t) {
  ProcessLogs logs = small_two_thread_process(true);
  logs.threads = {{4243, t.file.bytes()}};
  return logs;
}

TEST(Damage, WrongVersionNamesBothVersions) {
  ProcessLogs logs = small_two_thread_process(true);
  const int next = format::kFormatVersion + 1;  // a version from the future
  header_of(logs.process).version = next;
  EXPECT_EQ(read_error(logs),
            "process.gmh: offset 8: was written by format version " + std::to_string(next) +
                "; this gmemhook reads versions 1 to " + std::to_string(format::kFormatVersion));
  logs = small_two_thread_process(true);
  header_of(logs.process).version = 0;
  EXPECT_CONTAINS(read_error(logs), "process.gmh: offset 8: was written by format version 0");
  logs = small_two_thread_process(true);
  header_of(logs.threads[1].second).version = format::kFormatVersion + 3;
  EXPECT_CONTAINS(read_error(logs), "thread.4244.gmh: offset 8: was written by format version " +
                                        std::to_string(format::kFormatVersion + 3));
}

TEST(Damage, HeaderChecks) {
  ProcessLogs logs = small_two_thread_process(true);
  logs.process[0] = 'X';
  EXPECT_CONTAINS(read_error(logs), "process.gmh: offset 0: expected magic");

  logs = small_two_thread_process(true);
  header_of(logs.threads[0].second).kind = static_cast<uint16_t>(format::FileKind::Process);
  EXPECT_CONTAINS(read_error(logs), "thread.4243.gmh: offset 10: expected a thread file");

  for (uint32_t bad : {0u, 1024u, 5000u, 128u << 20}) {
    logs = small_two_thread_process(true);
    header_of(logs.process).chunk_size = bad;
    EXPECT_CONTAINS(read_error(logs), "process.gmh: offset 12: expected a chunk size");
  }

  logs = small_two_thread_process(true);
  logs.process.resize(30);
  EXPECT_CONTAINS(read_error(logs), "expected a 64-byte file header, the file has 30 bytes");

  logs = small_two_thread_process(true);
  logs.process.assign(4096, 0);
  EXPECT_CONTAINS(read_error(logs), "process.gmh: offset 0: expected a file header");

  logs = small_two_thread_process(true);
  logs.process.resize(64);
  EXPECT_CONTAINS(read_error(logs), "process.gmh: offset 64: expected a process-info record");
}

TEST(Damage, HugeLengthsAndCountsAreRejectedBeforeUse) {
  {
    ThreadLogBuilder t(4242, 4243, kStartNs);
    t.file.raw_record(static_cast<uint8_t>(RecordType::Note), 0xffffffffu, {});
    EXPECT_EQ(read_error(with_thread(t)),
              "thread.4243.gmh: offset 64: note record: expected a payload of at most 16777216 "
              "bytes, the header says 4294967295");
  }
  {
    ThreadLogBuilder t(4242, 4243, kStartNs);
    t.file.record(RecordType::Stack, varints({1, 1ull << 40, 0}));
    EXPECT_CONTAINS(read_error(with_thread(t)), "stack record: expected frame count <= 1024");
  }
  {
    ThreadLogBuilder t(4242, 4243, kStartNs);
    t.file.record(RecordType::Stack, varints({1, 1000, 0, 0}));
    EXPECT_CONTAINS(read_error(with_thread(t)), "1000 items, 2 bytes left");
  }
  {
    ThreadLogBuilder t(4242, 4243, kStartNs);
    t.file.record(RecordType::Note, varints({1ull << 62}));
    EXPECT_CONTAINS(read_error(with_thread(t)), "note record: expected text (a string of at most");
  }
  {
    ProcessLogs logs = small_two_thread_process(true);
    ProcessLogBuilder p(4242, kStartNs);
    Bytes info = varints({1, 1, 0, 1ull << 33});  // pid, ppid, empty exe, argc
    p.file.record(RecordType::ProcessInfo, info);
    logs.process = p.file.bytes();
    EXPECT_CONTAINS(read_error(logs), "process-info record: expected argc <= 4096");
  }
  {
    ProcessLogs logs = small_two_thread_process(true);
    ProcessLogBuilder p(4242, kStartNs);
    p.info({});
    p.modules_begin(0, 1ull << 20);
    logs.process = p.file.bytes();
    EXPECT_CONTAINS(read_error(logs), "modules-begin record: expected count <= 65536");
  }
  {
    ProcessLogs logs = small_two_thread_process(true);
    ProcessLogBuilder p(4242, kStartNs);
    p.info({});
    p.modules_begin(0, 1);
    p.file.record(RecordType::Module, varints({0, 0, 0, 65}));
    logs.process = p.file.bytes();
    EXPECT_CONTAINS(read_error(logs), "module record: expected nsegs <= 64");
  }
}

TEST(Damage, FramingErrors) {
  {
    ThreadLogBuilder t(4242, 4243, kStartNs);
    t.file.raw_record(0x42, 0, {});
    EXPECT_EQ(read_error(with_thread(t)),
              "thread.4243.gmh: offset 64: expected a record header, found unknown record type "
              "0x42");
  }
  {
    ThreadLogBuilder t(4242, 4243, kStartNs);
    uint8_t bad[] = {static_cast<uint8_t>(RecordType::Stack), 3, 0, 0, 0, 0};
    t.file.raw(bad);
    EXPECT_CONTAINS(read_error(with_thread(t)), "stack record: expected 0 in the header's length");
  }
  {
    // A note whose payload runs into the first chunk's seal (format version 7: records end 8
    // bytes before the chunk boundary).
    ThreadLogBuilder t(4242, 4243, kStartNs);
    Bytes payload(4020, 'x');
    t.file.raw_record(static_cast<uint8_t>(RecordType::Note), 4020, payload);
    EXPECT_EQ(read_error(with_thread(t)),
              "thread.4243.gmh: offset 64: note record: expected to end by the chunk boundary at "
              "4088, its 4020-byte payload ends at 4090");
  }
  {
    // The same running past the chunk into the next: the chunk has no valid seal, so it is not
    // read at all (a damaged chunk is a warning: what came before it is used), and the next,
    // an unsealed tail of note bytes, is no better.
    ThreadLogBuilder t(4242, 4243, kStartNs);
    Bytes payload(5000, 'x');
    t.file.raw_record(static_cast<uint8_t>(RecordType::Note), 5000, payload);
    ProcessLogs logs = with_thread(t);
    ProcessReader r = read_in_memory(logs);
    (void)collect_events(r);
    ASSERT_EQ(r.warnings().size(), 2u);
    EXPECT_EQ(r.warnings()[0].to_string(),
              "thread.4243.gmh: offset 0: chunk at offset 0 (4096 bytes) is damaged: its seal at "
              "offset 4088 is neither empty nor a seal; not read");
    EXPECT_EQ(r.warnings()[1].to_string(),
              "thread.4243.gmh: offset 4096: chunk at offset 4096 (974 bytes) is damaged: at "
              "offset 4096, expected a record header, found unknown record type 0x78; not read");
    EXPECT_EQ(r.damaged_chunks(), 2u);
    EXPECT_EQ(r.damaged_bytes(), 4096u + 974u);
  }
  {
    ThreadLogBuilder t(4242, 4243, kStartNs);
    t.note(std::string(4012, 'x'));
    ASSERT_EQ(t.file.bytes().size(), 4084u);
    uint8_t hdr[] = {static_cast<uint8_t>(RecordType::Note), 0, 1, 0};  // 6-byte header at 4084
    t.file.raw(hdr);
    EXPECT_CONTAINS(read_error(with_thread(t)),
                    "offset 4084: note record: header crosses the chunk boundary at 4088");
  }
}

// A version-8 event record whose head stores nothing optional.
constexpr auto kEventRecord = static_cast<RecordType>(format::kEventTypeBase);

TEST(Damage, EventErrors) {
  {
    ThreadLogBuilder t(4242, 4243, kStartNs);
    uint8_t one[] = {1};  // the api, no time
    t.file.record(kEventRecord, one);
    EXPECT_EQ(read_error(with_thread(t)),
              "thread.4243.gmh: offset 64: event record: payload malformed (expected 2.." +
                  std::to_string(format::kMaxEventPayload) + " bytes, got 1)");
  }
  {
    ThreadLogBuilder t(4242, 4243, kStartNs);
    uint8_t bad_memory[] = {1, 0, format::kHasMemory, 9};  // api, time, fields, memory 9
    t.file.record(static_cast<RecordType>(format::kEventTypeBase | format::kNewFields), bad_memory);
    EXPECT_CONTAINS(read_error(with_thread(t)),
                    "event record: payload malformed (4 bytes do not decode as an event)");
  }
  {
    // Version 8 writes events with their head in the record type: a bare type 1 is damage.
    ThreadLogBuilder t(4242, 4243, kStartNs);
    uint8_t event[] = {1, 1, 0, 0, 0, 0};
    t.file.record(RecordType::Event, event);
    EXPECT_CONTAINS(read_error(with_thread(t)), "unknown record type 0x1");
  }
  {
    ThreadLogBuilder t(4242, 4243, kStartNs);
    t.event(make_event(ApiId::cudaFree, 1, kStartNs, 5));
    EXPECT_CONTAINS(read_error(with_thread(t)),
                    "event record: expected a stack id recorded earlier in this file (1..0 or 0), "
                    "got 5");
  }
  {
    ThreadLogBuilder t(4242, 4243, kStartNs);
    t.file.record(RecordType::Stack, varints({2, 0, 0}));
    EXPECT_CONTAINS(read_error(with_thread(t)), "stack record: expected id 1");
  }
  {
    // encode_event's unsigned delta wraps when seq goes backwards; the reader must notice.
    ThreadLogBuilder t(4242, 4243, kStartNs);
    t.event(make_event(ApiId::cudaFree, 10, kStartNs));
    t.event(make_event(ApiId::cudaFree, 5, kStartNs));
    EXPECT_CONTAINS(read_error(with_thread(t)),
                    "offset 69: event record: expected seq > 10, got 5");
  }
  {
    ProcessLogs logs = small_two_thread_process(true);
    ThreadLogBuilder t(4242, 4245, kStartNs);
    t.event(make_event(ApiId::cudaFree, 3, kStartNs));
    logs.threads.push_back({4245, t.file.bytes()});
    EXPECT_CONTAINS(read_error(logs), "seq 3 also appears in thread.");
  }
  {
    // The twin of a seq sits in another file while the first file goes on with the next seqs:
    // the merge must stop at the twin, not run on through the first file.
    ProcessLogs logs = small_two_thread_process(true);
    logs.threads.clear();
    ThreadLogBuilder a(4242, 4250, kStartNs), b(4242, 4251, kStartNs);
    for (uint64_t seq = 1; seq <= 4; ++seq) a.event(make_event(ApiId::cudaFree, seq, kStartNs));
    b.event(make_event(ApiId::cudaFree, 2, kStartNs));
    logs.threads.push_back({4250, a.file.bytes()});
    logs.threads.push_back({4251, b.file.bytes()});
    EXPECT_CONTAINS(read_error(logs), "thread.4251.gmh: offset ");
    EXPECT_CONTAINS(read_error(logs), "seq 2 also appears in thread.4250.gmh");
  }
}

// Two files whose heads both hold the seq after the one just delivered (3 after 2): the merge
// takes the first file's, then the second's is the duplicate, as the heap found it. The same
// with seventeen more files, beyond the scan's 16 (the heap then merges).
TEST(Damage, TwoHeadsHoldingTheNextSeqIsADuplicate) {
  for (uint64_t more : {0, 17}) {
    ProcessLogs logs = small_two_thread_process(true);
    logs.threads.clear();
    ThreadLogBuilder a(4242, 4250, kStartNs), b(4242, 4251, kStartNs);
    for (uint64_t seq : {1, 3}) a.event(make_event(ApiId::cudaFree, seq, kStartNs));
    for (uint64_t seq : {2, 3}) b.event(make_event(ApiId::cudaFree, seq, kStartNs));
    logs.threads.push_back({4250, a.file.bytes()});
    logs.threads.push_back({4251, b.file.bytes()});
    for (uint64_t k = 0; k < more; ++k) {
      ThreadLogBuilder t(4242, 4260 + k, kStartNs);
      t.event(make_event(ApiId::cudaFree, 100 + k, kStartNs));
      logs.threads.push_back({4260 + k, t.file.bytes()});
    }
    EXPECT_CONTAINS(read_error(logs), "thread.4251.gmh: offset ");
    EXPECT_CONTAINS(read_error(logs), "seq 3 also appears in thread.4250.gmh");
  }
}

// The merge's duplicate test compares each event's seq with the last one delivered, 0 before the
// first: it relies on no file's event having seq 0.
TEST(Damage, NoEventHasSeqZero) {
  ProcessLogs logs = small_two_thread_process(true);
  ThreadLogBuilder t(4242, 4245, kStartNs);
  t.event(make_event(ApiId::cudaFree, 0, kStartNs));
  logs.threads.insert(logs.threads.begin(), {4245, t.file.bytes()});
  EXPECT_CONTAINS(read_error(logs), "thread.4245.gmh: offset ");
  EXPECT_CONTAINS(read_error(logs), "do not decode as an event");
}

TEST(Damage, RecordsInTheWrongFile) {
  {
    ThreadLogBuilder t(4242, 4243, kStartNs);
    t.file.record(RecordType::ProcessInfo, varints({1}));
    EXPECT_CONTAINS(read_error(with_thread(t)),
                    "expected a thread-file record (event, stack, py-code, note), found a process-info");
  }
  ProcessLogs logs = small_two_thread_process(true);
  ProcessLogBuilder p(4242, kStartNs);
  p.note("first");
  logs.process = p.file.bytes();
  EXPECT_CONTAINS(read_error(logs), "expected a process-info record first, found a note record");

  ProcessLogBuilder q(4242, kStartNs);
  q.info({});
  q.modules_begin(0, 2);
  q.module({"/a", "", 0, {}});
  q.note("in the middle");
  logs.process = q.file.bytes();
  EXPECT_CONTAINS(read_error(logs), "expected module record 2 of 2 (announced at offset");

  // The End record, though, may follow a cut snapshot (next test).
  ProcessLogBuilder m(4242, kStartNs);
  m.info({});
  m.module({"/a", "", 0, {}});
  logs.process = m.file.bytes();
  EXPECT_CONTAINS(read_error(logs), "expected a modules-begin record before this module record");

  ProcessLogBuilder e(4242, kStartNs);
  e.info({});
  uint8_t event[] = {1, 0};
  e.file.record(kEventRecord, event);
  logs.process = e.file.bytes();
  EXPECT_CONTAINS(read_error(logs),
                  "expected a process-file record (modules, note, nvml sample, end), found an");

  ProcessLogBuilder bad_end(4242, kStartNs);
  bad_end.info({});
  bad_end.file.record(RecordType::End, varints({4, 0, 0, 0, 0}));
  logs.process = bad_end.file.bytes();
  EXPECT_CONTAINS(read_error(logs), "end record: expected how = 1 (exit), 2 (_exit) or 3 (exec), got 4");
}

// When process.gmh cannot grow (disk full, a file-size limit), the writer stops in the middle of
// a module snapshot too and still writes its End record in the room it kept: the process reads,
// with the End record, and the cut snapshot is a warning, not an error that loses the report.
TEST(Damage, EndRecordAfterASnapshotCutByAFullDiskReadsWithAWarning) {
  ProcessLogs logs = small_two_thread_process(false);
  ProcessLogBuilder p(logs.pid, kStartNs);
  p.info({});
  p.snapshot(0, {{"/opt/bin/train", "", 0x400000, {{0, 0x2000, 5}}}});
  p.modules_begin(4, 3);
  p.module({"/usr/lib/libcudart.so.13", "", 0x7f0000000000, {{0, 0x10000, 5}}});
  p.end(format::EndHow::Exit, 0, 6, 5000000, true);
  logs.process = p.file.bytes();
  EXPECT_EQ(read_error(logs), "");
  ProcessReader r = read_in_memory(logs);
  collect_events(r);
  ASSERT_TRUE(r.end());
  EXPECT_EQ(r.end()->how, format::EndHow::Exit);
  std::string warnings;
  for (const auto& w : r.warnings()) warnings += w.to_string() + "\n";
  EXPECT_CONTAINS(warnings, "module snapshot announced 3 modules, only 1 were committed");
}

}  // namespace
}  // namespace gmemhook::test_logs

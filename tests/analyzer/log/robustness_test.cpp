// Logs cut at every byte and logs with random bit flips: the reader must use what was committed
// or report clear damage, and never crash, hang or allocate beyond what the input justifies.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "analyzer/log/reader.h"
#include "analyzer/log/record_cursor.h"
#include "log_builder.h"
#include "sample_logs.h"

namespace gmemhook::test_logs {
namespace {

using analysis::ProcessReader;
using analysis::ReadError;

struct Outcome {
  bool ok = false;
  std::string error;
  std::vector<SeenEvent> events;
  std::vector<analysis::ReadWarning> warnings;
  bool has_end = false;
};

Outcome read_all(const ProcessLogs& logs) {
  Outcome o;
  try {
    ProcessReader r = read_in_memory(logs);
    o.events = collect_events(r);
    o.warnings = r.warnings();
    o.has_end = r.end().has_value();
    o.ok = true;
  } catch (const ReadError& e) {
    o.error = e.what();
  }
  return o;
}

std::vector<SeenEvent> of_thread(const std::vector<SeenEvent>& all, uint64_t tid) {
  std::vector<SeenEvent> out;
  std::copy_if(all.begin(), all.end(), std::back_inserter(out),
               [&](const SeenEvent& e) { return e.tid == tid; });
  return out;
}

TEST(Truncation, ThreadFileCutAtEveryByteReadsAPrefix) {
  const ProcessLogs full = small_two_thread_process(true);
  const auto reference = read_all(full).events;
  ASSERT_EQ(reference.size(), 6u);
  for (size_t which = 0; which < full.threads.size(); ++which) {
    const uint64_t tid = full.threads[which].first;
    const auto expected = of_thread(reference, tid);
    const auto others_expected = [&] {
      auto v = reference;
      std::erase_if(v, [&](const SeenEvent& e) { return e.tid == tid; });
      return v;
    }();
    const size_t size = full.threads[which].second.size();
    for (size_t n = 0; n <= size; ++n) {
      SCOPED_TRACE("thread " + std::to_string(tid) + " cut at " + std::to_string(n));
      ProcessLogs logs = full;
      logs.threads[which].second.resize(n);
      Outcome o = read_all(logs);
      if (n > 0 && n < sizeof(format::FileHeader)) {
        // Less than a header is not something a writer leaves behind: damage, clearly said.
        ASSERT_FALSE(o.ok);
        EXPECT_NE(o.error.find("thread." + std::to_string(tid) +
                               ".gmh: offset 0: expected a "
                               "64-byte file header"),
                  std::string::npos)
            << o.error;
        continue;
      }
      ASSERT_TRUE(o.ok) << o.error;
      auto got = of_thread(o.events, tid);
      ASSERT_LE(got.size(), expected.size());
      EXPECT_TRUE(std::equal(got.begin(), got.end(), expected.begin()));
      auto others = o.events;
      std::erase_if(others, [&](const SeenEvent& e) { return e.tid == tid; });
      EXPECT_EQ(others, others_expected);
      if (n == size) {
        EXPECT_TRUE(o.warnings.empty());
      }
    }
  }
}

TEST(Truncation, ProcessFileCutAtEveryByte) {
  const ProcessLogs full = small_two_thread_process(true);
  const auto reference = read_all(full).events;
  // Where the ProcessInfo record ends: before that the process is unknown, which is an error.
  auto bytes = analysis::LogBytes::borrow(full.process, "process.gmh");
  analysis::RecordCursor cursor(bytes, *analysis::read_file_header(bytes, format::FileKind::Process));
  analysis::Record first;
  ASSERT_TRUE(cursor.next(&first));
  const size_t info_end = cursor.offset();

  for (size_t n = 0; n <= full.process.size(); ++n) {
    SCOPED_TRACE("process.gmh cut at " + std::to_string(n));
    ProcessLogs logs = full;
    logs.process.resize(n);
    Outcome o = read_all(logs);
    if (n < info_end) {
      ASSERT_FALSE(o.ok);
      EXPECT_EQ(o.error.rfind("process.gmh: offset ", 0), 0u) << o.error;
      continue;
    }
    ASSERT_TRUE(o.ok) << o.error;
    EXPECT_EQ(o.events, reference);
    EXPECT_EQ(o.has_end, n == full.process.size());
  }
}

// Flips `flips` random bits of one of the files; returns which file.
size_t flip_bits(ProcessLogs& logs, std::mt19937_64& rng, int flips) {
  size_t which = rng() % (1 + logs.threads.size());
  Bytes& b = which == 0 ? logs.process : logs.threads[which - 1].second;
  for (int i = 0; i < flips; ++i) b[rng() % b.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
  return which;
}

TEST(Corruption, RandomBitFlipsNeverCrash) {
  const ProcessLogs full = small_two_thread_process(true);
  std::mt19937_64 rng(20261129);
  std::map<std::string, int> kinds;  // how often each outcome happened, for the failure message
  for (int i = 0; i < 4000; ++i) {
    ProcessLogs logs = full;
    flip_bits(logs, rng, 1 + static_cast<int>(rng() % 4));
    Outcome o = read_all(logs);
    if (o.ok) {
      ++kinds["ok"];
      EXPECT_LE(o.events.size(), 6u);
    } else {
      ++kinds["error"];
      ASSERT_NE(o.error.find(".gmh"), std::string::npos) << o.error;
      ASSERT_NE(o.error.find(": offset "), std::string::npos) << o.error;
    }
  }
  EXPECT_GT(kinds["ok"], 0);
  EXPECT_GT(kinds["error"], 0);
}

// Without a checksum, single-bit flips changed reported numbers with exit 0 (46 of 150 tried by
// hand). In format version 7 every finished chunk carries a CRC32C seal: a flip anywhere in a
// sealed file, seal included, is reported, as a read error or a warning naming file and offset.
bool reported(const Outcome& o) {
  if (!o.ok) return o.error.find(": offset ") != std::string::npos;
  for (const auto& w : o.warnings)
    if (w.message.find("is damaged") != std::string::npos) return true;
  return false;
}

ProcessLogs sealed(ProcessLogs logs) {
  seal_file_end(logs.process, 4096);
  for (auto& [tid, bytes] : logs.threads) seal_file_end(bytes, 4096);
  return logs;
}

TEST(Checksum, EveryBitFlipInASealedFileIsReported) {
  const ProcessLogs full = sealed(small_two_thread_process(true));
  const Outcome clean = read_all(full);
  ASSERT_TRUE(clean.ok) << clean.error;
  ASSERT_EQ(clean.events.size(), 6u);
  ASSERT_TRUE(clean.warnings.empty());
  int flips = 0, silent = 0;
  for (size_t which = 0; which <= full.threads.size(); ++which) {
    const size_t size = which == 0 ? full.process.size() : full.threads[which - 1].second.size();
    for (size_t byte = 0; byte < size; ++byte)
      for (int bit = 0; bit < 8; ++bit) {
        ProcessLogs logs = full;
        Bytes& b = which == 0 ? logs.process : logs.threads[which - 1].second;
        b[byte] ^= static_cast<uint8_t>(1u << bit);
        ++flips;
        if (!reported(read_all(logs))) {
          ++silent;
          ADD_FAILURE() << "flip of bit " << bit << " at offset " << byte << " of file " << which
                        << " was not reported";
          if (silent > 5) return;
        }
      }
  }
  EXPECT_EQ(silent, 0) << "of " << flips << " single-bit flips";
  EXPECT_GT(flips, 4000);  // three files of a few hundred bytes, every bit
}

// A thread file of several chunks, each sealed when the next began, the last one cut and sealed
// by finish(): a flip in any chunk is reported, the chunks before the damaged one are read, and
// the events of the chunks after it are counted (format 8 stores them as differences from the
// lost ones, so they cannot be decoded), never silently dropped.
TEST(Checksum, ADamagedChunkIsSkippedAndTheEventsAfterItCounted) {
  ProcessLogs logs = sealed(small_two_thread_process(true));
  ThreadLogBuilder big(logs.pid, 4250, kStartNs);
  uint32_t s = big.stack({0x401000});
  std::vector<size_t> chunk_of;  // of each event
  for (uint64_t i = 0; i < 2000; ++i) {
    auto ev = make_event(format::ApiId::cudaMalloc, 100 + i, kStartNs + 10000000 + i, s);
    ev.f.set_address(0x7f2000000000 + i * 4096);
    ev.f.set_size(4096);
    big.event(ev);
    chunk_of.push_back((big.file.bytes().size() - 1) / 4096);
  }
  big.file.seal_cut();
  const size_t chunks = (big.file.bytes().size() + 4095) / 4096;
  ASSERT_GE(chunks, 3u);
  logs.threads.push_back({4250, big.file.bytes()});
  const Outcome clean = read_all(logs);
  ASSERT_TRUE(clean.ok) << clean.error;
  ASSERT_EQ(clean.events.size(), 2006u);

  std::mt19937_64 rng(15);
  for (int i = 0; i < 400; ++i) {
    ProcessLogs damaged = logs;
    Bytes& b = damaged.threads.back().second;
    const size_t at = rng() % b.size();
    b[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
    Outcome o = read_all(damaged);
    ASSERT_TRUE(reported(o)) << "offset " << at;
    if (!o.ok) continue;  // e.g. the file header's magic: the whole run is refused
    ProcessReader r = read_in_memory(damaged);
    (void)collect_events(r);
    const size_t chunk = at / 4096;
    const auto got = of_thread(o.events, 4250);
    const auto want = of_thread(clean.events, 4250);
    ASSERT_LE(got.size(), want.size());
    // Whole chunks before the damaged one are read; nothing from it or after it.
    EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin()));
    if (chunk == 0) {
      EXPECT_TRUE(got.empty());
      continue;  // a flipped chunk size or largest chunk size moves every later boundary
    }
    size_t before = 0, after = 0;
    for (size_t c : chunk_of) {
      if (c < chunk) ++before;
      if (c > chunk) ++after;
    }
    EXPECT_EQ(got.size(), before) << "offset " << at;
    EXPECT_EQ(r.undecoded_events(), after) << "offset " << at;
    EXPECT_EQ(r.damaged_chunks(), 1u);
    bool named = false;
    for (const auto& w : o.warnings)
      named = named || (w.file == "thread.4250.gmh" && w.offset == chunk * 4096);
    EXPECT_TRUE(named) << "offset " << at;
  }
}

// One thread, every seq its own: the report says what the damaged chunk cost, exactly.
TEST(Checksum, TheReportSaysWhatADamagedChunkCost) {
  ProcessLogs logs = sealed(small_two_thread_process(true));
  logs.threads.clear();
  ThreadLogBuilder t(logs.pid, 4243, kStartNs);
  std::vector<size_t> chunk_of;
  const uint32_t s = t.stack({0x401000});
  for (uint64_t seq = 1; seq <= 1500; ++seq) {
    auto ev = make_event(format::ApiId::cudaMalloc, seq, kStartNs + seq * 1000, s);
    ev.f.set_address(0x7f2000000000 + seq * 4096);
    ev.f.set_size(4096);
    t.event(ev);
    chunk_of.push_back((t.file.bytes().size() - 1) / 4096);
  }
  t.note("after the damage");
  t.file.seal_cut();
  ASSERT_GE(chunk_of.back(), 2u);
  logs.threads.push_back({4243, t.file.bytes()});
  ProcessLogBuilder p(logs.pid, kStartNs);
  analysis::ProcessInfo info;
  info.pid = logs.pid;
  info.exe = "/opt/bin/train";
  p.info(info);
  p.end(format::EndHow::Exit, 0, 1500, 5000000, true);
  p.file.seal_cut();
  logs.process = p.file.bytes();

  logs.threads[0].second[4096 + 100] ^= 4;  // in the second chunk
  ProcessReader r = read_in_memory(logs);
  std::vector<std::string> notes;
  struct Notes : analysis::EventVisitor {
    std::vector<std::string>* out;
    void on_event(const format::Event&, const analysis::ThreadFileReader&) override {}
    void on_note(const analysis::Note& n, const analysis::ThreadFileReader&) override {
      out->push_back(n.text);
    }
  } v;
  v.out = &notes;
  r.read_events(v);
  size_t in_chunk0 = 0, in_chunk1 = 0;
  for (size_t c : chunk_of) in_chunk0 += c == 0, in_chunk1 += c == 1;
  const uint64_t after = 1500 - in_chunk0 - in_chunk1;
  EXPECT_EQ(r.events_read(), in_chunk0);
  EXPECT_EQ(r.undecoded_events(), after);
  EXPECT_EQ(notes, std::vector<std::string>{"after the damage"});
  EXPECT_EQ(analysis::incomplete_log_message(r),
            "log incomplete: 1 damaged chunk not read (4096 bytes, see the warnings); " +
                std::to_string(after) +
                " events after it not decoded (stored as differences from its records); \u2265 " +
                std::to_string(in_chunk1) + " events missing after event " +
                std::to_string(in_chunk0));
  const auto warnings = r.warnings();
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0].to_string(),
            "thread.4243.gmh: offset 4096: chunk at offset 4096 (4096 bytes) is damaged: its seal "
            "at offset 8184 says CRC32C " +
                warnings[0].message.substr(warnings[0].message.find("0x"), 10) +
                warnings[0].message.substr(warnings[0].message.find(", its bytes give")));
  EXPECT_EQ(warnings[1].to_string(),
            "thread.4243.gmh: offset 4096: " + std::to_string(after) +
                " events after the damaged chunk not decoded: each is stored as differences from "
                "the file's earlier events (seq, time, address), and the lost chunk held some of "
                "them");
}

// The process file's records stand alone: after a damaged chunk the rest reads as written,
// the End record (and what the recorder could not write) included.
TEST(Checksum, AProcessFileReadsOnAfterADamagedChunk) {
  ProcessLogs logs = sealed(small_two_thread_process(true));
  ProcessLogBuilder p(logs.pid, kStartNs);
  analysis::ProcessInfo info;
  info.pid = logs.pid;
  info.exe = "/opt/bin/train";
  p.info(info);
  std::vector<analysis::Module> modules;
  for (int i = 0; i < 60; ++i)
    modules.push_back(
        {"/usr/lib/libfoo" + std::to_string(i) + ".so", "", 0x7f0000000000, {{0, 0x1000, 5}}});
  // About 2.6 KiB each: the second spans chunks 0 and 1, the fifth begins in chunk 2.
  for (uint64_t seq : {0, 1, 2, 3, 5}) p.snapshot(seq, modules);
  p.note("late note");
  p.end(format::EndHow::Exit, 0, 6, 5000000, true);
  p.file.seal_cut();
  ASSERT_GT(p.file.bytes().size(), 2 * 4096u);
  logs.process = p.file.bytes();
  logs.process[4096 + 10] ^= 1;
  ProcessReader r = read_in_memory(logs);
  (void)collect_events(r);
  ASSERT_TRUE(r.end().has_value());
  EXPECT_EQ(r.end()->last_seq, 6u);
  EXPECT_EQ(r.notes().back().text, "late note");
  EXPECT_EQ(r.damaged_chunks(), 1u);
  ASSERT_FALSE(r.module_snapshots().empty());
  const auto& last = r.module_snapshots().back();
  EXPECT_EQ(last.seq, 5u);
  EXPECT_TRUE(last.complete());
  EXPECT_EQ(analysis::incomplete_log_message(r),
            "log incomplete: 1 damaged chunk not read (4096 bytes, see the warnings)");
}

TEST(Checksum, UnsealedTailIsReadWithoutACheck) {
  // The live tail (or a process killed mid-chunk): no seal yet, read as before version 7.
  ProcessLogs logs = small_two_thread_process(true);
  for (auto& [tid, bytes] : logs.threads) bytes.resize(4096, 0);  // a writer's whole first chunk
  const Outcome o = read_all(logs);
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_EQ(o.events.size(), 6u);
  EXPECT_TRUE(o.warnings.empty());
  // The reader says which records no seal vouched for; once sealed, none.
  ProcessReader r = read_in_memory(logs);
  (void)collect_events(r);
  const auto unsealed = r.unsealed_chunks();
  ASSERT_EQ(unsealed.size(), 3u);
  EXPECT_EQ(unsealed[0].file, "process.gmh");
  EXPECT_EQ(unsealed[1].file, "thread.4243.gmh");
  EXPECT_EQ(unsealed[1].chunk.offset, 0u);
  const ProcessLogs unpadded = small_two_thread_process(true);
  EXPECT_EQ(unsealed[1].chunk.bytes, unpadded.threads[0].second.size() - 64) << "records only";
  // A ChunkEnd sends the reader to the chunk's end, past a cut file's last byte: the bytes said
  // to be read unchecked are still the file's (the fuzzer found them larger).
  ProcessLogs ended = small_two_thread_process(true);
  Bytes& t = ended.threads[0].second;
  const size_t records = t.size() - 64;
  t.push_back(static_cast<uint8_t>(format::RecordType::ChunkEnd));
  t.push_back(0);
  ProcessReader e = read_in_memory(ended);
  (void)collect_events(e);
  ASSERT_EQ(e.unsealed_chunks().size(), 3u);
  EXPECT_EQ(e.unsealed_chunks()[1].chunk.bytes, records + 2);
  ProcessLogs done = sealed(small_two_thread_process(true));
  ProcessReader s = read_in_memory(done);
  (void)collect_events(s);
  EXPECT_TRUE(s.unsealed_chunks().empty());
}

// gmemhook top follows files while they are written: a seal not there yet is "not yet", never
// damage. (The writer stores it with one aligned 8-byte store, so it is all there or not at all.)
TEST(Checksum, LiveReaderTakesAMissingSealForNotYet) {
  ThreadLogBuilder t(4242, 4243, kStartNs);
  for (uint64_t i = 1; i <= 1600; ++i) t.event(make_event(format::ApiId::cudaFree, i, kStartNs + i));
  Bytes bytes = t.file.bytes();
  ASSERT_GT(bytes.size(), 4096u);
  std::fill(bytes.begin() + 4096 - format::kSealSize, bytes.begin() + 4096, 0);  // not sealed yet
  auto file = analysis::LogBytes::borrow(bytes, "thread.4243.gmh");
  const auto header = *analysis::read_file_header(file, format::FileKind::Thread);
  auto count = [&](bool live) {
    analysis::RecordCursor cursor(file, header);
    cursor.set_live(live);
    analysis::Record r;
    size_t n = 0;
    while (cursor.next(&r)) ++n;
    return std::make_pair(n, cursor.end());
  };
  EXPECT_EQ(count(true), std::make_pair(size_t{1600}, analysis::StreamEnd::EndOfFile));
  // Read afterwards, a chunk left unsealed with another after it is damage: the writer seals
  // each chunk before it makes the next.
  EXPECT_EQ(count(false), std::make_pair(size_t{0}, analysis::StreamEnd::DamagedChunk));
}

TEST(Checksum, AVersionFieldFlippedToAnOlderVersionIsReported) {
  ProcessLogs logs = small_two_thread_process(true);
  Bytes& b = logs.threads[0].second;
  b.resize(4096 - format::kSealSize, 0);
  seal_file_end(b, 4096);
  ASSERT_EQ(b.size(), 4096u);
  reinterpret_cast<format::FileHeader*>(b.data())->version = format::kFirstSealedVersion - 1;
  const Outcome o = read_all(logs);
  ASSERT_FALSE(o.ok);
  EXPECT_NE(o.error.find("version-7 seals"), std::string::npos) << o.error;
}

TEST(Corruption, RandomRecordBytesNeverCrash) {
  // Valid headers, random records: this reaches the decoders far more often than bit flips.
  std::mt19937_64 rng(7);
  const ProcessLogs full = small_two_thread_process(true);
  for (int i = 0; i < 3000; ++i) {
    ProcessLogs logs = full;
    Bytes& b = logs.threads[i % 2].second;
    b.resize(sizeof(format::FileHeader));
    size_t n = rng() % 600;
    for (size_t k = 0; k < n; ++k) {
      // Mostly small values, like real varints and record types.
      uint64_t x = rng();
      b.push_back(static_cast<uint8_t>(x % 4 == 0 ? x >> 8 : (x >> 8) % 8));
    }
    Outcome o = read_all(logs);
    if (!o.ok) {
      ASSERT_NE(o.error.find(": offset "), std::string::npos) << o.error;
    }
  }
}

}  // namespace
}  // namespace gmemhook::test_logs

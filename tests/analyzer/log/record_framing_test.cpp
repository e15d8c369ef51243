// RecordCursor::next_event, the inline framing of the usual event record, against next(), which
// frames every record: on sound files and on files damaged in every way framing can see (bytes
// changed under a valid seal, cut files, unsealed tails, bad seals), both must give the same
// records, the same end and the same errors, whichever of them reads each record.
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "analyzer/log/record_cursor.h"
#include "gmemhook/framing.h"
#include "log_builder.h"

namespace gmemhook::test_logs {
namespace {

constexpr uint32_t kChunk = 4096;

struct Walk {
  std::vector<std::tuple<uint8_t, uint64_t, const uint8_t*, size_t>> records;
  std::vector<analysis::StreamEnd> ends;
  std::string error;
};

// Reads the whole file, going on past damaged chunks as the thread file reader does.
Walk walk(const analysis::LogBytes& file, bool quick) {
  Walk w;
  analysis::RecordCursor cursor(file, *analysis::read_file_header(file, format::FileKind::Thread));
  try {
    for (;;) {
      analysis::Record r;
      if ((quick && cursor.next_event(&r)) || cursor.next(&r)) {
        w.records.emplace_back(r.type, r.offset, r.payload.data(), r.payload.size());
        continue;
      }
      w.ends.push_back(cursor.end());
      if (cursor.end() != analysis::StreamEnd::DamagedChunk) break;
      cursor.skip_damaged_chunk();
    }
  } catch (const analysis::ReadError& e) {
    w.error = e.what();
  }
  return w;
}

// Seals every full chunk again, so bytes changed inside one reach the framing.
void reseal(Bytes& b) {
  for (size_t start = 0; start + kChunk <= b.size(); start += kChunk)
    format::seal_chunk(b.data() + start, format::record_area(kChunk));
}

TEST(RecordFraming, QuickEventsAsNextFramesThem) {
  std::mt19937_64 rng(21);
  ThreadLogBuilder t(4242, 4243, 1000000, kChunk);
  uint64_t seq = 0;
  for (int i = 0; i < 6000; ++i) {
    if (i % 97 == 0) t.stack({0x1000u + static_cast<uint64_t>(i), 0x2000, 0x3000});
    if (i % 401 == 0) t.note("a note between events");
    format::Event ev = make_event(i % 2 ? format::ApiId::cudaFree : format::ApiId::cudaMalloc,
                                  seq += 1 + rng() % 3, 1000000 + 100 * static_cast<uint64_t>(i));
    ev.f.set_address(rng() % (1ull << (8 + rng() % 48)));
    if (i % 2 == 0) ev.f.set_size(rng() % (1ull << (rng() % 40)));
    t.event(ev);
  }
  const Bytes sound = t.file.bytes();
  ASSERT_GT(sound.size(), 15 * kChunk);
  int errors = 0, damaged_chunks = 0;
  for (int round = 0; round < 600; ++round) {
    Bytes b = sound;
    const int how = round % 6;
    if (how >= 1) b[64 + rng() % (b.size() - 64)] ^= static_cast<uint8_t>(1u << (rng() % 8));
    if (how >= 2 && how <= 4) reseal(b);  // the change passes the seal: framing sees it
    if (how == 3) b.resize(64 + rng() % (b.size() - 64));
    if (how == 4) seal_file_end(b, kChunk);
    if (how == 5) b.resize(64 + rng() % (b.size() - 64));
    const auto file = analysis::LogBytes::borrow(b, "thread.4243.gmh");
    const Walk slow = walk(file, false);
    const Walk quick = walk(file, true);
    ASSERT_EQ(quick.records, slow.records) << "round " << round;
    ASSERT_EQ(quick.ends, slow.ends) << "round " << round;
    ASSERT_EQ(quick.error, slow.error) << "round " << round;
    errors += !slow.error.empty();
    for (analysis::StreamEnd e : slow.ends)
      damaged_chunks += e == analysis::StreamEnd::DamagedChunk;
  }
  // The rounds did reach both kinds of damage.
  EXPECT_GT(errors, 20);
  EXPECT_GT(damaged_chunks, 20);
}

}  // namespace
}  // namespace gmemhook::test_logs

// Analyzer throughput: writes a synthetic run (by default 10 million events from 8 threads over
// 1 000 distinct stacks, in the recorder's on-disk format), then times the reader alone and the
// summary, leaks, peak and fragmentation reports on it, best of N runs, and prints events/s.
// Symbolization is part of the timing but cheap here: the stacks point into a module that does
// not exist, so each frame is looked up once and degrades to module+offset.
//
// Wall and CPU time are both printed: on a shared machine the CPU time is the steadier one.
// --only WHAT times only the rows whose name starts with WHAT (one pass to profile, e.g. under
// callgrind: `--only reader`).
// Usage: analyzer_bench [--events N] [--threads T] [--stacks S] [--repeat R] [--dir DIR] [--keep]
//                       [--only WHAT]
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/log/reader.h"
#include "analyzer/reports/report.h"
#include "gmemhook/api_table.h"
#include "gmemhook/codec.h"
#include "gmemhook/format.h"
#include "gmemhook/framing.h"

namespace fs = std::filesystem;
namespace fmt = gmemhook::format;
using gmemhook::format::ApiId;

namespace {

constexpr uint32_t kChunk = 1u << 20;  // what the recorder uses for thread files
constexpr uint32_t kPid = 777;
constexpr uint64_t kStart = 5000000000000ull;
constexpr uint64_t kModuleBias = 0x555500000000ull;
constexpr uint64_t kModuleSize = 64u << 20;

struct Rng {
  uint64_t s;
  uint64_t next() {  // splitmix64
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return next() % n; }
};

// Writes one log file chunk by chunk, framed by framing.h as the recorder frames it.
class ChunkedFile {
 public:
  ChunkedFile(const fs::path& path, fmt::FileKind kind, uint64_t tid)
      : out_(path, std::ios::binary), chunk_(kChunk, 0) {
    const uint64_t realtime_ns = 1796000000ull * 1000000000ull;
    used_ = fmt::put_file_header(chunk_.data(), {.kind = static_cast<uint16_t>(kind),
                                                 .chunk_size = kChunk,
                                                 .tid = tid,
                                                 .start_monotonic_ns = kStart,
                                                 .start_realtime_ns = realtime_ns,
                                                 .pid = kPid});
  }
  // Finished the way the recorder finishes a file (format.h, "Chunk seals"): the last chunk is
  // cut to its records, zeros up to a multiple of 8, and its seal. A whole zero-padded chunk
  // here would add up to a MiB per file that no recorded log has.
  ~ChunkedFile() {
    const size_t at = fmt::cut_seal_offset(used_);
    fmt::seal_chunk(chunk_.data(), at);
    out_.write(reinterpret_cast<const char*>(chunk_.data()),
               static_cast<std::streamsize>(at + fmt::kSealSize));
  }

  void record(fmt::RecordType type, const uint8_t* payload, size_t n) {
    const auto t = static_cast<uint8_t>(type);
    if (used_ + fmt::record_header_size(t) + n > fmt::record_area(kChunk)) {
      fmt::end_chunk(chunk_.data(), used_, kChunk);
      out_.write(reinterpret_cast<const char*>(chunk_.data()), kChunk);
      std::fill(chunk_.begin(), chunk_.end(), 0);
      used_ = 0;
    }
    used_ += fmt::put_record(chunk_.data() + used_, t, payload, static_cast<uint32_t>(n));
  }
  // A record whose payload codec.h encodes, as the recorder does.
  template <class Payload>
  void record(const Payload& payload) {
    std::vector<uint8_t> bytes(fmt::payload_size(payload));
    fmt::encode(bytes.data(), payload);
    record(Payload::kType, bytes.data(), bytes.size());
  }

 private:
  std::ofstream out_;
  std::vector<uint8_t> chunk_;
  size_t used_;
};

struct Thread {
  std::unique_ptr<ChunkedFile> file;
  fmt::EventDeltas deltas{0, kStart, 0};
  std::vector<uint32_t> file_id;  // global stack index -> id in this file (0: not written yet)
  uint32_t next_id = 1;
  int32_t device = 0;
};

struct Live {
  uint64_t address;
  ApiId free_api;
};

void write_process_file(const fs::path& dir, uint64_t events, uint64_t end_ns) {
  ChunkedFile f(dir / fmt::kProcessFileName, fmt::FileKind::Process, 0);
  const std::string_view argv[] = {"app"};
  f.record(
      fmt::ProcessInfoPayload{kPid, 1, "/opt/bench/app", argv, "0", "0", "1", "bench", kChunk});
  f.record(fmt::ModulesBeginPayload{0, 1});
  const fmt::Segment segments[] = {{0, kModuleSize, 5}};
  f.record(fmt::ModulePayload{"/opt/bench/app-that-is-not-here", "", kModuleBias, segments});
  f.record(fmt::EndPayload{fmt::EndHow::Exit, 0, events, end_ns - kStart, true});
}

// The run: `events` events, each thread using an overlapping quarter of the stacks.
fs::path generate(const fs::path& run, uint64_t events, unsigned threads, unsigned stacks) {
  const fs::path dir = run / ("app." + std::to_string(kPid));
  fs::create_directories(dir);
  Rng rng{42};

  std::vector<std::vector<uint64_t>> frames(stacks);
  for (unsigned s = 0; s < stacks; ++s) {
    Rng r{1000 + s};
    const size_t depth = 12 + r.below(12);
    for (size_t i = 0; i + 2 < depth; ++i) frames[s].push_back(kModuleBias + r.below(kModuleSize));
    frames[s].push_back(kModuleBias + 0x1234);  // main
    frames[s].push_back(kModuleBias + 0x1000);  // _start
  }

  std::vector<Thread> ts(threads);
  for (unsigned t = 0; t < threads; ++t) {
    ts[t].file = std::make_unique<ChunkedFile>(
        dir / ("thread." + std::to_string(kPid + 1 + t) + fmt::kFileSuffix), fmt::FileKind::Thread,
        kPid + 1 + t);
    ts[t].file_id.assign(stacks, 0);
    ts[t].device = static_cast<int32_t>(t % 2);
  }

  std::vector<Live> live;
  uint64_t next_address = 0x7f0000000000ull;
  uint64_t time = kStart + 1000;
  uint8_t ev_buf[fmt::kMaxEventPayload];
  for (uint64_t seq = 1; seq <= events; ++seq) {
    Thread& t = ts[rng.below(threads)];
    const size_t t_index = static_cast<size_t>(&t - ts.data());
    time += 50 + rng.below(100);
    fmt::Event ev;
    ev.seq = seq;
    ev.time_ns = time;
    // Keep about 20 000 allocations live, drifting up and down.
    const bool alloc = live.empty() || rng.below(100) < (live.size() < 20000 ? 55u : 45u);
    if (alloc) {
      const unsigned s =
          static_cast<unsigned>((t_index * stacks / threads + rng.below(stacks / 4 + 1)) % stacks);
      if (!t.file_id[s]) {
        t.file->record(fmt::StackPayload{t.next_id, frames[s], {}});  // no Python frames
        t.file_id[s] = t.next_id++;
      }
      ev.stack_id = t.file_id[s];
      const uint64_t kind = rng.below(100);
      ApiId api = ApiId::cudaMalloc, free_api = ApiId::cudaFree;
      if (kind >= 95)
        api = ApiId::cudaMallocHost, free_api = ApiId::cudaFreeHost;
      else if (kind >= 85)
        api = ApiId::cuMemAlloc_v2, free_api = ApiId::cuMemFree_v2;
      else if (kind >= 70)
        api = ApiId::cudaMallocAsync, free_api = ApiId::cudaFreeAsync;
      ev.api = static_cast<uint8_t>(api);
      const uint64_t size = (uint64_t{1} << (9 + rng.below(16))) + rng.below(512);
      ev.f.set_size(size);
      ev.f.set_device(t.device);
      if (api == ApiId::cudaMallocAsync) ev.f.set_stream(0x1000 + t_index);
      if (rng.below(1000) == 0) {
        ev.result = 2;  // out of memory
        ev.f.set_address(0);
      } else {
        ev.f.set_address(next_address);
        live.push_back({next_address, free_api});
        next_address += (size + 4095) / 4096 * 4096 + 4096 * rng.below(4);
      }
    } else {
      const size_t i = rng.below(live.size());
      const Live victim = live[i];
      live[i] = live.back();
      live.pop_back();
      ev.api = static_cast<uint8_t>(victim.free_api);
      ev.f.set_address(victim.address);
      if (victim.free_api == ApiId::cudaFreeAsync) ev.f.set_stream(0x1000 + t_index);
    }
    const fmt::EncodedEvent encoded = fmt::encode_event(ev_buf, ev, t.deltas);
    t.file->record(encoded.type, ev_buf, encoded.size);
  }
  ts.clear();  // flushes the thread files
  write_process_file(dir, events, time + 1000);
  return dir;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// CPU time of this process: on a loaded machine the wall clock also counts other programs' turns.
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

struct Counter : gmemhook::analysis::EventVisitor {
  uint64_t n = 0;
  bool announce = false;  // whether the merge calls upcoming() (which does nothing here)
  void on_event(const fmt::Event&, const gmemhook::analysis::ThreadFileReader&) override { ++n; }
  bool wants_upcoming() const override { return announce; }
};

}  // namespace

int main(int argc, char** argv) {
  uint64_t events = 10000000;
  unsigned threads = 8, stacks = 1000, repeat = 3;
  fs::path run;
  bool keep = false;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--events")
      events = std::strtoull(next(), nullptr, 10);
    else if (a == "--threads")
      threads = static_cast<unsigned>(std::atoi(next()));
    else if (a == "--stacks")
      stacks = static_cast<unsigned>(std::atoi(next()));
    else if (a == "--repeat")
      repeat = static_cast<unsigned>(std::atoi(next()));
    else if (a == "--dir")
      run = next();
    else if (a == "--keep")
      keep = true;
    else if (a == "--only")
      only = next();
    else {
      std::fprintf(stderr,
                   "usage: analyzer_bench [--events N] [--threads T] [--stacks S] [--repeat R] "
                   "[--dir DIR] [--keep] [--only WHAT]\n");
      return 2;
    }
  }
  if (threads == 0 || stacks < 4 || events == 0 || repeat == 0) return 2;
  const bool temporary = run.empty();
  if (temporary) {
    char tmpl[] = "/tmp/gmemhook-analyzer-bench.XXXXXX";
    if (!mkdtemp(tmpl)) return 2;
    run = tmpl;
  }

  auto t0 = std::chrono::steady_clock::now();
  const fs::path dir = generate(run, events, threads, stacks);
  uint64_t bytes = 0;
  for (const auto& e : fs::directory_iterator(dir)) bytes += fs::file_size(e.path());
  // Bytes per event count every record (stacks, the process file, chunk tails): the target
  // (docs/performance.md) is at most 12 on average.
  std::printf("generated %llu events, %u threads, %u stacks: %.1f MiB (%.2f bytes/event) in %s "
              "(%.1f s)\n",
              static_cast<unsigned long long>(events), threads, stacks, bytes / 1048576.0,
              static_cast<double>(bytes) / static_cast<double>(events), dir.c_str(),
              seconds_since(t0));
  std::printf("%-16s %6s %10s %14s %10s %14s\n", "what", "passes", "best s", "events/s",
              "best cpu s", "events/cpu s");

  auto report = [&](const char* name, unsigned passes, auto&& fn) {
    if (std::string_view(name).substr(0, only.size()) != only) return;
    double best = 1e30, best_cpu = 1e30;
    for (unsigned r = 0; r < repeat; ++r) {
      auto start = std::chrono::steady_clock::now();
      const double cpu_start = cpu_seconds();
      fn();
      best = std::min(best, seconds_since(start));
      best_cpu = std::min(best_cpu, cpu_seconds() - cpu_start);
    }
    std::printf("%-16s %6u %10.3f %14.0f %10.3f %14.0f\n", name, passes, best, events / best,
                best_cpu, events / best_cpu);
    std::fflush(stdout);
  };
  // The reader alone, for a visitor that takes no upcoming() hints and for one that does (the
  // replay's prefetch): what the announcing costs.
  for (const bool announce : {false, true}) {
    report(announce ? "reader+upcoming" : "reader only", 1, [&] {
      auto reader = gmemhook::analysis::ProcessReader::open(dir);
      Counter c;
      c.announce = announce;
      reader.read_events(c);
      if (c.n != events) std::fprintf(stderr, "read %llu events\n", (unsigned long long)c.n);
    });
  }
  std::FILE* null = std::fopen("/dev/null", "w");
  std::FILE* warnings = std::fopen("/dev/null", "w");
  for (const gmemhook::analysis::ReportEntry& entry : gmemhook::analysis::reports()) {
    const char* name = entry.name;
    gmemhook::analysis::ReportOptions o;
    o.run = run;
    o.run_arg = run.string();
    // fragmentation's second pass stops at the last moment it needs (here: the peak).
    const unsigned passes = std::string(name) == "fragmentation" ? 2 : 1;
    report(name, passes, [&] {
      if (gmemhook::analysis::run_report(entry, o, null, warnings) != 0) {
        std::fprintf(stderr, "%s failed\n", name);
        std::exit(1);
      }
    });
  }
  std::fclose(null);
  std::fclose(warnings);
  if (!keep) fs::remove_all(temporary ? run : dir);
  return 0;
}

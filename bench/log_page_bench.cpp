// What a new page of a log costs the thread that writes it: a thread's log is written through
// MAP_SHARED chunks of a file, as interposer/log/log_file.cpp does, and each page is faulted in
// when first written, or prefaulted 64 KiB at a time with MADV_POPULATE_WRITE as the log does
// now. Prints the writing thread's CPU ns per page both ways, rounds interleaved, medians.
// Usage: log_page_bench [DIR (default: the current one; use the file system logs go to)] [ROUNDS]
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Fills 64 chunks of 1 MiB of a new file page by page (8-byte stores, as an encoder would);
// returns CPU ns per page spent writing (mapping and reserving the chunks left out).
double ns_per_page(const std::string& dir, bool prefault) {
  constexpr size_t kChunk = 1u << 20, kPage = 4096, kAhead = 64u << 10;
  constexpr int kChunks = 64;
  std::string path = dir + "/log_page_bench.XXXXXX";
  int fd = mkstemp(path.data());
  if (fd < 0) return -1;
  unlink(path.c_str());
  double spent = 0;
  for (int c = 0; c < kChunks; ++c) {
    const off_t at = static_cast<off_t>(c) * kChunk;
    if (posix_fallocate(fd, at, kChunk) != 0) return -1;
    void* m = mmap(nullptr, kChunk, PROT_READ | PROT_WRITE, MAP_SHARED, fd, at);
    if (m == MAP_FAILED) return -1;
    auto* p = static_cast<char*>(m);
    const double t0 = thread_cpu_s();
    for (size_t off = 0; off < kChunk; off += kPage) {
      if (prefault && off % kAhead == 0) madvise(p + off, kAhead, MADV_POPULATE_WRITE);
      for (size_t i = 0; i < kPage; i += 8) *reinterpret_cast<volatile uint64_t*>(p + off + i) = i;
    }
    spent += thread_cpu_s() - t0;
    munmap(m, kChunk);
  }
  close(fd);
  return spent * 1e9 / (kChunks * kChunk / kPage);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 9;
  std::vector<double> faulted, prefaulted;
  for (int r = 0; r < rounds; ++r) {
    faulted.push_back(ns_per_page(dir, false));
    prefaulted.push_back(ns_per_page(dir, true));
  }
  std::printf(
      "ns per 4 KiB page written (thread CPU, median of %d): faulted %.0f, prefaulted %.0f\n",
      rounds, median(faulted), median(prefaulted));
  return 0;
}

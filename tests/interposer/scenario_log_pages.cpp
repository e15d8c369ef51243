// Scenarios for the "gmemhook-pages" thread's hand-over (log_pages.h): a log chunk unmapped while
// the thread, slowed by GMEMHOOK_TEST_PAGE_DELAY_US, still works on a window of it; a fork while
// it does. Each prints one line for thread_logs_test.cpp.
#include <cuda_runtime_api.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "scenario.h"

namespace {

void pair() {
  void* p = nullptr;
  CHECK_RT(cudaMalloc(&p, 4096));
  CHECK_RT(cudaFree(p));
}

struct Range {
  uintptr_t start = 0, end = 0;
};

// Where the log of thread `tid` is mapped now (its current chunk), from /proc/self/maps.
Range log_chunk(long tid) {
  char name[64];
  std::snprintf(name, sizeof name, "/thread.%ld.gmh", tid);
  Range r;
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (!maps) die("/proc/self/maps", errno);
  char line[4096];
  while (std::fgets(line, sizeof line, maps)) {
    line[std::strcspn(line, "\n")] = '\0';
    const size_t n = std::strlen(line), k = std::strlen(name);
    if (n < k || std::strcmp(line + n - k, name) != 0) continue;
    std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &r.start, &r.end);
  }
  std::fclose(maps);
  return r;
}

}  // namespace

// A thread crosses chunks of its log, then its chunk is unmapped while the pages thread may
// still be asked for a window of it: at thread exit (`how` = "exit"), or when the log dies
// (`how` = "dead", under GMEMHOOK_TEST_DISK_FULL_AFTER). Then this program maps memory of its
// own at that address and waits `wait_ms`: a pages thread that populated the window after the
// unmap would make its pages resident. Prints "resident N after dying|exit".
int pages_after_unmap(const std::string& how, int pairs, int wait_ms) {
  CHECK_RT(cudaSetDevice(0));
  Range last;
  bool died = false;
  std::thread t([&] {
    const long tid = syscall(SYS_gettid);
    for (int i = 0; i < pairs; ++i) {
      pair();
      if (how != "dead" || i % 16 != 0) continue;
      const Range now = log_chunk(tid);
      if (now.start == 0 && last.start != 0) {  // the log died: its chunk is gone
        died = true;
        return;
      }
      last = now;
    }
    last = log_chunk(tid);
    usleep(50000);  // the pages thread takes the window asked for last
  });
  t.join();
  if (last.start == 0) die("finding the log's chunk", 0);
  const size_t len = last.end - last.start;
  void* want = reinterpret_cast<void*>(last.start);
  void* m = mmap(want, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (m != want) die("mapping the chunk's address again", errno);
  usleep(static_cast<useconds_t>(wait_ms) * 1000);
  std::vector<unsigned char> in(len / 4096);
  if (mincore(m, len, in.data()) != 0) die("mincore", errno);
  int resident = 0;
  for (unsigned char c : in) resident += c & 1;
  std::printf("resident %d after %s\n", resident, died ? "dying" : "exit");
  return 0;
}

// Forks while the pages thread works on a window of this thread's log; the child (which has no
// such thread) records `pairs` pairs. Prints "child exited N", or "child stuck" after 20 s.
int fork_with_pages_asked(int pairs) {
  CHECK_RT(cudaSetDevice(0));
  for (int i = 0; i < pairs; ++i) pair();
  usleep(50000);  // the pages thread takes the window asked for last
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) die("fork", errno);
  if (pid == 0) {
    for (int i = 0; i < pairs; ++i) pair();
    _exit(0);
  }
  int status = 0;
  for (int i = 0; i < 2000; ++i) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      std::printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
      return 0;
    }
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  std::printf("child stuck\n");
  return 0;
}

// Records until its log moves to a chunk of at least `chunk_kib` KiB, and says how many of that
// chunk's pages are in the page cache right after its first events ("resident R of N"): the
// writer's own pages and, where the kernel reads ahead on a fault, what it read ahead.
int new_chunk_pages(int chunk_kib) {
  CHECK_RT(cudaSetDevice(0));
  const long tid = syscall(SYS_gettid);
  for (int i = 0; i < 10000000; ++i) {
    pair();
    if (i % 8 != 0) continue;
    const Range r = log_chunk(tid);
    const size_t len = r.end - r.start;
    if (len < static_cast<size_t>(chunk_kib) << 10) continue;
    std::vector<unsigned char> in(len / 4096);
    if (mincore(reinterpret_cast<void*>(r.start), len, in.data()) != 0) die("mincore", errno);
    int resident = 0;
    for (unsigned char c : in) resident += c & 1;
    std::printf("resident %d of %zu\n", resident, in.size());
    return 0;
  }
  die("reaching a chunk that large", 0);
}

// The scenario's part for threads that are still there when the process exits: the main thread
// returns from main while they wait, or while they go on allocating, so exit() runs beside them.
#include <unistd.h>

#include <atomic>
#include <thread>

#include "scenario.h"

namespace {
std::atomic<int> g_ready{0};

// No check once exit() may have begun: a call failing then is the program's end, not the test's.
void pair() {
  void* p = nullptr;
  if (cudaMalloc(&p, 256) == cudaSuccess) cudaFree(p);
}
}  // namespace

int exit_beside_threads(int threads, int pairs, bool busy) {
  CHECK_RT(cudaSetDevice(0));
  for (int t = 0; t < threads; ++t)
    std::thread([pairs, busy] {
      for (int i = 0; i < pairs; ++i) pair();
      g_ready.fetch_add(1);
      while (busy) pair();
      for (;;) pause();
    }).detach();
  while (g_ready.load() < threads) std::this_thread::yield();
  std::printf("exiting\n");
  return 0;
}

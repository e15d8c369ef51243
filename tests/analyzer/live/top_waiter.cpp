// A CUDA program `gmemhook top` is tested against: it does what its stdin says, one command a
// line, answers each with one line on stdout, and otherwise blocks reading stdin — so a test
// controls exactly what is live while it takes a snapshot of the running process.
//   w SIZE   cudaMalloc from alloc_weights()      -> "ok <index>"
//   s SIZE   cudaMalloc from alloc_scratch()      -> "ok <index>"
//   f INDEX  cudaFree of the INDEX-th allocation  -> "ok"
//   q STATUS exit(STATUS)
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

std::vector<void*> g_allocations;

__attribute__((noinline)) void* alloc_weights(size_t size) {
  void* p = nullptr;
  if (cudaMalloc(&p, size) != cudaSuccess) std::exit(90);
  return p;
}

__attribute__((noinline)) void* alloc_scratch(size_t size) {
  void* p = nullptr;
  if (cudaMalloc(&p, size) != cudaSuccess) std::exit(91);
  return p;
}

}  // namespace

int main() {
  char op = 0;
  unsigned long long n = 0;
  while (std::scanf(" %c %llu", &op, &n) == 2) {
    if (op == 'w' || op == 's') {
      g_allocations.push_back(op == 'w' ? alloc_weights(n) : alloc_scratch(n));
      std::printf("ok %zu\n", g_allocations.size() - 1);
    } else if (op == 'f' && n < g_allocations.size()) {
      if (cudaFree(g_allocations[n]) != cudaSuccess) return 92;
      std::printf("ok\n");
    } else if (op == 'q') {
      std::exit(static_cast<int>(n));
    } else {
      std::printf("bad command\n");
    }
    std::fflush(stdout);
  }
  return 0;
}

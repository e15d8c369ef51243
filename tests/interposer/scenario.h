// What the parts of the scenario program share: how a call is reported ("<api> <value> <result>"
// on stdout, compared with the log by recorder_test.cpp), how a failure ends it, and how driver
// functions are resolved through the path chosen on the command line.
#pragma once

#include <cuda.h>
#include <dlfcn.h>
#include <cuda_runtime_api.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

inline void say(const char* api, uint64_t value, int result) {
  std::printf("%s 0x%" PRIx64 " %d\n", api, value, result);
}

[[noreturn]] inline void die(const char* what, int code) {
  std::fprintf(stderr, "scenario: %s failed with %d\n", what, code);
  std::exit(99);
}

#define CHECK_RT(call)                                         \
  do {                                                         \
    cudaError_t rc_ = (call);                                  \
    if (rc_ != cudaSuccess) die(#call, static_cast<int>(rc_)); \
  } while (0)
#define CHECK_DRV(call)                                          \
  do {                                                           \
    CUresult rc_ = (call);                                       \
    if (rc_ != CUDA_SUCCESS) die(#call, static_cast<int>(rc_)); \
  } while (0)

// A pointer as the value say() reports.
inline uint64_t u(const void* p) { return reinterpret_cast<uint64_t>(p); }

// A runtime function looked up with dlsym on `runtime` (the hook substitutes its wrapper).
template <typename T>
void rt(T& slot, void* runtime, const char* name) {
  slot = reinterpret_cast<T>(dlsym(runtime, name));
  if (!slot) die(name, -1);
}

// How a driver function is found: (exported name, base name for cuGetProcAddress, ptsz?).
using Resolve = void* (*)(const char* exported, const char* base, bool ptsz);

template <typename T>
void get(T& slot, Resolve r, const char* exported, const char* base, bool ptsz = false) {
  slot = reinterpret_cast<T>(r(exported, base, ptsz));
  if (!slot) die(exported, -1);
}

// Graph memory nodes, imported and shared memory, arrays, through the driver functions
// `r` finds (scenario_memory_kinds.cpp); the runtime's through dlsym on `runtime`.
void exercise_driver_memory_kinds(Resolve r);
void exercise_runtime_memory_kinds(void* runtime);
// Graphs of graphs, the generic node API, capture into a graph (scenario_graph_nodes.cpp).
void exercise_driver_graph_nodes(Resolve r);
void exercise_runtime_graph_nodes(void* runtime);
// Library A's allocations, dlclose, library B's at the same addresses (scenario_reload.cpp).
int reload_library(int calls, bool leak_last);
// dlclose's result, errno and dlerror, printed (scenario_reload.cpp).
int dlclose_results();
// Graph uploads (scenario_graph_upload.cpp).
void exercise_driver_graph_upload(Resolve r);
void exercise_runtime_graph_upload(void* runtime);
// `threads` threads make `pairs` cudaMalloc+cudaFree pairs each, then wait (or, `busy`, go on
// allocating) while the main thread returns from main (scenario_exit_threads.cpp).
int exit_beside_threads(int threads, int pairs, bool busy);
// The pages thread's hand-over (scenario_log_pages.cpp).
int pages_after_unmap(const std::string& how, int pairs, int wait_ms);
int fork_with_pages_asked(int pairs);
int new_chunk_pages(int chunk_kib);

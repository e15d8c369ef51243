// A stand-in for PyTorch's libc10.so and libc10_cuda.so: the profiler hook c10's allocators call
// for every block, a CPU allocator and a small CUDA caching allocator that call it, and the probes
// tests use to compare what was sent, what arrived and what gmemhook recorded.
#pragma once

#include <cstddef>
#include <cstdint>

namespace c10 {

// The layout PyTorch passes by value: DeviceType (an int8_t enum; CPU 0, CUDA 1) and DeviceIndex.
// Declared in namespace c10 so the compiler gives the definition PyTorch's mangled name.
struct Device {
  int8_t type;
  int8_t index;
};

// Defined by libc10.so. Its mangled name, _ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE,
// is what libc10_cuda.so imports and what gmemhook interposes.
void reportMemoryUsageToProfiler(void* ptr, int64_t alloc_size, size_t total_allocated,
                                 size_t total_reserved, Device device);

}  // namespace c10

extern "C" {

// One call of reportMemoryUsageToProfiler, as sent or as received.
struct FakeC10Report {
  uint64_t ptr;
  int64_t alloc_size;
  uint64_t total_allocated, total_reserved;
  int8_t device_type, device_index;
};

// One thing the caching allocator did, in its lock order: a block report ('b') or a segment it
// got from cudaMalloc ('m') or gave back with cudaFree ('f'; size then is the segment's).
struct FakeC10Action {
  char what;
  FakeC10Report report;  // for 'm' / 'f': ptr, alloc_size = segment bytes, device_index
};

// libc10.so: the calls that reached reportMemoryUsageToProfiler, and a CPU allocator that reports
// from inside the library, as c10's CPU allocator does (through the PLT, so interposable).
size_t fakec10_received_count();
bool fakec10_received(size_t i, FakeC10Report* out);
void* fakec10_cpu_alloc(size_t size);
void fakec10_cpu_free(void* ptr, size_t size);

// libc10_cuda.so: the caching allocator. Blocks are 512-byte multiples carved out of cudaMalloc
// segments (2 MiB for blocks up to 1 MiB; 20 MiB, or the rounded size from 10 MiB, above);
// freed blocks stay cached until fakec10_cuda_empty_cache(). Null when the device is full.
void* fakec10_cuda_malloc(size_t size, int device);
void fakec10_cuda_free(void* ptr);
void fakec10_cuda_empty_cache();
size_t fakec10_cuda_action_count();
bool fakec10_cuda_action(size_t i, FakeC10Action* out);

}  // extern "C"

// What the CUDA graph samples share (graph_memory.cu, graph_upload.cu): an allocation node's
// parameters and one printed line of the driver's graph memory pool figures, which
// scripts/gpu_memory_kinds.py reads as its oracle.
#pragma once

#include "sample_check.h"

inline cudaMemAllocNodeParams node_params(std::size_t bytes, int device) {
  cudaMemAllocNodeParams p{};
  p.poolProps.allocType = cudaMemAllocationTypePinned;
  p.poolProps.location.type = cudaMemLocationTypeDevice;
  p.poolProps.location.id = device;
  p.bytesize = bytes;
  return p;
}

// Adds `n` allocation nodes of `bytes` each to `graph` (no dependencies); their addresses, fixed
// from now on, go to `addresses`.
inline void add_alloc_nodes(cudaGraph_t graph, int device, std::size_t bytes, int n,
                            void** addresses) {
  for (int i = 0; i < n; ++i) {
    cudaMemAllocNodeParams p = node_params(bytes, device);
    cudaGraphNode_t node;
    CHECK_CUDA(cudaGraphAddMemAllocNode(&node, graph, nullptr, 0, &p));
    addresses[i] = p.dptr;
  }
}

// A new graph of `n` allocation nodes of `bytes` each, as add_alloc_nodes adds them.
inline cudaGraph_t graph_of_alloc_nodes(int device, std::size_t bytes, int n, void** addresses) {
  cudaGraph_t graph;
  CHECK_CUDA(cudaGraphCreate(&graph, 0));
  add_alloc_nodes(graph, device, bytes, n, addresses);
  return graph;
}

// `device` made current, and a stream of its own (non-blocking) to launch the graphs on.
inline cudaStream_t graph_stream(int device) {
  CHECK_CUDA(cudaSetDevice(device));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}

// One line of the driver's graph-pool figures for `device`, e.g. "graph pool before trim: used
// 138412032 reserved 536870912 used_high 536870912 reserved_high 536870912".
inline void print_graph_pool(int device, const char* when) {
  const cudaGraphMemAttributeType attrs[] = {
      cudaGraphMemAttrUsedMemCurrent, cudaGraphMemAttrReservedMemCurrent,
      cudaGraphMemAttrUsedMemHigh, cudaGraphMemAttrReservedMemHigh};
  unsigned long long v[4] = {};
  for (int i = 0; i < 4; ++i) CHECK_CUDA(cudaDeviceGetGraphMemAttribute(device, attrs[i], &v[i]));
  std::printf("graph pool %s: used %llu reserved %llu used_high %llu reserved_high %llu\n", when,
              v[0], v[1], v[2], v[3]);
}

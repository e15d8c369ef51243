// graph_upload.cu — cudaGraphUpload: uploading an instantiated graph allocates its
// allocation nodes before the first launch (the H200's driver counts them as used right after
// cudaGraphUpload, driver 580), and the first launch then runs on that memory.
//
// uploaded_then_launched() makes a graph of three 4 MiB allocation nodes and one of 40 MiB,
// instantiates it, uploads it (all four allocated: the peak, 52 MiB), launches it once, and frees
// the 40 MiB with cudaFree: the three 4 MiB stay allocated (the leak, 12 MiB).
// uploaded_at_instantiation() instantiates a graph of one 16 MiB node with
// cudaGraphInstantiateFlagUpload and destroys the exec without launching it: the upload allocates
// the 16 MiB, the destruction gives it back (the driver's used figure falls back after the trim).
// Finally cudaDeviceGraphMemTrim.
//
// The program prints the driver's graph-pool figures (cudaDeviceGetGraphMemAttribute) after each
// step ("graph pool after upload: used ... reserved ..."), the bytes it leaks ("expected leaked N
// bytes") and its peak ("expected peak N bytes"). What gmemhook should show: `summary` counts the
// peak as 52 MiB, reached at the upload; `leaks` the 12 MiB, made live by cudaGraphUpload; and
// beside device 0 the CUDA graph memory pool with the driver's figures recorded after the upload,
// the launch and the trim (gpu-check row graphupload compares them with the printed ones, and
// gmemhook's live bytes at the upload, in whole 32 MiB granules, with the driver's used figure).
#include "graph_sample.h"

namespace {

constexpr std::size_t kSmallBytes = 4 * kMiB;
constexpr int kSmallNodes = 3;
constexpr std::size_t kLargeBytes = 40 * kMiB;
constexpr std::size_t kUploadedOnlyBytes = 16 * kMiB;
}  // namespace

SAMPLE_FRAME void uploaded_then_launched(int device, cudaStream_t s) {
  void* small[kSmallNodes];
  void* large = nullptr;
  cudaGraph_t graph = graph_of_alloc_nodes(device, kSmallBytes, kSmallNodes, small);
  add_alloc_nodes(graph, device, kLargeBytes, 1, &large);
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  print_graph_pool(device, "after instantiate");
  CHECK_CUDA(cudaGraphUpload(exec, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  print_graph_pool(device, "after upload");
  CHECK_CUDA(cudaGraphLaunch(exec, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  print_graph_pool(device, "after launch");
  for (int i = 0; i < kSmallNodes; ++i) fill(small[i], kSmallBytes, i, s);
  fill(large, kLargeBytes, 7, s);
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CUDA(cudaFree(large));
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
}

SAMPLE_FRAME void uploaded_at_instantiation(int device, cudaStream_t s) {
  void* never_launched = nullptr;
  cudaGraph_t graph = graph_of_alloc_nodes(device, kUploadedOnlyBytes, 1, &never_launched);
  cudaGraphInstantiateParams params{};
  params.flags = cudaGraphInstantiateFlagUpload;
  params.uploadStream = s;
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaGraphInstantiateWithParams(&exec, graph, &params));
  CHECK_CUDA(cudaStreamSynchronize(s));
  print_graph_pool(device, "after instantiate-upload");
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
}

int main() {
  const int device = 0;
  cudaStream_t s = graph_stream(device);
  uploaded_then_launched(device, s);
  uploaded_at_instantiation(device, s);
  CHECK_CUDA(cudaDeviceGraphMemTrim(device));
  print_graph_pool(device, "after trim");
  CHECK_CUDA(cudaStreamDestroy(s));
  std::printf("expected leaked %zu bytes\n", kSmallNodes * kSmallBytes);
  std::printf("expected peak %zu bytes\n", kSmallNodes * kSmallBytes + kLargeBytes);
  return 0;
}

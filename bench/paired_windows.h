// hook_bench's paired mode: what a preloaded recorder adds per event, measured
// inside one process so that the process's own speed (which on the GPU machine's host moves up to
// ~1.4x from one process to the next) cancels. See paired_windows.cpp.
#pragma once

namespace hook_bench {

enum class PairedCall {
  Cuda,    // cuMemAlloc_v2 + cuMemFree_v2 (the simulated device): gmemhook's side
  Malloc,  // malloc + free: heaptrack's side
};

// Runs `windows` traced windows and as many direct ones of `window_pairs` pairs each, `depth`
// frames deep, prints one line of figures and returns the process's exit status.
int run_paired(PairedCall call, int depth, long window_pairs, int windows);

}  // namespace hook_bench

// unwind_shapes.h: -O2 frames with frame pointers (compiled -O2 -fno-omit-frame-pointer).
#include "unwind_shapes.h"

namespace unwind_shapes {

volatile int g_sink_fp;

__attribute__((noinline)) int frame_fp(int depth, const Walk& w) {
  int r = step(depth - 1, w);
  g_sink_fp = g_sink_fp + r;
  return r + 1;
}

// Two callers of frame_fp alike but for their return addresses, with frame pointers: what tells
// their walks apart is read together with frame_fp's saved rbp (a recent walk's two-load check).
__attribute__((noinline)) int fp_path_a(int depth, const Walk& w) {
  int r = frame_fp(depth, w);
  g_sink_fp = g_sink_fp + r;
  return r;
}
__attribute__((noinline)) int fp_path_b(int depth, const Walk& w) {
  int r = frame_fp(depth, w);
  g_sink_fp = g_sink_fp + 2 * r;
  return r;
}

}  // namespace unwind_shapes

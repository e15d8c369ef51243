// unwind_shapes.h: -O2 frames with frame pointers (compiled -O2 -fno-omit-frame-pointer).
#include "unwind_shapes.h"

namespace unwind_shapes {

volatile int g_sink_fp;

__attribute__((noinline)) int frame_fp(int depth, const Walk& w) {
  int r = step(depth - 1, w);
  g_sink_fp = g_sink_fp + r;
  return r + 1;
}

}  // namespace unwind_shapes

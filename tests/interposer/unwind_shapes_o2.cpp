// unwind_shapes.h: -O2 frames without frame pointers (compiled -O2 -fomit-frame-pointer).
#include "unwind_shapes.h"

namespace unwind_shapes {

volatile int g_sink;

__attribute__((noinline)) int frame_o2(int depth, const Walk& w) {
  int r = step(depth - 1, w);
  g_sink = g_sink + r;  // work after the call: no tail call
  return r + 1;
}

// A variable-length array makes the compiler address the frame from rbp even here.
__attribute__((noinline)) int frame_vla(int depth, const Walk& w) {
  volatile char buf[16 + depth % 7];
  buf[0] = static_cast<char>(depth);
  int r = step(depth - 1, w);
  g_sink = g_sink + r + buf[0];
  return r + 1;
}

}  // namespace unwind_shapes

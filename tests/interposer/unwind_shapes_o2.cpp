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

// A 64-byte aligned local and a variable-length array: GCC realigns the stack through r10 and
// describes the frame with DW_CFA_def_cfa_expression (DW_OP_breg6 -8; DW_OP_deref).
__attribute__((noinline)) int frame_drap(int depth, const Walk& w) {
  alignas(64) volatile char aligned[64];
  volatile char vla[8 + depth % 5];
  aligned[0] = static_cast<char>(depth);
  vla[0] = 1;
  int r = step(depth - 1, w);
  g_sink = g_sink + r + aligned[0] + vla[0];
  return r + 1;
}

}  // namespace unwind_shapes

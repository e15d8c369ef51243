// Frames of different shapes for the fast unwinder's test: the same recursion compiled three
// ways (unwind_shapes_o0.cpp at -O0, unwind_shapes_o2.cpp at -O2 without frame pointers,
// unwind_shapes_fp.cpp at -O2 with them), each step calling the next shape from a pattern.
#pragma once

namespace unwind_shapes {

// Called at the bottom of the recursion.
using Probe = void (*)();

// shape[depth % count] picks the function of each frame: 0 -O0, 1 -O2 no frame pointer (CFA from
// rsp), 2 -O2 with a variable-length array (CFA from rbp though frame pointers are omitted),
// 3 -O2 with frame pointers, 4 -O2 realigned with a variable size (GCC's DRAP: the CFA is a
// DWARF expression on rbp).
struct Walk {
  const int* shape;
  int count;
  Probe probe;
};

int step(int depth, const Walk& w);  // calls the function of frame `depth`
int frame_o0(int depth, const Walk& w);
int frame_o2(int depth, const Walk& w);
int frame_vla(int depth, const Walk& w);
int frame_fp(int depth, const Walk& w);
int frame_drap(int depth, const Walk& w);
int fp_path_a(int depth, const Walk& w);  // frame_fp from two call sites (unwind_shapes_fp.cpp)
int fp_path_b(int depth, const Walk& w);

}  // namespace unwind_shapes

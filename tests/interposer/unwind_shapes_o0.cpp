// unwind_shapes.h: the -O0 frame and the dispatch between shapes (compiled -O0).
#include "unwind_shapes.h"

namespace unwind_shapes {

int step(int depth, const Walk& w) {
  if (depth <= 0) {
    w.probe();
    return 1;
  }
  switch (w.shape[depth % w.count]) {
    case 0: return frame_o0(depth, w);
    case 1: return frame_o2(depth, w);
    case 2: return frame_vla(depth, w);
    case 4: return frame_drap(depth, w);
    default: return frame_fp(depth, w);
  }
}

int frame_o0(int depth, const Walk& w) {
  int r = step(depth - 1, w);
  return r + 1;
}

}  // namespace unwind_shapes

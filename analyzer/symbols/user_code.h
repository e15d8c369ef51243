// Whose code a frame is: the user's, or a CUDA library, a framework, the Python interpreter or the
// C/C++ runtime. Reports head each site with its user frame and fold the rest; the rules
// live in one table in user_code.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/symbols/frame.h"

namespace gmemhook::analysis {

enum class CodeOwner : uint8_t {
  User,         // anything no rule claims: the program, its own libraries, model code
  Cuda,         // the CUDA runtime and driver, cuBLAS, cuDNN, NCCL ... and gmemhook itself
  Framework,    // PyTorch, CuPy, JAX/XLA, Triton, Transformers' shared layers ...
  Interpreter,  // python, libpython, libffi, _ctypes, the import machinery
  Runtime,      // libc, libstdc++, libgcc, the dynamic loader
};

const char* to_string(CodeOwner owner);

// Who owns `frame`, by its module (native) or its file (Python).
CodeOwner owner_of(const Frame& frame);

// The short name a folded run of frames is labelled with: the module's file name for native
// frames ("libtorch_cuda.so"), the package for Python ones ("torch").
std::string library_of(const Frame& frame);

// The distinct libraries (library_of) of `frames`, innermost first: what a stack with no user
// frame is named and grouped by.
std::vector<std::string> libraries_of(const std::vector<Frame>& frames);

inline constexpr size_t kNoUserFrame = static_cast<size_t>(-1);

// The frame a site is headed by, as an index into `frames` (innermost first): the innermost Python
// frame of user code; else the innermost Python frame; else the innermost native frame of user
// code; kNoUserFrame when every frame belongs to a library (e.g. a backward pass on an autograd
// thread, which runs no Python).
size_t user_frame(const std::vector<Frame>& frames);

// The autograd node whose backward made this allocation, when the stack runs on one of PyTorch's
// autograd threads: the class of the Node::apply that torch::autograd::Node::operator() called
// ("AddmmBackward0", "AccumulateGrad"); empty for any other stack. Such stacks have no Python
// frame and no user frame, and the node is the one thing in them that says which operation of the
// model the memory is for (its forward line is not recorded anywhere a hook can see).
std::string autograd_node(const std::vector<Frame>& frames);

// A stack as a reader sees it: user frames one per line, each run of library frames one line.
struct StackLine {
  size_t first = 0;  // index of the first (innermost) frame of the line
  size_t count = 1;  // frames it stands for (> 1 only when folded)
  bool folded = false;
  CodeOwner owner = CodeOwner::User;
  std::vector<std::string> libraries;  // folded: the libraries of its frames, innermost first
};

// `frames` (innermost first) with every run of two or more consecutive non-user frames folded into
// one line. A lone library frame stays a frame of its own: folding it would hide, not save, a line.
std::vector<StackLine> fold_library_frames(const std::vector<Frame>& frames);

// "12 frames in libtorch_cuda.so, libc10_cuda.so" for a folded line.
std::string describe_fold(const StackLine& line);

}  // namespace gmemhook::analysis

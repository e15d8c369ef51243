// The "not user code" rules: which frame heads a site and which runs of frames fold, on stacks
// shaped like the ones real programs record (PyTorch under Transformers, ctypes, plain CUDA C++).
#include "analyzer/symbols/user_code.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_frames.h"

namespace gmemhook::analysis {
namespace {

const std::string kSite = "/usr/lib/python3/site-packages/";

TEST(UserCode, OwnersOfKnownLibraries) {
  EXPECT_EQ(owner_of(native("/usr/local/cuda/lib64/libcudart.so.13", "cudaMalloc")),
            CodeOwner::Cuda);
  EXPECT_EQ(owner_of(native("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "cuMemAlloc_v2")),
            CodeOwner::Cuda);
  EXPECT_EQ(owner_of(native(kSite + "nvidia/cublas/lib/libcublasLt.so.13", "x")), CodeOwner::Cuda);
  EXPECT_EQ(owner_of(native(kSite + "torch/lib/libtorch_cuda.so", "at::empty_cuda")),
            CodeOwner::Framework);
  EXPECT_EQ(owner_of(native(kSite + "torch/lib/libc10_cuda.so", "malloc")), CodeOwner::Framework);
  EXPECT_EQ(owner_of(native(kSite + "torch/_C.cpython-312-x86_64-linux-gnu.so", "x")),
            CodeOwner::Framework);
  EXPECT_EQ(owner_of(native(kSite + "cupy/_core/core.cpython-312-x86_64-linux-gnu.so", "x")),
            CodeOwner::Framework);
  EXPECT_EQ(owner_of(native(kSite + "jaxlib/xla_extension.so", "x")), CodeOwner::Framework);
  EXPECT_EQ(owner_of(native(kSite + "jax_plugins/xla_cuda13/xla_cuda_plugin.so", "x")),
            CodeOwner::Framework);
  EXPECT_EQ(owner_of(native("/usr/bin/python3.12", "_PyEval_EvalFrameDefault")),
            CodeOwner::Interpreter);
  EXPECT_EQ(owner_of(native("/usr/lib/libpython3.11.so.1.0", "x")), CodeOwner::Interpreter);
  EXPECT_EQ(owner_of(native("/usr/lib/x86_64-linux-gnu/libffi.so.8", "ffi_call")),
            CodeOwner::Interpreter);
  EXPECT_EQ(owner_of(native("/usr/lib/python3.11/lib-dynload/_ctypes.cpython-311.so", "x")),
            CodeOwner::Interpreter);
  EXPECT_EQ(owner_of(native("/lib/x86_64-linux-gnu/libc.so.6", "__libc_start_main")),
            CodeOwner::Runtime);
  EXPECT_EQ(owner_of(native("/lib/x86_64-linux-gnu/libstdc++.so.6", "x")), CodeOwner::Runtime);
  // The program, and libraries of the program's own, are the user's.
  EXPECT_EQ(owner_of(native("/home/me/app/build/train", "main")), CodeOwner::User);
  EXPECT_EQ(owner_of(native("/home/me/app/build/libmodel.so", "Model::forward")), CodeOwner::User);
  EXPECT_EQ(owner_of(native("", "")), CodeOwner::User);  // unknown: shown rather than hidden
}

TEST(UserCode, AnEnvironmentNamedLikeAPackageIsNotThatPackage) {
  // The GPU machine's venv lives in /opt/torch/: every package is under that name, the model too.
  const std::string venv = "/opt/torch/.venv/lib/python3.12/site-packages/";
  EXPECT_EQ(owner_of(py(venv + "transformers/models/gpt2/modeling_gpt2.py", "forward", 310)),
            CodeOwner::User);
  EXPECT_EQ(owner_of(py(venv + "torch/nn/modules/linear.py", "forward", 125)),
            CodeOwner::Framework);
  EXPECT_EQ(owner_of(py(venv + "transformers/loss/loss_utils.py", "ForCausalLMLoss", 40)),
            CodeOwner::Framework);
  EXPECT_EQ(owner_of(py("/opt/torch/work/train.py", "main", 7)), CodeOwner::User);
  EXPECT_EQ(owner_of(native("/opt/torch/work/libmine.so", "f")), CodeOwner::User);
  EXPECT_EQ(owner_of(native(venv + "torch/_C.cpython-312-x86_64-linux-gnu.so", "f")),
            CodeOwner::Framework);
}

TEST(UserCode, PythonFramesByPackage) {
  EXPECT_EQ(owner_of(py(kSite + "torch/nn/modules/linear.py", "forward", 125)),
            CodeOwner::Framework);
  EXPECT_EQ(owner_of(py(kSite + "transformers/pytorch_utils.py", "forward", 120)),
            CodeOwner::Framework);
  EXPECT_EQ(owner_of(py("<frozen runpy>", "_run_code", 88)), CodeOwner::Interpreter);
  // Model code in site-packages is what people read: it stays user code.
  EXPECT_EQ(owner_of(py(kSite + "transformers/models/gpt2/modeling_gpt2.py", "forward", 310)),
            CodeOwner::User);
  EXPECT_EQ(owner_of(py("/home/me/train.py", "main", 42)), CodeOwner::User);
  // A module file named like a package is not that package.
  EXPECT_EQ(owner_of(py("/home/me/torch.py", "f", 1)), CodeOwner::User);
  EXPECT_EQ(library_of(py(kSite + "torch/nn/functional.py", "linear", 1)), "torch");
  EXPECT_EQ(library_of(native(kSite + "torch/lib/libtorch_cuda.so", "x")), "libtorch_cuda.so");
}

// The innermost frames of a GPT-2 tensor allocation: allocator internals, then the interpreter,
// then torch's Python layers, then the model line, then the training loop.
std::vector<Frame> gpt2_stack() {
  return {
      native(kSite + "torch/lib/libc10_cuda.so", "c10::cuda::CUDACachingAllocator::malloc"),
      native(kSite + "torch/lib/libtorch_cuda.so", "at::detail::empty_cuda"),
      native(kSite + "torch/lib/libtorch_cpu.so", "at::addmm"),
      native("/usr/bin/python3.12", "_PyEval_EvalFrameDefault"),
      py(kSite + "transformers/pytorch_utils.py", "forward", 120),
      py(kSite + "torch/nn/modules/module.py", "_call_impl", 1750),
      py(kSite + "transformers/models/gpt2/modeling_gpt2.py", "forward", 310),
      py("/work/samples/train_gpt2.py", "step", 40),
      native("/usr/bin/python3.12", "_PyEval_EvalFrameDefault"),
      native("/usr/bin/python3.12", "Py_RunMain"),
      native("/lib/x86_64-linux-gnu/libc.so.6", "__libc_start_main"),
  };
}

TEST(UserCode, UserFrameIsTheModelLineNotTheFramework) {
  std::vector<Frame> s = gpt2_stack();
  size_t u = user_frame(s);
  ASSERT_NE(u, kNoUserFrame);
  EXPECT_EQ(*s[u].file, kSite + "transformers/models/gpt2/modeling_gpt2.py");
}

TEST(UserCode, UserFrameFallsBack) {
  // Only framework Python frames: the innermost of them.
  std::vector<Frame> torch_only = {native(kSite + "torch/lib/libc10_cuda.so", "malloc"),
                                   py(kSite + "torch/optim/adamw.py", "_init_group", 170),
                                   py(kSite + "torch/optim/optimizer.py", "wrapper", 480)};
  EXPECT_EQ(user_frame(torch_only), 1u);
  // No Python at all (CUDA C++): the innermost frame outside the libraries.
  std::vector<Frame> cxx = {native("/usr/local/cuda/lib64/libcudart.so.13", "cudaMalloc"),
                            native("/home/me/app/leak", "make_buffers"),
                            native("/home/me/app/leak", "main"),
                            native("/lib/x86_64-linux-gnu/libc.so.6", "__libc_start_main")};
  EXPECT_EQ(user_frame(cxx), 1u);
  // Every frame a library's (an autograd thread): none.
  std::vector<Frame> autograd = {native(kSite + "torch/lib/libc10_cuda.so", "malloc"),
                                 native(kSite + "torch/lib/libtorch_cpu.so", "Engine::thread_main"),
                                 native("/lib/x86_64-linux-gnu/libc.so.6", "start_thread")};
  EXPECT_EQ(user_frame(autograd), kNoUserFrame);
  EXPECT_EQ(user_frame({}), kNoUserFrame);
}

TEST(UserCode, RunsOfLibraryFramesFoldIntoOneLine) {
  std::vector<Frame> s = gpt2_stack();
  std::vector<StackLine> lines = fold_library_frames(s);
  // [c10, torch_cuda, torch_cpu, python, pytorch_utils.py, module.py] [modeling] [train] [3 more]
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_TRUE(lines[0].folded);
  EXPECT_EQ(lines[0].first, 0u);
  EXPECT_EQ(lines[0].count, 6u);
  EXPECT_EQ(describe_fold(lines[0]),
            "6 frames in libc10_cuda.so, libtorch_cuda.so, libtorch_cpu.so, python3.12, "
            "transformers, torch");
  EXPECT_FALSE(lines[1].folded);
  EXPECT_EQ(lines[1].first, 6u);
  EXPECT_EQ(lines[2].first, 7u);
  EXPECT_TRUE(lines[3].folded);
  EXPECT_EQ(lines[3].count, 3u);
  EXPECT_EQ(lines[3].libraries, (std::vector<std::string>{"python3.12", "libc.so.6"}));
  // Every frame is accounted for exactly once.
  size_t covered = 0;
  for (const StackLine& l : lines) covered += l.count;
  EXPECT_EQ(covered, s.size());
}

TEST(UserCode, ALoneLibraryFrameIsNotFolded) {
  std::vector<Frame> s = {native("/usr/local/cuda/lib64/libcudart.so.13", "cudaMalloc"),
                          native("/home/me/app/leak", "main")};
  std::vector<StackLine> lines = fold_library_frames(s);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_FALSE(lines[0].folded);
  EXPECT_EQ(lines[0].owner, CodeOwner::Cuda);
  EXPECT_EQ(lines[1].owner, CodeOwner::User);
}

}  // namespace
}  // namespace gmemhook::analysis

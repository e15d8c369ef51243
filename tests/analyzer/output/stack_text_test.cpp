// User-first stack text: the user's line heads a site, Python frames come before the
// native ones, library runs fold into one line, --native writes every frame as recorded.
#include "analyzer/output/stack_text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_frames.h"

namespace gmemhook::analysis {
namespace {

const std::string kTorch = "/venv/site-packages/torch/";

// A tensor made by model code under PyTorch, as the resolver merges it: the caching allocator's
// native frames, the Python frames in place of the interpreter loop, the interpreter below.
std::vector<Frame> torch_stack() {
  return {native("/cuda/libcudart.so.13", "cudaMalloc"),
          native(kTorch + "lib/libc10_cuda.so", "c10::cuda::CUDACachingAllocator::malloc"),
          native(kTorch + "lib/libtorch_cuda.so", "at::detail::empty_cuda"),
          native(kTorch + "lib/libtorch_python.so", "THPVariable_empty"),
          native("/usr/lib/libpython3.12.so.1.0", "_PyEval_EvalFrameDefault"),
          py("/w/model.py", "forward", 42),
          py(kTorch + "nn/modules/module.py", "_call_impl", 1520),
          py(kTorch + "nn/modules/module.py", "_wrapped_call_impl", 1511),
          py("/w/train.py", "<module>", 80),
          native("/usr/lib/libpython3.12.so.1.0", "Py_RunMain"),
          native("/usr/bin/python3.12", "main"),
          native("/lib/x86_64-linux-gnu/libc.so.6", "__libc_start_main")};
}

TEST(StackText, UserFrameHeadsWithFileLineAndFunction) {
  EXPECT_EQ(user_frame_text(torch_stack()), "/w/model.py:42 in forward");
  EXPECT_EQ(user_frame_text({native("/opt/app/leak", "leak_once", "/src/leak.cu", 12),
                             native("/opt/app/leak", "main", "/src/leak.cu", 30)}),
            "/src/leak.cu:12 in leak_once (leak)");
  EXPECT_EQ(user_frame_text({native("/opt/app/leak", "leak_once")}), "leak_once (leak)");
  Frame bare;
  bare.module = "/opt/app/leak";
  bare.module_offset = 0x1a2b;
  EXPECT_EQ(user_frame_text({bare}), "leak+0x1a2b");
  EXPECT_EQ(user_frame_text({native("/cuda/libcudart.so.13", "cudaMalloc"),
                             native("/lib/libc.so.6", "start_thread")}),
            "no frame of user code: every frame in libcudart.so.13, libc.so.6");
  EXPECT_EQ(user_frame_text({}), "(no stack recorded)");
}

// --group-by function: a row holds every line of a function, so its heading names the function
// not the line of its first stack.
TEST(StackText, GroupedByFunctionTheHeadingNamesTheFunction) {
  EXPECT_EQ(user_frame_text(torch_stack(), true), "forward in /w/model.py");
  EXPECT_EQ(user_frame_text({native("/opt/app/leak", "leak_once", "/src/leak.cu", 12)}, true),
            "leak_once in /src/leak.cu (leak)");
  EXPECT_EQ(user_frame_text({native("/opt/app/leak", "leak_once")}, true), "leak_once (leak)");
  std::string text;
  const std::vector<Frame> stack = torch_stack();
  append_site_stacks(text, {StackShare{&stack, 1, 1}}, StackStyle{false, 8, true}, "  ");
  EXPECT_TRUE(text.starts_with("  forward in /w/model.py\n")) << text;
  text.clear();
  append_site_stacks(text, {StackShare{&stack, 1, 1}}, StackStyle{}, "  ");
  EXPECT_TRUE(text.starts_with("  /w/model.py:42 in forward\n")) << text;
}

TEST(StackText, PythonFramesFirstThenNativeWithLibraryRunsFolded) {
  std::string text;
  append_stack(text, torch_stack(), StackStyle{}, "  ");
  EXPECT_EQ(text,
            "  python:\n"
            "    #0 forward /w/model.py:42 [python]\n"
            "    #1-#2 2 frames in torch\n"
            "    #3 <module> /w/train.py:80 [python]\n"
            "  native:\n"
            "    #0-#7 8 frames in libcudart.so.13, libc10_cuda.so, libtorch_cuda.so, "
            "libtorch_python.so, libpython3.12.so.1.0, python3.12, libc.so.6\n");
}

TEST(StackText, NativeOnlyStacksHaveNoSectionLabels) {
  std::string text;
  append_stack(text,
               {native("/cuda/libcudart.so.13", "cudaMalloc"),
                native("/opt/app/leak", "leak_once", "/src/leak.cu", 12),
                native("/opt/app/leak", "main", "/src/leak.cu", 30),
                native("/lib/libc.so.6", "__libc_start_call_main"),
                native("/lib/libc.so.6", "__libc_start_main")},
               StackStyle{}, "");
  EXPECT_EQ(text,
            "#0 cudaMalloc (libcudart.so.13)\n"
            "#1 leak_once /src/leak.cu:12 (leak)\n"
            "#2 main /src/leak.cu:30 (leak)\n"
            "#3-#4 2 frames in libc.so.6\n");
}

TEST(StackText, DepthCountsLinesPerSectionAndSaysHowManyFramesAreLeft) {
  std::string text;
  append_stack(text, torch_stack(), StackStyle{false, 1}, "");
  EXPECT_EQ(text,
            "python:\n"
            "  #0 forward /w/model.py:42 [python]\n"
            "  ... 3 more frames (--depth 0 shows all)\n"
            "native:\n"
            "  #0-#7 8 frames in libcudart.so.13, libc10_cuda.so, libtorch_cuda.so, "
            "libtorch_python.so, libpython3.12.so.1.0, python3.12, libc.so.6\n");
}

TEST(StackText, NativeStyleWritesEveryFrameAsRecorded) {
  std::string text;
  append_stack(text, torch_stack(), StackStyle{true, 3}, "  ");
  EXPECT_EQ(text,
            "  #0 cudaMalloc (libcudart.so.13)\n"
            "  #1 c10::cuda::CUDACachingAllocator::malloc (libc10_cuda.so)\n"
            "  #2 at::detail::empty_cuda (libtorch_cuda.so)\n"
            "  ... 9 more frames (--depth 0 shows all)\n");
}

TEST(StackText, ARowWithSeveralStacksListsEachUnderItsShare) {
  const std::vector<Frame> a = {native("/opt/app/app", "alloc", "/src/app.cu", 7),
                                native("/opt/app/app", "main", "/src/app.cu", 30)};
  const std::vector<Frame> b = {native("/opt/app/app", "alloc", "/src/app.cu", 7),
                                native("/opt/app/app", "warmup", "/src/app.cu", 20)};
  std::string text;
  append_site_stacks(text, {{&a, 4 << 20, 2}, {&b, 1 << 20, 1}}, StackStyle{}, "  ");
  EXPECT_EQ(text,
            "  /src/app.cu:7 in alloc (app)\n"
            "    stack 1 of 2: 4.0 MiB in 2 allocations:\n"
            "      #0 alloc /src/app.cu:7 (app)\n"
            "      #1 main /src/app.cu:30 (app)\n"
            "    stack 2 of 2: 1.0 MiB in 1 allocation:\n"
            "      #0 alloc /src/app.cu:7 (app)\n"
            "      #1 warmup /src/app.cu:20 (app)\n");

  std::string one;
  append_site_stacks(one, {{&a, 4 << 20, 2}}, StackStyle{true, 0}, "  ");
  EXPECT_EQ(one, "  #0 alloc /src/app.cu:7 (app)\n  #1 main /src/app.cu:30 (app)\n");
}

TEST(StackText, ARowShowsAtMostAFewStacks) {
  std::vector<std::vector<Frame>> stacks;
  for (int i = 0; i < 5; ++i)
    stacks.push_back({native("/opt/app/app", "alloc", "/src/app.cu", 7),
                      native("/opt/app/app", "caller" + std::to_string(i))});
  std::vector<StackShare> shares;
  for (const auto& s : stacks) shares.push_back({&s, 1 << 20, 1});
  std::string text;
  append_site_stacks(text, shares, StackStyle{}, "");
  EXPECT_NE(text.find("  stack 3 of 5:"), std::string::npos) << text;
  EXPECT_EQ(text.find("  stack 4 of 5:"), std::string::npos) << text;
  EXPECT_NE(text.find("  ... and 2 more stacks holding 2.0 MiB (--group-by stack lists each)\n"),
            std::string::npos)
      << text;
}

// A backward pass on PyTorch's autograd thread (as on the H200): no Python frame, no user frame.
std::vector<Frame> backward_stack(const std::string& node, const std::string& op) {
  return {native(kTorch + "lib/libc10_cuda.so", "c10::cuda::CUDACachingAllocator::malloc"),
          native(kTorch + "lib/libtorch_cuda.so", "at::detail::empty_cuda"),
          native(kTorch + "lib/libtorch_cpu.so", "at::_ops::" + op + "::call(at::Tensor const&)"),
          native(kTorch + "lib/libtorch_cpu.so",
                 "torch::autograd::generated::" + node + "::apply(std::vector<at::Tensor>&&)"),
          native(kTorch + "lib/libtorch_cpu.so",
                 "torch::autograd::Node::operator()(std::vector<at::Tensor>&&)"),
          native(kTorch + "lib/libtorch_cpu.so",
                 "torch::autograd::Engine::thread_main(std::shared_ptr<GraphTask> const&)"),
          native("/lib/x86_64-linux-gnu/libc.so.6", "start_thread")};
}

TEST(StackText, ABackwardPassIsHeadedByItsAutogradNode) {
  EXPECT_EQ(user_frame_text(backward_stack("AddmmBackward0", "mm")),
            "backward pass, autograd node AddmmBackward0 (PyTorch's autograd thread, no Python "
            "frames)");
  // Without Node::operator() (any other all-library stack) nothing is guessed.
  std::vector<Frame> other = backward_stack("AddmmBackward0", "mm");
  other.erase(other.begin() + 4);
  EXPECT_EQ(user_frame_text(other).rfind("no frame of user code: every frame in ", 0), 0u)
      << user_frame_text(other);
}

TEST(StackText, StacksAlikeButForLibraryFramesAreOneEntryWithTheirSharesAdded) {
  // Two stacks that differ only inside the folded torch frames (one has a frame more), and one
  // called from another line.
  std::vector<Frame> a = torch_stack(), b = torch_stack(), c = torch_stack();
  b[2] = native(kTorch + "lib/libtorch_cuda.so", "at::detail::empty_strided_cuda");
  b.insert(b.begin() + 2, native(kTorch + "lib/libtorch_cuda.so", "at::empty_like"));
  c[8] = py("/w/train.py", "<module>", 81);
  std::string text;
  append_site_stacks(text, {{&a, 4 << 20, 2}, {&c, 3 << 20, 1}, {&b, 2 << 20, 1}}, StackStyle{},
                     "");
  EXPECT_NE(text.find("  stack 1 of 2: 6.0 MiB in 3 allocations (2 stacks alike but "
                      "for library frames and frames not shown):\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  stack 2 of 2: 3.0 MiB in 1 allocation:\n"), std::string::npos) << text;

  // All alike: one stack under the heading, saying how many it stands for.
  std::string one;
  append_site_stacks(one, {{&a, 4 << 20, 2}, {&b, 2 << 20, 1}}, StackStyle{}, "");
  EXPECT_NE(
      one.find(
          "  2 stacks alike but for library frames and frames not shown (--native shows each):\n"),
      std::string::npos)
      << one;
  EXPECT_EQ(one.find("stack 1 of"), std::string::npos) << one;

  // --native writes each stack as recorded, so nothing is merged.
  std::string all;
  append_site_stacks(all, {{&a, 4 << 20, 2}, {&b, 2 << 20, 1}}, StackStyle{true, 0}, "");
  EXPECT_NE(all.find("stack 2 of 2"), std::string::npos) << all;
}

}  // namespace
}  // namespace gmemhook::analysis

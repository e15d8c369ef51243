// Grouping sites into rows: one row per line of user code by default, whatever the
// callers; per user function or per stack on request; kinds of memory never share a row.
#include "analyzer/reports/site_rows.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyzer/symbols/user_code.h"

namespace gmemhook::analysis {
namespace {

Frame native(const std::string& module, const std::string& function, uint32_t line) {
  Frame f;
  f.module = module;
  f.function = function;
  f.file = "/src/app.cu";
  f.line = line;
  return f;
}

const Frame kCuda = [] {
  Frame f;
  f.module = "/cuda/libcudart.so.13";
  f.function = "cudaMalloc";
  return f;
}();

// alloc() at line 7 reached from two callers, alloc() at line 9, and a stack of libraries only.
struct Sites {
  std::vector<Frame> line7_main = {kCuda, native("/opt/app", "alloc", 7),
                                   native("/opt/app", "main", 30)};
  std::vector<Frame> line7_warmup = {kCuda, native("/opt/app", "alloc", 7),
                                     native("/opt/app", "warmup", 20)};
  std::vector<Frame> line9 = {kCuda, native("/opt/app", "alloc", 9),
                              native("/opt/app", "main", 31)};
  std::vector<Frame> library = {kCuda};
  std::vector<SiteStack> sites() const {
    return {{&line9, 6, 1, "cudaMalloc"},
            {&line7_main, 5, 2, "cudaMalloc"},
            {&library, 4, 1, "cudaMalloc"},
            {&line7_warmup, 3, 1, "cudaMalloc"}};
  }
};

TEST(SiteRows, ByLineJoinsCallersOfOneLine) {
  Sites s;
  const std::vector<SiteRow> rows = group_sites(s.sites(), GroupBy::Line);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].members, (std::vector<size_t>{1, 3}));  // line 7: 5 + 3 bytes
  EXPECT_EQ(rows[0].bytes, 8u);
  EXPECT_EQ(rows[0].count, 3u);
  EXPECT_EQ(rows[1].members, (std::vector<size_t>{0}));  // line 9
  EXPECT_EQ(rows[2].members, (std::vector<size_t>{2}));  // no user frame
}

Frame library(const std::string& module, const std::string& function) {
  Frame f;
  f.module = module;
  f.function = function;
  return f;
}

// Stacks with no user frame (autograd's backward threads) are one row per set of libraries,
// whatever the order of their frames; another set of libraries is another row. --group-by stack
// still lists each.
TEST(SiteRows, StacksWithoutUserFrameShareARowPerSetOfLibraries) {
  const std::vector<Frame> backward_a = {kCuda, library("/t/libc10_cuda.so", "malloc"),
                                         library("/t/libtorch_cpu.so", "Engine::thread_main")};
  const std::vector<Frame> backward_b = {library("/t/libc10_cuda.so", "free_cached"), kCuda,
                                         library("/t/libtorch_cpu.so", "evaluate")};
  const std::vector<Frame> nccl = {kCuda, library("/t/libnccl.so.2", "ncclCommInit")};
  const std::vector<SiteStack> sites = {{&backward_a, 8, 1, "cudaMalloc"},
                                        {&nccl, 6, 1, "cudaMalloc"},
                                        {&backward_b, 4, 2, "cudaMalloc"}};
  const std::vector<SiteRow> rows = group_sites(sites, GroupBy::Line);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].members, (std::vector<size_t>{0, 2}));
  EXPECT_EQ(rows[0].bytes, 12u);
  EXPECT_EQ(rows[0].count, 3u);
  EXPECT_EQ(rows[1].members, (std::vector<size_t>{1}));
  EXPECT_EQ(group_sites(sites, GroupBy::Function).size(), 2u);
  EXPECT_EQ(group_sites(sites, GroupBy::Stack).size(), 3u);
  EXPECT_EQ(user_frame_text(backward_a),
            "no frame of user code: every frame in libcudart.so.13, libc10_cuda.so, "
            "libtorch_cpu.so");
}

// A backward pass names its autograd node: one row per node, whatever path inside the node's
// work allocated (the ops it runs, the allocator's entry point).
TEST(SiteRows, BackwardPassesShareARowPerAutogradNode) {
  auto backward = [](const std::string& node, const std::string& op) {
    return std::vector<Frame>{
        library("/t/libc10_cuda.so", "c10::cuda::CUDACachingAllocator::malloc"),
        library("/t/libtorch_cpu.so", "at::_ops::" + op + "::call()"),
        library("/t/libtorch_cpu.so", "torch::autograd::generated::" + node + "::apply(x&&)"),
        library("/t/libtorch_cpu.so", "torch::autograd::Node::operator()(x&&)"),
        library("/t/libtorch_cpu.so", "torch::autograd::Engine::thread_main()")};
  };
  const std::vector<Frame> mm1 = backward("AddmmBackward0", "mm"),
                           mm2 = backward("AddmmBackward0", "sum"),
                           grad = backward("AccumulateGrad", "clone");
  const std::vector<SiteStack> sites = {
      {&mm1, 8, 1, "block"}, {&grad, 6, 1, "block"}, {&mm2, 4, 2, "block"}};
  const std::vector<SiteRow> rows = group_sites(sites, GroupBy::Line);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].members, (std::vector<size_t>{0, 2}));
  EXPECT_EQ(rows[0].bytes, 12u);
  EXPECT_EQ(rows[1].members, (std::vector<size_t>{1}));
  EXPECT_EQ(autograd_node(grad), "AccumulateGrad");
}

TEST(SiteRows, ByFunctionJoinsTheLinesOfOneFunction) {
  Sites s;
  const std::vector<SiteRow> rows = group_sites(s.sites(), GroupBy::Function);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].members, (std::vector<size_t>{0, 1, 3}));
  EXPECT_EQ(rows[0].bytes, 14u);
}

TEST(SiteRows, ByStackKeepsEverySite) {
  Sites s;
  const std::vector<SiteRow> rows = group_sites(s.sites(), GroupBy::Stack);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].members, (std::vector<size_t>{0}));
  EXPECT_EQ(rows[3].members, (std::vector<size_t>{3}));
}

TEST(SiteRows, KindsNeverShareARow) {
  Sites s;
  std::vector<SiteStack> sites = s.sites();
  sites[3].kind = "cudaMallocManaged";
  const std::vector<SiteRow> rows = group_sites(sites, GroupBy::Line);
  EXPECT_EQ(rows.size(), 4u);
}

TEST(SiteRows, NamesOfGroupings) {
  EXPECT_EQ(parse_group_by("line"), GroupBy::Line);
  EXPECT_EQ(parse_group_by("function"), GroupBy::Function);
  EXPECT_EQ(parse_group_by("stack"), GroupBy::Stack);
  EXPECT_EQ(parse_group_by("file"), std::nullopt);
}

}  // namespace
}  // namespace gmemhook::analysis

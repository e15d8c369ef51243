// A stack in JSON (report_common's write_frames): `--depth` never cuts the list above its user
// frame, so user_frame always indexes a frame of the list (the HTML page, which embeds stacks 12
// deep, had read past the end and shown "no stack recorded" for GPT-2's leaks).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyzer/output/json_writer.h"
#include "analyzer/reports/report_common.h"

namespace gmemhook::analysis {
namespace {

Frame frame(const std::string& module, const std::string& function) {
  Frame f;
  f.module = module;
  f.function = function;
  return f;
}

nlohmann::json stack_json(const std::vector<Frame>& frames, size_t depth) {
  std::string text;
  JsonWriter json(text);
  json.begin_object();
  write_frames(json, frames, depth);
  json.end_object();
  return nlohmann::json::parse(text);
}

// Five frames of CUDA and PyTorch libraries, then the program's own two.
std::vector<Frame> deep_user_stack() {
  std::vector<Frame> frames;
  for (int i = 0; i < 3; ++i) frames.push_back(frame("/cuda/libcublas.so.13", "cublas_inner"));
  for (int i = 0; i < 2; ++i) frames.push_back(frame("/torch/lib/libtorch_cuda.so", "at_op"));
  frames.push_back(frame("/opt/app/train", "step"));
  frames.push_back(frame("/opt/app/train", "main"));
  return frames;
}

TEST(StackJson, DepthKeepsEveryFrameDownToTheUserFrame) {
  const nlohmann::json j = stack_json(deep_user_stack(), 2);
  ASSERT_EQ(j["user_frame"], 5);
  ASSERT_EQ(j["stack"].size(), 6u);  // two asked for, kept down to index 5
  EXPECT_EQ(j["stack"][5]["function"], "step");
  EXPECT_EQ(j["stack"][5]["owner"], "user");
}

TEST(StackJson, DepthBeyondTheUserFrameAndZeroAreUnchanged) {
  EXPECT_EQ(stack_json(deep_user_stack(), 6)["stack"].size(), 6u);
  EXPECT_EQ(stack_json(deep_user_stack(), 0)["stack"].size(), 7u);
  // A stack of libraries only has no user frame: the depth alone decides.
  std::vector<Frame> library(4, frame("/cuda/libcublas.so.13", "cublas_inner"));
  const nlohmann::json j = stack_json(library, 2);
  EXPECT_TRUE(j["user_frame"].is_null());
  EXPECT_EQ(j["stack"].size(), 2u);
}

}  // namespace
}  // namespace gmemhook::analysis

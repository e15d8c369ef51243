// Module epochs and the stack ids they split: snapshots that only add modules change nothing;
// one that takes code away gives the stacks under that code new ids from its sequence number on.
#include "analyzer/model/module_epochs.h"

#include <gtest/gtest.h>

#include "analyzer/model/stack_interner.h"

namespace gmemhook::analysis {
namespace {

Module module(const std::string& path, uint64_t bias, uint64_t size = 0x1000) {
  return Module{path, "", bias, {Segment{0, size, 5}}};
}

ModuleSnapshot snapshot(uint64_t seq, std::vector<Module> modules) {
  return ModuleSnapshot{seq, 0, modules.size(), std::move(modules)};
}

TEST(ModuleEpochs, SnapshotsThatOnlyAddAreOneEpochNamedByTheLatest) {
  const ModuleEpochs epochs({snapshot(0, {module("main", 0x10000)}),
                             snapshot(5, {module("main", 0x10000), module("a.so", 0x50000)})});
  ASSERT_EQ(epochs.count(), 1u);
  EXPECT_EQ(epochs.modules(0).size(), 2u);
  const uint64_t in_a[] = {0x50010, 0x10010};
  EXPECT_EQ(epochs.group(in_a, 0), 0u);
  EXPECT_EQ(epochs.naming_epoch(in_a, 0), 0u);
}

TEST(ModuleEpochs, AReloadSplitsOnlyTheStacksThroughTheReloadedCode) {
  // a.so unloaded and b.so loaded at its address; c.so added at the same time elsewhere.
  const ModuleEpochs epochs(
      {snapshot(0, {module("main", 0x10000), module("a.so", 0x50000)}),
       snapshot(7, {module("main", 0x10000), module("b.so", 0x50000), module("c.so", 0x90000)})});
  ASSERT_EQ(epochs.count(), 2u);
  EXPECT_EQ(epochs.starts_after_seq(1), 7u);
  EXPECT_EQ(epochs.modules(0)[1].path, "a.so");
  EXPECT_EQ(epochs.modules(1)[1].path, "b.so");
  const uint64_t through_lib[] = {0x50010, 0x10010};
  const uint64_t main_only[] = {0x10020};
  EXPECT_EQ(epochs.group(through_lib, 0), 0u);
  EXPECT_EQ(epochs.group(through_lib, 1), 1u);
  EXPECT_EQ(epochs.naming_epoch(through_lib, 0), 0u);
  EXPECT_EQ(epochs.naming_epoch(through_lib, 1), 1u);
  EXPECT_EQ(epochs.group(main_only, 1), 0u);
  // Named by the last epoch that still has its code: with every module added since.
  EXPECT_EQ(epochs.naming_epoch(main_only, 0), 1u);

  StackInterner stacks;
  stacks.set_epochs(&epochs);
  stacks.enter_epoch(0);
  stacks.add(0, 1, through_lib);
  stacks.add(0, 2, main_only);
  const uint32_t lib_before = stacks.id(0, 1), main_before = stacks.id(0, 2);
  EXPECT_EQ(stacks.naming_epoch(lib_before), 0u);
  stacks.enter_epoch(1);  // the file's ids stay, as the hook wrote them
  EXPECT_NE(stacks.id(0, 1), lib_before);
  EXPECT_EQ(stacks.naming_epoch(stacks.id(0, 1)), 1u);
  EXPECT_EQ(stacks.id(0, 2), main_before);
  // A second pass starts over in epoch 0, with the same ids.
  stacks.enter_epoch(0);
  EXPECT_EQ(stacks.id(0, 1), lib_before);
}

}  // namespace
}  // namespace gmemhook::analysis

#include <gtest/gtest.h>

#include "graph/graph.h"
#include "graph/rewriter.h"
#include "tests/graph/test_util.h"

namespace rewire {
namespace {

using testing::F32;
using testing::Must;
using testing::V;

// Two parallel matmuls sharing x, summed. `swap` adds the branches in the other order, and
// `pad_nodes` inserts unrelated leaves first so node ids differ.
Graph TwoBranches(bool swap, int pad_nodes = 0, float scale = 0.5f) {
  Graph g;
  for (int i = 0; i < pad_nodes; ++i) Must(g.AddWeight("pad" + std::to_string(i), {1}, {}));
  const NodeId x = Must(g.AddInput("x", F32({4, 8})));
  NodeId a, b, wa, wb;
  if (!swap) {
    wa = Must(g.AddWeight("wa", {8, 8}, {}));
    wb = Must(g.AddWeight("wb", {8, 8}, {}));
    a = Must(g.AddOp(OpType::kMatMul, {V(x), V(wa)}));
    b = Must(g.AddOp(OpType::kMatMul, {V(x), V(wb)}));
  } else {
    wb = Must(g.AddWeight("wb", {8, 8}, {}));
    b = Must(g.AddOp(OpType::kMatMul, {V(x), V(wb)}));
    wa = Must(g.AddWeight("wa", {8, 8}, {}));
    a = Must(g.AddOp(OpType::kMatMul, {V(x), V(wa)}));
  }
  const NodeId s = Must(g.AddOp(OpType::kAdd, {V(a), V(b)}));
  const NodeId y = Must(g.AddOp(OpType::kScalarMul, {V(s)}, {{"scalar", scale}}));
  EXPECT_TRUE(g.AddOutput("y", V(y)).ok());
  return g;
}

TEST(Hash, IndependentOfInsertionOrderAndIds) {
  const uint64_t h = TwoBranches(false).Hash();
  EXPECT_EQ(TwoBranches(true).Hash(), h);
  EXPECT_EQ(TwoBranches(false, 3).Hash(), TwoBranches(false, 5).Hash());
}

TEST(Hash, DependsOnAttributesWiringAndNames) {
  const uint64_t h = TwoBranches(false).Hash();
  EXPECT_NE(TwoBranches(false, 0, 0.25f).Hash(), h);
  // Same ops, different wiring: Add(b, a) instead of Add(a, b) is a different graph.
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({4, 8})));
  const NodeId wa = Must(g.AddWeight("wa", {8, 8}, {}));
  const NodeId wb = Must(g.AddWeight("wb", {8, 8}, {}));
  const NodeId a = Must(g.AddOp(OpType::kMatMul, {V(x), V(wa)}));
  const NodeId b = Must(g.AddOp(OpType::kMatMul, {V(x), V(wb)}));
  const NodeId s = Must(g.AddOp(OpType::kAdd, {V(b), V(a)}));
  const NodeId y = Must(g.AddOp(OpType::kScalarMul, {V(s)}, {{"scalar", 0.5f}}));
  ASSERT_TRUE(g.AddOutput("y", V(y)).ok());
  EXPECT_NE(g.Hash(), h);
  // Output names are part of the identity.
  Graph renamed = TwoBranches(false);
  Graph other;
  const NodeId x2 = Must(other.AddInput("x", F32({4, 8})));
  ASSERT_TRUE(other.AddOutput("z", V(x2)).ok());
  Graph same;
  const NodeId x3 = Must(same.AddInput("x", F32({4, 8})));
  ASSERT_TRUE(same.AddOutput("y", V(x3)).ok());
  EXPECT_NE(other.Hash(), same.Hash());
}

TEST(Hash, DeadNodesDoNotContribute) {
  Graph g = TwoBranches(false);
  const uint64_t h = g.Hash();
  Must(g.AddOp(OpType::kRelu, {V(g.inputs()[0])}, {}, "dead"));
  EXPECT_EQ(g.Hash(), h);
}

TEST(Hash, LazyWeightInitIsNotPartOfIdentity) {
  Graph a, b;
  const NodeId wa = Must(a.AddWeight("w", {2, 2}, WeightInit{-1, 1, 1}));
  const NodeId wb = Must(b.AddWeight("w", {2, 2}, WeightInit{-1, 1, 2}));
  ASSERT_TRUE(a.AddOutput("y", V(wa)).ok());
  ASSERT_TRUE(b.AddOutput("y", V(wb)).ok());
  EXPECT_EQ(a.Hash(), b.Hash());
}

TEST(Hash, SmallConstantsHashByContent) {
  auto make = [](float v) {
    Graph g;
    const NodeId c = Must(
        g.AddConstant("c", std::make_shared<const HostTensor>(HostTensor::FromFloats({1}, {v}))));
    EXPECT_TRUE(g.AddOutput("y", V(c)).ok());
    return g.Hash();
  };
  EXPECT_EQ(make(1.f), make(1.f));
  EXPECT_NE(make(1.f), make(2.f));
}

TEST(Hash, RewriteBackToTheSameStructureGivesTheSameHash) {
  Graph g = TwoBranches(false);
  const uint64_t h = g.Hash();
  Rewriter rw(g);
  const NodeId relu = g.FindNode("x");
  // Insert y2 = ScalarMul(Add(a,b)) duplicate and swap the output to it, then drop the old one.
  const NodeId old_y = g.outputs()[0].value.node;
  const ValueRef sum = g.node(old_y).inputs[0];
  const NodeId new_y = Must(rw.AddOp(OpType::kScalarMul, {sum}, {{"scalar", 0.5f}}));
  ASSERT_TRUE(rw.ReplaceAllUses(V(old_y), V(new_y)).ok());
  rw.RemoveIfDead(old_y);
  EXPECT_EQ(g.Hash(), h);
  EXPECT_NE(relu, kNoNode);
}

}  // namespace
}  // namespace rewire

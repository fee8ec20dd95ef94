#include "kernels/fold.h"

#include <gtest/gtest.h>

#include "graph/weights.h"
#include "kernels/executor.h"

namespace rewire {
namespace {

// y = x @ Concat(Transpose(w1), w2): the Concat and Transpose are weight-only.
TEST(Fold, WeightOnlySubgraphsBecomeWeightsWithTheSameValues) {
  Graph g;
  const NodeId x = *g.AddInput("x", {DType::kFloat32, {2, 4}});
  const NodeId w1 = *g.AddWeight("w1", {3, 4}, WeightInit{-1, 1, 1});
  const NodeId w2 = *g.AddWeight("w2", {4, 5}, WeightInit{-1, 1, 2});
  const NodeId t = *g.AddOp(OpType::kTranspose, {{w1, 0}});
  const NodeId c = *g.AddOp(OpType::kConcat, {{t, 0}, {w2, 0}}, {{"axis", int64_t{1}}});
  const NodeId m = *g.AddOp(OpType::kMatMul, {{x, 0}, {c, 0}});
  const NodeId r = *g.AddOp(OpType::kRelu, {{m, 0}});
  ASSERT_TRUE(g.AddOutput("y", {r, 0}).ok());
  const Graph original = g;
  const TensorMap inputs = RandomInputs(g, 3);

  auto folded = FoldWeightSubgraphs(g);
  ASSERT_TRUE(folded.ok()) << folded.status().message();
  EXPECT_EQ(folded->folded_ops, 2);
  EXPECT_EQ(folded->new_weights, 1);
  EXPECT_EQ(g.NumOperators(), 2);  // MatMul, Relu
  EXPECT_TRUE(g.Validate().ok()) << g.Validate().message();
  EXPECT_FALSE(g.Contains(w1));
  const Node& mm = g.node(g.node(g.outputs()[0].value.node).inputs[0].node);
  EXPECT_EQ(g.node(mm.inputs[1].node).op, OpType::kWeight);
  EXPECT_EQ(g.type(mm.inputs[1]).shape, (Shape{4, 8}));

  auto before = RunGraph(original, inputs);
  auto after = RunGraph(g, inputs);
  ASSERT_TRUE(before.ok() && after.ok());
  auto d = Compare(*after->at("y"), *before->at("y"));
  ASSERT_TRUE(d.ok());
  EXPECT_LE(d->max_abs, 1e-6);

  auto again = FoldWeightSubgraphs(g);  // nothing left to fold
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->folded_ops, 0);
}

TEST(Fold, GraphWithoutWeightOnlyOpsIsUnchanged) {
  Graph g;
  const NodeId x = *g.AddInput("x", {DType::kFloat32, {2, 4}});
  const NodeId w = *g.AddWeight("w", {4, 4}, {});
  const NodeId m = *g.AddOp(OpType::kMatMul, {{x, 0}, {w, 0}});
  ASSERT_TRUE(g.AddOutput("y", {m, 0}).ok());
  const uint64_t h = g.Hash();
  auto r = FoldWeightSubgraphs(g);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->folded_ops, 0);
  EXPECT_EQ(g.Hash(), h);
}

}  // namespace
}  // namespace rewire

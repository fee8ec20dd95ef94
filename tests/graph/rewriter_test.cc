#include "graph/rewriter.h"

#include <gtest/gtest.h>

#include "tests/graph/test_util.h"

namespace rewire {
namespace {

using testing::F32;
using testing::Must;
using testing::V;

struct Recorder : RewriteListener {
  std::vector<NodeId> added, removed;
  int input_changes = 0;
  void OnNodeAdded(const Graph&, NodeId id) override { added.push_back(id); }
  void OnNodeRemoved(const Graph&, const Node& n) override { removed.push_back(n.id); }
  void OnInputChanged(const Graph&, NodeId, uint32_t) override { ++input_changes; }
};

// x -> relu -> sigmoid -> out ; relu also feeds tanh -> out2
struct Fixture {
  Graph g;
  NodeId x, relu, sig, tanh_;
  Fixture() {
    x = Must(g.AddInput("x", F32({2, 3})));
    relu = Must(g.AddOp(OpType::kRelu, {V(x)}, {}, "relu"));
    sig = Must(g.AddOp(OpType::kSigmoid, {V(relu)}, {}, "sig"));
    tanh_ = Must(g.AddOp(OpType::kTanh, {V(relu)}, {}, "tanh"));
    EXPECT_TRUE(g.AddOutput("out", V(sig)).ok());
    EXPECT_TRUE(g.AddOutput("out2", V(tanh_)).ok());
  }
};

TEST(Rewriter, ReplaceAllUsesRewiresConsumersAndOutputsAndRecordsDiff) {
  Fixture f;
  Recorder rec;
  Rewriter rw(f.g, &rec);
  // Replace relu with leaky relu.
  const NodeId leaky = Must(rw.AddOp(OpType::kLeakyRelu, {V(f.x)}, {}, "leaky"));
  ASSERT_TRUE(rw.ReplaceAllUses(V(f.relu), V(leaky)).ok());
  rw.RemoveIfDead(f.relu);
  EXPECT_FALSE(f.g.Contains(f.relu));
  EXPECT_EQ(f.g.node(f.sig).inputs[0], V(leaky));
  EXPECT_EQ(f.g.node(f.tanh_).inputs[0], V(leaky));
  EXPECT_EQ(f.g.node(leaky).users[0].size(), 2u);
  EXPECT_TRUE(f.g.Validate().ok()) << f.g.Validate().message();
  const GraphDiff d = rw.TakeDiff();
  EXPECT_EQ(d.added, std::vector<NodeId>{leaky});
  EXPECT_EQ(d.removed, std::vector<NodeId>{f.relu});
  EXPECT_EQ(rec.added, d.added);
  EXPECT_EQ(rec.removed, d.removed);
  EXPECT_EQ(rec.input_changes, 2);
  EXPECT_TRUE(rw.TakeDiff().empty());
}

TEST(Rewriter, GraphOutputsFollowReplacement) {
  Fixture f;
  Rewriter rw(f.g);
  const NodeId s2 = Must(rw.AddOp(OpType::kSigmoid, {V(f.x)}));
  ASSERT_TRUE(rw.ReplaceAllUses(V(f.sig), V(s2)).ok());
  EXPECT_EQ(f.g.outputs()[0].value, V(s2));
  rw.RemoveIfDead(f.sig);
  EXPECT_FALSE(f.g.Contains(f.sig));
  EXPECT_TRUE(f.g.Contains(f.relu));  // still used by tanh
}

TEST(Rewriter, RefusesTypeMismatchAndCyclesLeavingGraphUnchanged) {
  Fixture f;
  Rewriter rw(f.g);
  const uint64_t h = f.g.Hash();
  const NodeId w = Must(f.g.AddWeight("w", {3, 4}, {}));
  const NodeId mm = Must(rw.AddOp(OpType::kMatMul, {V(f.relu), V(w)}));
  EXPECT_FALSE(rw.ReplaceAllUses(V(f.relu), V(mm)).ok());  // [2,4] vs [2,3]
  // sig2 = sigmoid(relu); replacing relu by sig2 would make sig2 read itself.
  const NodeId sig2 = Must(rw.AddOp(OpType::kSigmoid, {V(f.relu)}));
  auto st = rw.ReplaceAllUses(V(f.relu), V(sig2));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cycle"), std::string::npos);
  EXPECT_EQ(f.g.node(f.sig).inputs[0], V(f.relu));
  EXPECT_EQ(f.g.Hash(), h);
  EXPECT_TRUE(f.g.Validate().ok());
}

TEST(Rewriter, RemoveNodeRefusesUsedNodesOutputsAndInputs) {
  Fixture f;
  Rewriter rw(f.g);
  EXPECT_FALSE(rw.RemoveNode(f.relu).ok());
  EXPECT_FALSE(rw.RemoveNode(f.sig).ok());
  EXPECT_FALSE(rw.RemoveNode(f.x).ok());
  EXPECT_FALSE(rw.RemoveNode(12345).ok());
}

TEST(Rewriter, NodeAddedThenRemovedIsInNeitherList) {
  Fixture f;
  Rewriter rw(f.g);
  const NodeId tmp = Must(rw.AddOp(OpType::kExp, {V(f.x)}));
  ASSERT_TRUE(rw.RemoveNode(tmp).ok());
  EXPECT_TRUE(rw.TakeDiff().empty());
}

TEST(Rewriter, EditsOnACopyLeaveTheOriginalIntact) {
  Fixture f;
  Graph copy = f.g;
  const uint64_t h = f.g.Hash();
  Rewriter rw(copy);
  const NodeId e = Must(rw.AddOp(OpType::kExp, {V(f.x)}));
  ASSERT_TRUE(rw.ReplaceAllUses(V(f.relu), V(e)).ok());
  rw.RemoveIfDead(f.relu);
  EXPECT_EQ(f.g.Hash(), h);
  EXPECT_TRUE(f.g.Contains(f.relu));
  EXPECT_EQ(f.g.node(f.x).users[0].size(), 1u);
  EXPECT_TRUE(f.g.Validate().ok());
  EXPECT_TRUE(copy.Validate().ok());
  EXPECT_NE(copy.Hash(), h);
}

TEST(Rewriter, RemovedLeafNameCanBeReused) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({2})));
  const NodeId w = Must(g.AddWeight("w", {2}, {}));
  const NodeId a = Must(g.AddOp(OpType::kAdd, {V(x), V(w)}));
  ASSERT_TRUE(g.AddOutput("y", V(a)).ok());
  Rewriter rw(g);
  const NodeId e = Must(rw.AddOp(OpType::kExp, {V(x)}));
  ASSERT_TRUE(rw.ReplaceAllUses(V(a), V(e)).ok());
  rw.RemoveIfDead(a);
  EXPECT_FALSE(g.Contains(w));
  EXPECT_EQ(g.FindNode("w"), kNoNode);
  EXPECT_TRUE(
      rw.AddWeightData("w", std::make_shared<const HostTensor>(HostTensor::FromFloats({1}, {1.f})))
          .ok());
  EXPECT_TRUE(g.Validate().ok());
}

}  // namespace
}  // namespace rewire

#include "env/eqsat/egraph.h"

#include <gtest/gtest.h>

#include "env/eqsat/cycles.h"
#include "env/eqsat/extract.h"
#include "tests/graph/test_util.h"
#include "tests/ruleset/shipped_rules.h"

namespace rewire::eqsat {
namespace {

using testing::F32;
using testing::Must;
using testing::V;

/// x -> Relu -> a; x -> Relu (a duplicate) -> b; y = Add(a, b); w -> Transpose (weight-only).
struct Net {
  Graph g;
  NodeId x, w, r1, r2, add, wt;
  Net() {
    x = Must(g.AddInput("x", F32({4, 4})));
    w = Must(g.AddWeight("w", {4, 4}, {}));
    r1 = Must(g.AddOp(OpType::kRelu, {V(x)}));
    r2 = Must(g.AddOp(OpType::kRelu, {V(x)}));
    add = Must(g.AddOp(OpType::kAdd, {V(r1), V(r2)}));
    wt = Must(g.AddOp(OpType::kTranspose, {V(w)}, {{"perm", Ints{1, 0}}}));
    const NodeId mm = Must(g.AddOp(OpType::kMatMul, {V(add), V(wt)}));
    EXPECT_TRUE(g.AddOutput("y", V(mm)).ok());
  }
};

TEST(EGraph, OneClassPerValueWithIdenticalOperatorsShared) {
  Net n;
  const EGraph eg = Must(EGraph::FromGraph(n.g));
  // x, w, Relu (twice: one e-node), Add, Transpose, MatMul.
  EXPECT_EQ(eg.num_nodes(), 6u);
  EXPECT_EQ(eg.num_classes(), 6u);
  ASSERT_EQ(eg.roots().size(), 1u);
  EXPECT_EQ(eg.roots()[0].name, "y");
  EXPECT_EQ(eg.Types(eg.roots()[0].cls)[0], F32({4, 4}));
}

TEST(EGraph, WeightOnlyClassesFollowTheirOperands) {
  Net n;
  const EGraph eg = Must(EGraph::FromGraph(n.g));
  size_t weight_only = 0;
  for (ClassId c : eg.Classes()) weight_only += eg.WeightOnly(c);
  EXPECT_EQ(weight_only, 2u);  // w and its Transpose
}

TEST(EGraph, RebuildMergesOperatorsWhoseOperandsBecameEqual) {
  Graph g;
  const NodeId a = Must(g.AddInput("a", F32({3})));
  const NodeId b = Must(g.AddInput("b", F32({3})));
  const NodeId ra = Must(g.AddOp(OpType::kRelu, {V(a)}));
  const NodeId rb = Must(g.AddOp(OpType::kRelu, {V(b)}));
  const NodeId ea = Must(g.AddOp(OpType::kExp, {V(ra)}));
  const NodeId eb = Must(g.AddOp(OpType::kExp, {V(rb)}));
  ASSERT_TRUE(g.AddOutput("p", V(ea)).ok());
  ASSERT_TRUE(g.AddOutput("q", V(eb)).ok());
  EGraph eg = Must(EGraph::FromGraph(g));
  ASSERT_EQ(eg.num_nodes(), 6u);
  const ClassId ca = eg.roots()[0].cls, cb = eg.roots()[1].cls;
  EXPECT_NE(eg.Find(ca), eg.Find(cb));
  // Merge the inputs' classes: Relu(a) = Relu(b), then Exp(..) = Exp(..) by congruence.
  ClassId xa = kNone, xb = kNone;
  for (ClassId c : eg.Classes()) {
    for (ENodeId n : eg.Nodes(c)) {
      if (eg.node(n).kind != ENodeKind::kLeaf) continue;
      (eg.node(n).aux == a ? xa : xb) = c;
    }
  }
  EXPECT_TRUE(eg.Union(xa, xb));
  EXPECT_FALSE(eg.Union(xa, xb));
  eg.Rebuild();
  EXPECT_EQ(eg.Find(ca), eg.Find(cb));
  EXPECT_EQ(eg.num_nodes(), 4u);  // two leaves, one Relu, one Exp
  EXPECT_EQ(eg.num_classes(), 3u);
}

TEST(EGraph, AddOpIsHashConsedAndTypeChecked) {
  Net n;
  EGraph eg = Must(EGraph::FromGraph(n.g));
  ClassId x = kNone;
  for (ClassId c : eg.Classes()) {
    for (ENodeId e : eg.Nodes(c)) {
      if (eg.node(e).kind == ENodeKind::kLeaf && eg.node(e).aux == n.x) x = c;
    }
  }
  const size_t before = eg.num_nodes();
  const ClassId relu = Must(eg.AddOp(OpType::kRelu, {}, {x}));
  EXPECT_EQ(eg.num_nodes(), before);  // already there
  const ClassId split =
      Must(eg.AddOp(OpType::kSplit, {{"axis", int64_t{0}}, {"split", Ints{1, 3}}}, {relu}));
  EXPECT_TRUE(eg.IsTuple(split));
  const ClassId second = Must(eg.AddProject(split, 1));
  EXPECT_EQ(eg.Types(second)[0], F32({3, 4}));
  EXPECT_EQ(eg.FindProject(split, 1), second);
  EXPECT_EQ(eg.FindProject(split, 0), kNone);
  EXPECT_FALSE(eg.AddProject(split, 2).ok());
  EXPECT_FALSE(eg.AddOp(OpType::kRelu, {}, {split}).ok());           // a tuple is not a value
  EXPECT_FALSE(eg.AddOp(OpType::kMatMul, {}, {relu, second}).ok());  // [4,4] x [3,4]
}

TEST(EGraph, ExtractingTheUnchangedEGraphGivesBackTheInput) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({4, 4})));
  const NodeId w = Must(g.AddWeight("w", {4, 4}, {}));
  const NodeId r = Must(g.AddOp(OpType::kRelu, {V(x)}, {}, "relu"));
  const NodeId mm = Must(g.AddOp(OpType::kMatMul, {V(r), V(w)}, {}, "mm"));
  const NodeId s =
      Must(g.AddOp(OpType::kSplit, {V(mm)}, {{"axis", int64_t{1}}, {"split", Ints{1, 3}}}));
  ASSERT_TRUE(g.AddOutput("a", V(s, 0)).ok());
  ASSERT_TRUE(g.AddOutput("b", V(s, 1)).ok());
  auto cost = rewire::testing::AnalyticCost();
  EGraph eg = Must(EGraph::FromGraph(g));
  for (const char* kind : {"greedy", "ilp"}) {
    SCOPED_TRACE(kind);
    const Extraction e = Must(Extract(eg, *cost, {kind, {}}));
    EXPECT_EQ(e.graph.Hash(), g.Hash());
    EXPECT_EQ(e.graph.FindNode("mm") != kNoNode, true);  // names of the input's operators kept
    EXPECT_NEAR(e.cost_ms, Must(GraphCostMs(*cost, g)), 1e-12);
  }
}

TEST(EGraph, IdenticalOperatorsAreComputedOnce) {
  Net n;
  auto cost = rewire::testing::AnalyticCost();
  EGraph eg = Must(EGraph::FromGraph(n.g));
  const Extraction e = Must(Extract(eg, *cost, {"greedy", {}}));
  EXPECT_TRUE(e.graph.Validate().ok());
  EXPECT_EQ(e.graph.NumOperators(), n.g.NumOperators() - 1);
  // The extraction's cost is the cost of the graph it builds.
  EXPECT_NEAR(e.cost_ms, Must(GraphCostMs(*cost, e.graph)), 1e-12);
}

TEST(EGraph, CycleFilteringBlacklistsTheNewestNodeOfACycle) {
  // Transpose(Transpose(x)) merged into x's class: the outer Transpose now reads a class that
  // reads x's class.
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({2, 3})));
  const NodeId t1 = Must(g.AddOp(OpType::kTranspose, {V(x)}, {{"perm", Ints{1, 0}}}));
  const NodeId t2 = Must(g.AddOp(OpType::kTranspose, {V(t1)}, {{"perm", Ints{1, 0}}}));
  const NodeId r = Must(g.AddOp(OpType::kRelu, {V(t2)}));
  ASSERT_TRUE(g.AddOutput("y", V(r)).ok());
  EGraph eg = Must(EGraph::FromGraph(g));
  ClassId cx = kNone, ct2 = kNone;
  ENodeId outer = kNone;
  for (ClassId c : eg.Classes()) {
    for (ENodeId e : eg.Nodes(c)) {
      if (eg.node(e).kind == ENodeKind::kLeaf) cx = c;
      if (eg.node(e).kind == ENodeKind::kOp && eg.Origin(e) == t2) {
        ct2 = c;
        outer = e;
      }
    }
  }
  ASSERT_TRUE(eg.Union(cx, ct2));
  eg.Rebuild();
  EXPECT_EQ(FilterCycles(eg), 1u);
  EXPECT_TRUE(eg.Blacklisted(outer));
  EXPECT_EQ(FilterCycles(eg), 0u);
  auto cost = rewire::testing::AnalyticCost();
  const Extraction e = Must(Extract(eg, *cost, {"greedy", {}}));
  EXPECT_EQ(e.graph.NumOperators(), 1);  // Relu(x)
}

}  // namespace
}  // namespace rewire::eqsat

#include "env/eqsat/ematch.h"

#include <gtest/gtest.h>

#include "tests/graph/rules/matcher_test_util.h"
#include "tests/graph/test_util.h"

namespace rewire::eqsat {
namespace {

using testing::F32;
using testing::kFuse;
using testing::Must;
using testing::ParseAll;
using testing::V;

// Two Relus of inputs of equal trailing shape: merged through Concat and Split.
const char* kMergeRelu = R"(
rule merge_relu
  class merge
  source
    a = Relu(x1)
    b = Relu(x2)
  where
    precedes(a, b)
    rank(x1) == rank(x2) && take(shape(x1), 1, rank(x1)) == take(shape(x2), 1, rank(x2))
  target
    c = Concat(x1, x2; axis=0)
    r = Relu(c)
    s1, s2 = Split(r; axis=0, split=[dim(x1, 0), dim(x2, 0)])
  outputs a -> s1, b -> s2
  check x1=[2,3] x2=[4,3]
  check x1=[1,5] x2=[1,5]
end
)";

// A multi-output source statement: Relu of both halves of a Split.
const char* kCollect = R"(
rule collect
  class merge
  source
    p, q = Split(x)
    r1 = Relu(p)
    r2 = Relu(q)
  target
    r = Relu(x)
    a, b = Split(r; *p)
  outputs r1 -> a, r2 -> b
  check x=[6,4] p.axis=0 p.split=[2,4]
  check x=[2,8] p.axis=1 p.split=[3,5]
end
)";

const char* kWeightScale = R"(
rule scale_weight
  class algebraic
  source
    y = ScalarMul(w)
  where
    is_weight(w)
  target
    z = ScalarMul(w; *y)
  outputs y -> z
  check w=[2,2]
  check w=[3,1]
end
)";

ClassId LeafClass(const EGraph& eg, NodeId id) {
  for (ClassId c : eg.Classes()) {
    for (ENodeId n : eg.Nodes(c)) {
      if (eg.node(n).kind == ENodeKind::kLeaf && eg.node(n).aux == id) return c;
    }
  }
  return kNone;
}

TEST(EMatch, AppliesARuleByMergingTheReplacedClass) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({1, 2, 6, 6})));
  const NodeId w = Must(g.AddWeight("w", {4, 2, 3, 3}, {}));
  const NodeId c = Must(g.AddOp(OpType::kConv2D, {V(x), V(w)}));
  const NodeId r = Must(g.AddOp(OpType::kRelu, {V(c)}));
  ASSERT_TRUE(g.AddOutput("y", V(r)).ok());
  EGraph eg = Must(EGraph::FromGraph(g));
  const auto rules = ParseAll(kFuse);
  const ERule rule(rules[0], 0);
  EXPECT_FALSE(rule.multi_pattern());
  const auto matches = FindEMatches(eg, rule);
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_TRUE(Must(ApplyEMatch(eg, rule, matches[0])));
  eg.Rebuild();
  // The output's class now also holds Conv2D(x, w; relu).
  const ClassId out = eg.Find(eg.roots()[0].cls);
  bool fused = false;
  for (ENodeId n : eg.Nodes(out)) {
    const ENode& e = eg.node(n);
    fused = fused || (e.kind == ENodeKind::kOp && e.op == OpType::kConv2D &&
                      eg.attrs(e.attrs).GetString("activation") == "relu");
  }
  EXPECT_TRUE(fused);
  // Applying it again changes nothing.
  EXPECT_FALSE(Must(ApplyEMatch(eg, rule, matches[0])));
}

TEST(EMatch, PrecedesMatchesEachPairOfClassesOnce) {
  Graph g;
  const NodeId a = Must(g.AddInput("a", F32({2, 3})));
  const NodeId b = Must(g.AddInput("b", F32({4, 3})));
  const NodeId ra = Must(g.AddOp(OpType::kRelu, {V(a)}));
  const NodeId rb = Must(g.AddOp(OpType::kRelu, {V(b)}));
  ASSERT_TRUE(g.AddOutput("p", V(ra)).ok());
  ASSERT_TRUE(g.AddOutput("q", V(rb)).ok());
  EGraph eg = Must(EGraph::FromGraph(g));
  const auto rules = ParseAll(kMergeRelu);
  const ERule rule(rules[0], 0);
  EXPECT_TRUE(rule.multi_pattern());
  const auto matches = FindEMatches(eg, rule);
  ASSERT_EQ(matches.size(), 1u);
  // precedes(a, b): the class of the first Relu has the smaller id.
  EXPECT_LT(eg.ClassOf(matches[0].nodes[0]), eg.ClassOf(matches[0].nodes[1]));
  EXPECT_TRUE(Must(ApplyEMatch(eg, rule, matches[0])));
  eg.Rebuild();
  // Each output class now holds a Project of the one Split.
  for (const auto& root : eg.roots()) {
    bool projected = false;
    for (ENodeId n : eg.Nodes(eg.Find(root.cls)))
      projected = projected || eg.node(n).kind == ENodeKind::kProject;
    EXPECT_TRUE(projected) << root.name;
  }
  std::vector<ClassId> replaced, inputs;
  MatchBoundary(eg, rule, matches[0], &replaced, &inputs);
  EXPECT_EQ(replaced.size(), 2u);
  EXPECT_EQ(inputs.size(), 2u);
}

TEST(EMatch, MatchesAMultiOutputStatementThroughItsProjections) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({6, 4})));
  const NodeId s =
      Must(g.AddOp(OpType::kSplit, {V(x)}, {{"axis", int64_t{0}}, {"split", Ints{2, 4}}}));
  const NodeId r1 = Must(g.AddOp(OpType::kRelu, {V(s, 0)}));
  const NodeId r2 = Must(g.AddOp(OpType::kRelu, {V(s, 1)}));
  ASSERT_TRUE(g.AddOutput("p", V(r1)).ok());
  ASSERT_TRUE(g.AddOutput("q", V(r2)).ok());
  EGraph eg = Must(EGraph::FromGraph(g));
  const auto rules = ParseAll(kCollect);
  const ERule rule(rules[0], 0);
  const auto matches = FindEMatches(eg, rule);
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_TRUE(eg.IsTuple(eg.ClassOf(matches[0].nodes[0])));
  EXPECT_TRUE(Must(ApplyEMatch(eg, rule, matches[0])));
  eg.Rebuild();
  EXPECT_EQ(eg.Types(eg.roots()[1].cls)[0], F32({4, 4}));
}

TEST(EMatch, IsWeightReadsTheClass) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({2, 2})));
  const NodeId w = Must(g.AddWeight("w", {2, 2}, {}));
  const NodeId sx = Must(g.AddOp(OpType::kScalarMul, {V(x)}, {{"scalar", 2.0f}}));
  const NodeId sw = Must(g.AddOp(OpType::kScalarMul, {V(w)}, {{"scalar", 3.0f}}));
  ASSERT_TRUE(g.AddOutput("a", V(sx)).ok());
  ASSERT_TRUE(g.AddOutput("b", V(sw)).ok());
  const EGraph eg = Must(EGraph::FromGraph(g));
  const auto rules = ParseAll(kWeightScale);
  const auto matches = FindEMatches(eg, ERule(rules[0], 0));
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_EQ(eg.Find(matches[0].free_classes[0]), LeafClass(eg, w));
}

TEST(EMatch, LimitsAndSkipsBoundTheSearch) {
  // Four Relus of four inputs: six pairs.
  Graph h;
  for (int i = 0; i < 4; ++i) {
    const NodeId in = Must(h.AddInput("x" + std::to_string(i), F32({2, 3})));
    ASSERT_TRUE(
        h.AddOutput("y" + std::to_string(i), V(Must(h.AddOp(OpType::kRelu, {V(in)})))).ok());
  }
  const EGraph eg = Must(EGraph::FromGraph(h));
  const auto rules = ParseAll(kMergeRelu);
  const ERule rule(rules[0], 0);
  const auto all = FindEMatches(eg, rule);
  EXPECT_EQ(all.size(), 6u);  // every pair once
  EXPECT_EQ(FindEMatches(eg, rule, 2).size(), 2u);
  std::unordered_set<uint64_t> skip = {EMatchKey(eg, all[0])};
  EXPECT_EQ(FindEMatches(eg, rule, 0, &skip).size(), 5u);
  MatchBudget budget;
  budget.max_steps = 3;
  EXPECT_LT(FindEMatches(eg, rule, 0, nullptr, &budget).size(), 6u);
  EXPECT_TRUE(budget.exhausted);
}

}  // namespace
}  // namespace rewire::eqsat

#include "graph/rules/matcher.h"

#include <gtest/gtest.h>

#include "graph/rules/candidates.h"
#include "tests/graph/rules/matcher_test_util.h"
#include "tests/graph/test_util.h"

namespace rewire::rules {
namespace {

using testing::ConvNet;
using testing::F32;
using testing::kFuse;
using testing::Must;
using testing::ParseOne;
using testing::V;

// Relu on two inputs merged through Concat/Split along axis 0.
const char* kMergeRelu = R"(
rule merge_relu
  class merge
  source
    a = Relu(x1)
    b = Relu(x2)
  where
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

TEST(Matcher, FindsAndAppliesAFusionReturningTheDiff) {
  const Rule rule = ParseOne(kFuse);
  ConvNet net;
  const MatchIndex index(net.g);
  const auto matches = FindMatches(net.g, rule, 0, index);
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_EQ(matches[0].nodes, (std::vector<NodeId>{net.conv, net.relu}));
  EXPECT_EQ(matches[0].free_values, (std::vector<ValueRef>{V(net.x), V(net.w)}));
  auto diff = ApplyMatch(net.g, rule, matches[0]);
  ASSERT_TRUE(diff.ok()) << diff.status().message();
  EXPECT_EQ(diff->added.size(), 1u);
  EXPECT_EQ(diff->removed.size(), 2u);
  EXPECT_TRUE(net.g.Validate().ok()) << net.g.Validate().message();
  const Node& fused = net.g.node(net.g.outputs()[0].value.node);
  EXPECT_EQ(fused.op, OpType::kConv2D);
  EXPECT_EQ(fused.attrs.GetString("activation"), "relu");
  EXPECT_EQ(fused.attrs.GetInts("pads"), (Ints{1, 1, 1, 1}));  // copied with *c
  EXPECT_EQ(net.g.NumOperators(), 1);
}

TEST(Matcher, RejectsMatchWhoseInteriorEscapes) {
  const Rule rule = ParseOne(kFuse);
  ConvNet net(/*conv_escapes=*/true);
  RejectStats why;
  EXPECT_TRUE(FindMatches(net.g, rule, 0, MatchIndex(net.g), &why).empty());
  EXPECT_EQ(why.escaping, 1u);
}

TEST(Matcher, LiteralAttributeConstraintsFilter) {
  const Rule rule = ParseOne(kFuse);
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({1, 2, 6, 6})));
  const NodeId w = Must(g.AddWeight("w", {4, 2, 3, 3}, {}));
  const NodeId c =
      Must(g.AddOp(OpType::kConv2D, {V(x), V(w)}, {{"activation", std::string("tanh")}}));
  const NodeId r = Must(g.AddOp(OpType::kRelu, {V(c)}));
  ASSERT_TRUE(g.AddOutput("y", V(r)).ok());
  EXPECT_TRUE(FindMatches(g, rule, 0, MatchIndex(g)).empty());
}

TEST(Matcher, RejectsCyclesAndSelfInputs) {
  const Rule rule = ParseOne(kMergeRelu);
  // x -> relu1 -> exp -> relu2: merging relu1 and relu2 would feed relu2's input (which depends
  // on relu1) into the merged op.
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({2, 3})));
  const NodeId r1 = Must(g.AddOp(OpType::kRelu, {V(x)}));
  const NodeId e = Must(g.AddOp(OpType::kExp, {V(r1)}));
  const NodeId r2 = Must(g.AddOp(OpType::kRelu, {V(e)}));
  const NodeId r3 = Must(g.AddOp(OpType::kRelu, {V(r2)}));  // reads relu2 directly
  ASSERT_TRUE(g.AddOutput("y", V(r3)).ok());
  RejectStats why;
  const auto matches = FindMatches(g, rule, 0, MatchIndex(g), &why);
  EXPECT_TRUE(matches.empty());
  EXPECT_GE(why.cycle, 1u);
  EXPECT_GE(why.self_input, 1u);
}

TEST(Matcher, MultiOutputRuleMergesParallelOps) {
  const Rule rule = ParseOne(kMergeRelu);
  Graph g;
  const NodeId x1 = Must(g.AddInput("x1", F32({2, 3})));
  const NodeId x2 = Must(g.AddInput("x2", F32({4, 3})));
  const NodeId a = Must(g.AddOp(OpType::kRelu, {V(x1)}));
  const NodeId b = Must(g.AddOp(OpType::kRelu, {V(x2)}));
  ASSERT_TRUE(g.AddOutput("a", V(a)).ok());
  ASSERT_TRUE(g.AddOutput("b", V(b)).ok());
  const auto matches = FindMatches(g, rule, 0, MatchIndex(g));
  ASSERT_EQ(matches.size(), 2u);  // (a, b) and (b, a)
  Graph copy = g;
  auto diff = ApplyMatch(copy, rule, matches[0]);
  ASSERT_TRUE(diff.ok()) << diff.status().message();
  EXPECT_EQ(diff->added.size(), 3u);
  EXPECT_EQ(diff->removed.size(), 2u);
  EXPECT_TRUE(copy.Validate().ok()) << copy.Validate().message();
  EXPECT_EQ(copy.type(copy.outputs()[1].value), F32({4, 3}));
  // The original is untouched (copy-on-write).
  EXPECT_TRUE(g.Contains(a));
  EXPECT_EQ(g.NumOperators(), 2);
}

TEST(Matcher, StaleMatchIsAnErrorAndLeavesGraphUnchanged) {
  const Rule rule = ParseOne(kFuse);
  ConvNet net;
  const auto matches = FindMatches(net.g, rule, 0, MatchIndex(net.g));
  ASSERT_EQ(matches.size(), 1u);
  ASSERT_TRUE(ApplyMatch(net.g, rule, matches[0]).ok());
  const uint64_t h = net.g.Hash();
  EXPECT_FALSE(ApplyMatch(net.g, rule, matches[0]).ok());
  EXPECT_EQ(net.g.Hash(), h);
}

TEST(Candidates, DeduplicatesIdenticalResultsAndCapsRoundRobin) {
  std::vector<Rule> rules;
  rules.push_back(ParseOne(kMergeRelu));
  rules.push_back(ParseOne(kMergeRelu));
  rules[1].name = "merge_relu_again";
  Graph g;
  std::vector<NodeId> relus;
  for (int i = 0; i < 3; ++i) {
    const NodeId x = Must(g.AddInput("x" + std::to_string(i), F32({2, 3})));
    relus.push_back(Must(g.AddOp(OpType::kRelu, {V(x)})));
    ASSERT_TRUE(g.AddOutput("y" + std::to_string(i), V(relus.back())).ok());
  }
  const CandidateSet all = EnumerateCandidates(g, rules);
  EXPECT_EQ(all.matches, 12u);    // 6 ordered pairs, twice
  EXPECT_EQ(all.duplicates, 6u);  // the second rule repeats the first
  EXPECT_EQ(all.candidates.size(), 6u);
  EXPECT_EQ(all.dropped, 0u);
  CandidateOptions capped;
  capped.max_candidates = 4;
  const CandidateSet few = EnumerateCandidates(g, rules, capped);
  EXPECT_EQ(few.candidates.size(), 4u);
  EXPECT_EQ(few.dropped, 2u);
  // Deterministic: the same graph gives the same candidates in the same order.
  const CandidateSet again = EnumerateCandidates(g, rules, capped);
  for (size_t i = 0; i < few.candidates.size(); ++i) {
    EXPECT_EQ(few.candidates[i].result_hash, again.candidates[i].result_hash);
  }
}

TEST(Candidates, RoundRobinGivesEveryRuleATurn) {
  std::vector<Rule> rules;
  rules.push_back(ParseOne(kMergeRelu));
  rules.push_back(ParseOne(kFuse));
  ConvNet net;
  // Add many Relu pairs so merge_relu has many matches.
  for (int i = 0; i < 4; ++i) {
    const NodeId x = Must(net.g.AddInput("in" + std::to_string(i), F32({2, 3})));
    const NodeId r = Must(net.g.AddOp(OpType::kRelu, {V(x)}));
    ASSERT_TRUE(net.g.AddOutput("o" + std::to_string(i), V(r)).ok());
  }
  CandidateOptions opts;
  opts.max_candidates = 2;
  const CandidateSet set = EnumerateCandidates(net.g, rules, opts);
  ASSERT_EQ(set.candidates.size(), 2u);
  EXPECT_EQ(set.candidates[0].match.rule, 0);
  EXPECT_EQ(set.candidates[1].match.rule, 1);  // fuse is not starved
  EXPECT_GT(set.dropped, 0u);
}

TEST(Matcher, IsWeightOnlyFollowsWeightSubgraphs) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({2, 2})));
  const NodeId w = Must(g.AddWeight("w", {2, 2}, {}));
  const NodeId t = Must(g.AddOp(OpType::kTranspose, {V(w)}));
  const NodeId m = Must(g.AddOp(OpType::kMatMul, {V(x), V(t)}));
  EXPECT_TRUE(IsWeightOnly(g, V(w)));
  EXPECT_TRUE(IsWeightOnly(g, V(t)));
  EXPECT_FALSE(IsWeightOnly(g, V(m)));
  const MatchIndex index(g);
  EXPECT_TRUE(index.WeightOnly(t));
  EXPECT_FALSE(index.WeightOnly(m));
}

}  // namespace
}  // namespace rewire::rules

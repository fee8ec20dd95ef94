#include "env/features.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_set>

#include "env/environment.h"
#include "graph/models/zoo.h"
#include "tests/ruleset/shipped_rules.h"

namespace rewire {
namespace {

bool SameRecords(const std::vector<NodeRecord>& a, const std::vector<NodeRecord>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].op != b[i].op || a[i].activation != b[i].activation || a[i].flags != b[i].flags ||
        a[i].cost_pct != b[i].cost_pct)
      return false;
  }
  return true;
}

TEST(Features, CandidateRegionsHoldTheDiffAndOnlyLiveSources) {
  auto cost = testing::AnalyticCost();
  Environment env(testing::VerifiedShippedRules(), *cost);
  ASSERT_TRUE(env.Reset(*BuildModel("squeezenet")).ok());
  const int hops = 2;
  const ObservationFeatures f = EncodeObservation(env, hops);
  ASSERT_EQ(f.candidates.size(), env.candidates().size());
  ASSERT_EQ(f.num_nodes(), static_cast<int32_t>(env.graph().num_nodes()));
  for (size_t i = 0; i < f.candidates.size(); ++i) {
    const CandidateFeatures& c = f.candidates[i];
    const EnvCandidate& e = env.candidates()[i];
    int added = 0;
    for (int32_t n : c.slot_node) added += n < 0;
    EXPECT_EQ(added, static_cast<int>(e.diff.added.size()));
    EXPECT_EQ(c.removed.size(), e.diff.removed.size());
    EXPECT_EQ(c.slot_record.size(), c.slot_node.size());
    // The reward of a candidate is its cost change relative to the initial cost.
    EXPECT_NEAR(c.reward, 100.0 * (env.cost_ms() - e.cost_ms) / env.initial_cost_ms(), 1e-4);
    const std::unordered_set<int32_t> removed(c.removed.begin(), c.removed.end());
    for (const MessageRecord& m : c.messages) {
      ASSERT_GE(m.dst, 0);
      ASSERT_LT(m.dst, static_cast<int32_t>(c.slot_node.size()));
      if (m.src >= 0) {
        ASSERT_LT(m.src, f.num_nodes());
        EXPECT_FALSE(removed.count(m.src))
            << "a removed node cannot send messages in the candidate graph";
      } else {
        ASSERT_LT(-m.src - 1, static_cast<int32_t>(c.slot_node.size()));
      }
      ASSERT_LT(m.shape, f.num_shapes());
    }
  }
}

TEST(Features, ShapeFeaturesAreScaleFree) {
  // The same graph at twice the size in every dimension has the same features.
  auto cost = testing::AnalyticCost();
  auto build = [](int64_t k) {
    Graph g;
    const NodeId x = *g.AddInput("x", TensorType{DType::kFloat32, Shape{2 * k, 4 * k, 8 * k}});
    const NodeId r = *g.AddOp(OpType::kRelu, {ValueRef{x, 0}});
    const NodeId s = *g.AddOp(OpType::kAdd, {ValueRef{r, 0}, ValueRef{x, 0}});
    EXPECT_TRUE(g.AddOutput("y", ValueRef{s, 0}).ok());
    return g;
  };
  const Graph small = build(1), large = build(2);
  auto ts = CostTable::Build(*cost, small), tl = CostTable::Build(*cost, large);
  ASSERT_TRUE(ts.ok() && tl.ok());
  const ObservationFeatures fs = EncodeGraph(small, *ts, ts->total_ms());
  const ObservationFeatures fl = EncodeGraph(large, *tl, tl->total_ms());
  ASSERT_EQ(fs.num_shapes(), 1);
  EXPECT_EQ(fs.shapes, fl.shapes);
  // Rank 3 one-hot, then the last six dims right-aligned over the largest: 2/8, 4/8, 8/8.
  EXPECT_EQ(fs.shapes[3], 1.0f);
  EXPECT_FLOAT_EQ(fs.shapes[7 + 3], 0.25f);
  EXPECT_FLOAT_EQ(fs.shapes[7 + 5], 1.0f);
  EXPECT_EQ(fs.shapes[3 * 6 + 1], 1.0f);  // float32
  // Both directions of both edges and their operand positions.
  EXPECT_EQ(fs.messages.size(), 6u);
}

TEST(Environment, IsDeterministicGivenTheActions) {
  auto cost = testing::AnalyticCost();
  auto run = [&](uint64_t seed) {
    Environment env(testing::VerifiedShippedRules(), *cost);
    EXPECT_TRUE(env.Reset(*BuildModel("squeezenet")).ok());
    std::mt19937_64 rng(seed);
    std::vector<ObservationFeatures> seen;
    while (!env.done()) {
      seen.push_back(EncodeObservation(env, 2));
      const size_t n = env.candidates().size() + 1;
      EXPECT_TRUE(env.Step(env.steps() < 6 ? rng() % (n - 1 > 0 ? n - 1 : 1) : n - 1).ok());
    }
    return seen;
  };
  const auto a = run(5), b = run(5), c = run(6);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(SameRecords(a[i].nodes, b[i].nodes)) << "step " << i;
    ASSERT_EQ(a[i].candidates.size(), b[i].candidates.size());
    for (size_t k = 0; k < a[i].candidates.size(); ++k) {
      EXPECT_EQ(a[i].candidates[k].slot_node, b[i].candidates[k].slot_node);
      EXPECT_EQ(a[i].candidates[k].reward, b[i].candidates[k].reward);
    }
  }
  // Another seed takes other actions and reaches another graph.
  bool differs = a.size() != c.size();
  for (size_t i = 0; !differs && i < a.size(); ++i) differs = !SameRecords(a[i].nodes, c[i].nodes);
  EXPECT_TRUE(differs);
}

}  // namespace
}  // namespace rewire

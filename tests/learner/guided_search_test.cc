// The policy-guided beam search: what stops it, what it refuses, and that a policy's proposals
// plus the cost model's cheapest rewrite keep it at least where greedy search ends.

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "env/search.h"
#include "graph/models/zoo.h"
#include "learner/agent.h"
#include "learner/policy.h"
#include "tests/kernels/shipped_rules.h"

namespace rewire {
namespace {

namespace fs = std::filesystem;

/// An untrained policy (its greedy prior only) saved and loaded as an Agent.
std::unique_ptr<Agent> FreshAgent(const std::string& name) {
  torch::manual_seed(7);
  GnnPolicy policy(GnnShape{16, 2, 2});
  const std::string path = (fs::temp_directory_path() / ("rewire_guided_" + name + ".pt")).string();
  EXPECT_TRUE(
      SaveCheckpoint(path, policy, nullptr, CheckpointMeta{0, 0, 0, 0, GnnShape{16, 2, 2}, ""})
          .ok());
  auto agent = Agent::Load(path);
  fs::remove(path);
  EXPECT_TRUE(agent.ok()) << agent.status().message();
  return agent.ok() ? std::move(*agent) : nullptr;
}

TEST(GuidedSearch, RefusesAZeroBudgetBeamOrExpansion) {
  auto agent = FreshAgent("refuses");
  ASSERT_TRUE(agent);
  auto cost = testing::AnalyticCost();
  const Graph graph = *BuildModel("squeezenet");
  GuidedSearchOptions o;
  o.budget = 0;
  auto r = agent->GuidedSearch(graph, testing::VerifiedShippedRules(), *cost, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "the guided search needs a budget of at least 1 graph (got 0)");
  o = GuidedSearchOptions{};
  o.beam_width = 0;
  r = agent->GuidedSearch(graph, testing::VerifiedShippedRules(), *cost, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "the beam width must be at least 1 (got 0)");
  o = GuidedSearchOptions{};
  o.expand = 0;
  EXPECT_FALSE(agent->GuidedSearch(graph, testing::VerifiedShippedRules(), *cost, o).ok());
  o = GuidedSearchOptions{};
  o.cheapest = -1;
  r = agent->GuidedSearch(graph, testing::VerifiedShippedRules(), *cost, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "--cheapest must be at least 0 (got -1)");
}

TEST(GuidedSearch, StopsAtItsBudgetOfExpandedGraphs) {
  auto agent = FreshAgent("budget");
  ASSERT_TRUE(agent);
  auto cost = testing::AnalyticCost();
  GuidedSearchOptions o;
  o.budget = 5;
  o.beam_width = 3;
  auto r =
      agent->GuidedSearch(*BuildModel("squeezenet"), testing::VerifiedShippedRules(), *cost, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->reason, StopReason::kBudget);
  EXPECT_EQ(r->iterations, 5);
  EXPECT_LT(r->final_cost_ms, r->initial_cost_ms);
  EXPECT_EQ(static_cast<int>(r->steps.size()) > 0, true);
  EXPECT_DOUBLE_EQ(r->steps.back().cost_ms, r->final_cost_ms);
}

TEST(GuidedSearch, EndsNoWorseThanGreedySearchAndIsDeterministic) {
  auto agent = FreshAgent("greedy");
  ASSERT_TRUE(agent);
  auto cost = testing::AnalyticCost();
  const auto& rules = testing::VerifiedShippedRules();
  for (const char* model : {"squeezenet", "dalle"}) {
    SCOPED_TRACE(model);
    const Graph graph = *BuildModel(model);
    SearchOptions so;
    so.algorithm = "greedy";
    so.budget = 1000;
    auto greedy = RunSearch(graph, rules, *cost, so);
    ASSERT_TRUE(greedy.ok());
    GuidedSearchOptions o;
    o.beam_width = 4;
    o.expand = 2;
    o.budget = 300;
    auto a = agent->GuidedSearch(graph, rules, *cost, o);
    auto b = agent->GuidedSearch(graph, rules, *cost, o);
    ASSERT_TRUE(a.ok()) << a.status().message();
    ASSERT_TRUE(b.ok());
    EXPECT_LE(a->final_cost_ms, greedy->final_cost_ms * (1 + 1e-9));
    EXPECT_EQ(a->final_cost_ms, b->final_cost_ms);
    EXPECT_EQ(a->steps.size(), b->steps.size());
    EXPECT_EQ(a->best.Hash(), b->best.Hash());
  }
}

TEST(GuidedSearch, ItsGreedySeedKeepsItAtGreedySearchsResultWhereThePolicyStopsShort) {
  auto agent = FreshAgent("seed");
  ASSERT_TRUE(agent);
  auto cost = testing::AnalyticCost();
  const auto& rules = testing::VerifiedShippedRules();
  const Graph graph = *BuildModel("squeezenet");
  SearchOptions so;
  so.algorithm = "greedy";
  so.budget = 1000;
  auto greedy = RunSearch(graph, rules, *cost, so);
  ASSERT_TRUE(greedy.ok());
  ASSERT_GT(greedy->steps.size(), 2u);  // greedy needs far more than the one step allowed below
  GuidedSearchOptions o;
  o.horizon = 1;  // the policy's rollout and the beam take one rewrite each
  o.budget = 200;
  o.greedy_seed = false;
  auto alone = agent->GuidedSearch(graph, rules, *cost, o);
  ASSERT_TRUE(alone.ok()) << alone.status().message();
  EXPECT_GT(alone->final_cost_ms, greedy->final_cost_ms * (1 + 1e-6));
  o.greedy_seed = true;
  auto seeded = agent->GuidedSearch(graph, rules, *cost, o);
  ASSERT_TRUE(seeded.ok()) << seeded.status().message();
  EXPECT_LE(seeded->final_cost_ms, greedy->final_cost_ms * (1 + 1e-9));
  EXPECT_LE(seeded->iterations, o.budget);
  EXPECT_GE(seeded->iterations,
            static_cast<int>(greedy->steps.size()));  // greedy's steps were counted
}

}  // namespace
}  // namespace rewire

// The policy-guided beam search: what stops it, what it refuses, and that a policy's proposals
// plus the cost model's cheapest rewrite keep it at least where greedy search ends.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "env/search.h"
#include "env/search_registry.h"
#include "graph/builder.h"
#include "graph/models/zoo.h"
#include "learner/agent.h"
#include "learner/guided_search.h"
#include "learner/policy.h"
#include "learner/rl_search.h"
#include "ruleset/rule_verify.h"
#include "tests/ruleset/shipped_rules.h"

namespace rewire {
namespace {

namespace fs = std::filesystem;

/// An untrained policy (its greedy prior only) saved and loaded as an Agent.
std::unique_ptr<Agent> FreshAgent(const std::string& name) {
  torch::manual_seed(7);
  GnnPolicy policy(GnnShape{16, 2, 2});
  const std::string path = (fs::temp_directory_path() / ("rewire_guided_" + name + ".pt")).string();
  CheckpointMeta meta;
  meta.shape = GnnShape{16, 2, 2};
  EXPECT_TRUE(SaveCheckpoint(path, policy, nullptr, meta).ok());
  auto agent = Agents().Load(path);
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
  SearchLimits l;
  l.budget = 0;
  auto r = RunGuidedSearch(*agent, graph, testing::VerifiedShippedRules(), *cost, o, l);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "the guided search needs a budget of at least 1 graph (got 0)");
  l.budget = 100;
  o = GuidedSearchOptions{};
  o.beam_width = 0;
  r = RunGuidedSearch(*agent, graph, testing::VerifiedShippedRules(), *cost, o, l);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "the beam width must be at least 1 (got 0)");
  o = GuidedSearchOptions{};
  o.expand = 0;
  EXPECT_FALSE(RunGuidedSearch(*agent, graph, testing::VerifiedShippedRules(), *cost, o, l).ok());
  o = GuidedSearchOptions{};
  o.cheapest = -1;
  r = RunGuidedSearch(*agent, graph, testing::VerifiedShippedRules(), *cost, o, l);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "--cheapest must be at least 0 (got -1)");
}

TEST(GuidedSearch, StopsAtItsBudgetOfExpandedGraphs) {
  auto agent = FreshAgent("budget");
  ASSERT_TRUE(agent);
  auto cost = testing::AnalyticCost();
  GuidedSearchOptions o;
  SearchLimits l;
  l.budget = 5;
  o.beam_width = 3;
  auto r = RunGuidedSearch(*agent, *BuildModel("squeezenet"), testing::VerifiedShippedRules(),
                           *cost, o, l);
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
    SearchLimits so;
    so.budget = 1000;
    auto greedy = RunSearch("greedy", graph, rules, *cost, so);
    ASSERT_TRUE(greedy.ok());
    GuidedSearchOptions o;
    SearchLimits l;
    o.beam_width = 4;
    o.expand = 2;
    l.budget = 300;
    auto a = RunGuidedSearch(*agent, graph, rules, *cost, o, l);
    auto b = RunGuidedSearch(*agent, graph, rules, *cost, o, l);
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
  SearchLimits so;
  so.budget = 1000;
  auto greedy = RunSearch("greedy", graph, rules, *cost, so);
  ASSERT_TRUE(greedy.ok());
  ASSERT_GT(greedy->steps.size(), 2u);  // greedy needs far more than the one step allowed below
  GuidedSearchOptions o;
  SearchLimits l;
  o.horizon = 1;  // the policy's rollout and the beam take one rewrite each
  l.budget = 200;
  o.greedy_seed = false;
  auto alone = RunGuidedSearch(*agent, graph, rules, *cost, o, l);
  ASSERT_TRUE(alone.ok()) << alone.status().message();
  EXPECT_GT(alone->final_cost_ms, greedy->final_cost_ms * (1 + 1e-6));
  o.greedy_seed = true;
  auto seeded = RunGuidedSearch(*agent, graph, rules, *cost, o, l);
  ASSERT_TRUE(seeded.ok()) << seeded.status().message();
  EXPECT_LE(seeded->final_cost_ms, greedy->final_cost_ms * (1 + 1e-9));
  EXPECT_LE(seeded->iterations, l.budget);
  EXPECT_GE(seeded->iterations,
            static_cast<int>(greedy->steps.size()));  // greedy's steps were counted
}

// Sampled rollouts seed the beam: they are the rollouts `--search rl --samples` plays (the same
// seed, horizon and candidates give the same graphs), so the search ends no worse than the best of
// them; and they stop where the budget does.
TEST(GuidedSearch, ItsSampledRolloutsAreThoseOfTheRlSearchAndCountAgainstTheBudget) {
  auto agent = FreshAgent("samples");
  ASSERT_TRUE(agent);
  auto cost = testing::AnalyticCost();
  const auto& rules = testing::VerifiedShippedRules();
  const Graph graph = *BuildModel("squeezenet");
  AgentSearchOptions ao;
  ao.horizon = 12;
  ao.max_candidates = 100;
  ao.samples = 4;
  ao.seed = 5;
  auto rl = PlayRollouts(*agent, graph, rules, *cost, ao);
  ASSERT_TRUE(rl.ok()) << rl.status().message();
  ASSERT_GT(rl->sampled_best_cost_ms, 0);
  GuidedSearchOptions o;
  SearchLimits l;
  o.horizon = ao.horizon;
  o.patience = ao.horizon;  // no sampled rollout stops early, as the rl search's do not
  l.max_candidates = ao.max_candidates;
  o.samples = ao.samples;
  l.seed = ao.seed;
  o.greedy_seed = false;
  l.budget = 1000;
  auto guided = RunGuidedSearch(*agent, graph, rules, *cost, o, l);
  ASSERT_TRUE(guided.ok()) << guided.status().message();
  EXPECT_EQ(guided->stats.Number("sampled_rollouts"), ao.samples);
  EXPECT_DOUBLE_EQ(guided->stats.Number("sampled_best_cost_ms"), rl->sampled_best_cost_ms);
  EXPECT_LE(guided->final_cost_ms, rl->best.final_cost_ms * (1 + 1e-9));

  o.samples = 50;
  l.budget = 30;  // spent by the rollouts before 50 of them are played
  auto short_budget = RunGuidedSearch(*agent, graph, rules, *cost, o, l);
  ASSERT_TRUE(short_budget.ok()) << short_budget.status().message();
  EXPECT_EQ(short_budget->iterations, l.budget);
  EXPECT_EQ(short_budget->reason, StopReason::kBudget);
  EXPECT_LT(short_budget->stats.Number("sampled_rollouts"), o.samples);
}

/// Two rules: enlarging a 1x1 convolution to 3x3 (zero taps; it costs 9x the arithmetic) and
/// merging two convolutions of one input that have the same kernel size (one launch fewer).
constexpr const char* kEnlargeThenMerge = R"(
rule enlarge_1x1
  class layout
  doc "A 1x1 Conv2D as a 3x3 one with zero taps around its kernel"
  source
    c = Conv2D(x, w; group=1, pads=[0, 0, 0, 0])
  where
    is_weight(w)
    dim(w, 2) == 1 && dim(w, 3) == 1
    c.strides == [1, 1] && c.dilations == [1, 1]
  target
    e = Enlarge(w; kernel_shape=[3, 3])
    z = Conv2D(x, e; *c, pads=[1, 1, 1, 1])
  outputs c -> z
  check x=[1,4,6,6] w=[3,4,1,1]
  check x=[2,3,5,7] w=[2,3,1,1]
end

rule merge_same_kernel
  class merge
  doc "Two Conv2Ds of one input with the same kernel size: one Conv2D and a Split"
  source
    c1 = Conv2D(x, w1; group=1)
    c2 = Conv2D(x, w2; group=1)
  where
    precedes(c1, c2)
    is_weight(w1) && is_weight(w2)
    c1.strides == c2.strides && c1.pads == c2.pads && c1.dilations == c2.dilations
    c1.activation == c2.activation
    dim(w1, 2) == dim(w2, 2) && dim(w1, 3) == dim(w2, 3)
  target
    wc = Concat(w1, w2; axis=0)
    z = Conv2D(x, wc; *c1)
    a, b = Split(z; axis=1, split=[dim(w1, 0), dim(w2, 0)])
  outputs c1 -> a, c2 -> b
  check x=[1,8,10,10] w1=[16,8,3,3] w2=[8,8,3,3]
  check x=[1,3,7,7] w1=[4,3,1,1] w2=[2,3,1,1]
end
)";

// Where a rewrite that raises the cost enables one that lowers it further, greedy search stalls
// at the input and the guided search, exploring the cost model's cheapest non-improving move,
// takes both: the cost after each step rises, then falls below the input's.
TEST(GuidedSearch, TakesARewriteThatRaisesTheCostWhenItEnablesAMergeGreedyCannotSee) {
  auto agent = FreshAgent("enlarge");
  ASSERT_TRUE(agent);
  auto cost = testing::AnalyticCost();
  const fs::path file = fs::temp_directory_path() / "rewire_guided_enlarge.rules";
  { std::ofstream(file) << kEnlargeThenMerge; }
  auto rules = LoadVerifiedRules(file.string());
  fs::remove(file);
  ASSERT_TRUE(rules.ok()) << rules.status().message();
  // A 3x3 and a 1x1 convolution of one small input: launches dominate its cost.
  GraphBuilder b(3);
  ValueRef x = b.Input("x", {1, 16, 8, 8});
  b.Output("wide", b.Conv2D(x, 16, 3, 3, 1, 1, 1, 1, "none", false, "wide"));
  b.Output("narrow", b.Conv2D(x, 4, 1, 1, 1, 0, 0, 1, "none", false, "narrow"));
  auto graph = b.Finish();
  ASSERT_TRUE(graph.ok()) << graph.status().message();

  SearchLimits so;
  auto greedy = RunSearch("greedy", *graph, *rules, *cost, so);
  ASSERT_TRUE(greedy.ok());
  EXPECT_TRUE(greedy->steps.empty()) << "greedy should stall: enlarging alone costs more";

  GuidedSearchOptions o;

  SearchLimits l;
  l.budget = 20;
  o.horizon = 4;
  auto guided = RunGuidedSearch(*agent, *graph, *rules, *cost, o, l);
  ASSERT_TRUE(guided.ok()) << guided.status().message();
  ASSERT_EQ(guided->steps.size(), 2u);
  EXPECT_EQ(guided->steps[0].rule, "enlarge_1x1");
  EXPECT_EQ(guided->steps[1].rule, "merge_same_kernel");
  EXPECT_GT(guided->steps[0].cost_ms, guided->initial_cost_ms);  // the first step costs more
  EXPECT_LT(guided->final_cost_ms, greedy->final_cost_ms);       // the second pays it back
  EXPECT_DOUBLE_EQ(guided->steps[1].cost_ms, guided->final_cost_ms);
}

}  // namespace
}  // namespace rewire

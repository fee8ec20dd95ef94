#include "env/search.h"

#include "env/search_registry.h"

#include <gtest/gtest.h>

#include <cmath>

#include "cost/cost_registry.h"
#include "graph/models/zoo.h"
#include "kernels/executor.h"
#include "ruleset/rule_verify.h"
#include "tests/ruleset/shipped_rules.h"

namespace rewire {
namespace {

const std::vector<rules::Rule>& Rules() { return testing::VerifiedShippedRules(); }
std::unique_ptr<CostModel> Analytic() { return testing::AnalyticCost(); }

Graph SmallBert() {
  ModelParams p;
  p.layers = 2;
  p.hidden = 256;
  p.heads = 4;
  p.seq_len = 16;
  return *BuildModel("bert", p);
}

double MaxRelError(const Graph& a, const Graph& b) {
  const TensorMap in = RandomInputs(a, 5);
  auto x = RunGraph(a, in);
  auto y = RunGraph(b, in);
  EXPECT_TRUE(x.ok() && y.ok());
  double worst = 0;
  for (const auto& [name, t] : *x) {
    auto d = Compare(*y->at(name), *t);
    EXPECT_TRUE(d.ok());
    worst = std::max(worst, d->relative_to_peak());
  }
  return worst;
}

TEST(Search, GreedyImprovesAndStopsWhenSaturated) {
  auto cost = Analytic();
  const Graph g = SmallBert();
  SearchLimits o;
  o.budget = 1000;
  auto r = RunSearch("greedy", g, Rules(), *cost, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->reason, StopReason::kSaturated);
  EXPECT_LT(r->final_cost_ms, r->initial_cost_ms);
  EXPECT_FALSE(r->steps.empty());
  // Costs along the path only go down, and the reported cost is the graph's cost.
  double prev = r->initial_cost_ms;
  for (const auto& s : r->steps) {
    EXPECT_LT(s.cost_ms, prev) << s.rule;
    prev = s.cost_ms;
  }
  auto full = GraphCostMs(*cost, r->best);
  ASSERT_TRUE(full.ok());
  EXPECT_NEAR(*full, r->final_cost_ms, 1e-9);
  EXPECT_TRUE(r->best.Validate().ok());
  EXPECT_LE(MaxRelError(g, r->best), 1e-4);
}

TEST(Search, BacktrackIsAtLeastAsGoodAsGreedyAndHonoursTheBudget) {
  auto cost = Analytic();
  const Graph g = SmallBert();
  SearchLimits greedy;
  greedy.budget = 1000;
  SearchLimits back;
  back.budget = 15;
  auto a = RunSearch("greedy", g, Rules(), *cost, greedy);
  auto b = RunSearch("backtrack", g, Rules(), *cost, back);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_LE(b->final_cost_ms, a->final_cost_ms + 1e-12);
  EXPECT_EQ(b->reason, StopReason::kBudget);
  EXPECT_EQ(b->iterations, 15);
  EXPECT_LE(MaxRelError(g, b->best), 1e-4);
}

TEST(Search, RandomIsDeterministicForASeed) {
  auto cost = Analytic();
  const Graph g = SmallBert();
  SearchLimits o;
  o.budget = 25;
  o.seed = 9;
  auto a = RunSearch("random", g, Rules(), *cost, o);
  auto b = RunSearch("random", g, Rules(), *cost, o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->best.Hash(), b->best.Hash());
  EXPECT_EQ(a->steps.size(), b->steps.size());
  EXPECT_LE(a->final_cost_ms, a->initial_cost_ms);
}

TEST(Search, ReplayingTheStepsRebuildsThePathAndTheBest) {
  auto cost = Analytic();
  const Graph g = SmallBert();
  for (const char* algorithm : {"greedy", "backtrack", "random"}) {
    SCOPED_TRACE(algorithm);
    SearchLimits o;
    o.budget = 30;
    o.seed = 3;
    auto r = RunSearch(algorithm, g, Rules(), *cost, o);
    ASSERT_TRUE(r.ok()) << r.status().message();
    const size_t n = r->steps.size();
    ASSERT_GE(n, 2u);
    auto graphs = ReplaySteps(g, Rules(), r->steps, {n, 1, 0});
    ASSERT_TRUE(graphs.ok()) << graphs.status().message();
    ASSERT_EQ(graphs->size(), 3u);
    // All steps: the search's best, node for node.
    EXPECT_EQ((*graphs)[0].Hash(), r->best.Hash());
    EXPECT_EQ((*graphs)[0].NodeIds(), r->best.NodeIds());
    // One step: the graph that step's recorded cost belongs to; none: the input.
    auto one = GraphCostMs(*cost, (*graphs)[1]);
    ASSERT_TRUE(one.ok());
    EXPECT_NEAR(*one, r->steps[0].cost_ms, 1e-9);
    EXPECT_EQ((*graphs)[2].Hash(), g.Hash());
    EXPECT_LE(MaxRelError(g, (*graphs)[1]), 1e-4);
  }
}

TEST(Search, ReplayRefusesWhatItCannotReplay) {
  auto cost = Analytic();
  const Graph g = SmallBert();
  SearchLimits o;
  auto r = RunSearch("greedy", g, Rules(), *cost, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const size_t n = r->steps.size();
  ASSERT_GE(n, 1u);
  EXPECT_EQ(
      ReplaySteps(g, Rules(), r->steps, {n + 1}).status().message(),
      "cannot replay " + std::to_string(n + 1) + " rewrites of a path of " + std::to_string(n));
  std::vector<SearchStep> unrecorded = r->steps;
  unrecorded[0].match.rule = -1;  // as the agent's searches record them
  const auto missing = ReplaySteps(g, Rules(), unrecorded, {1});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("recorded no match"), std::string::npos)
      << missing.status().message();
  // Another input: the recorded matches name nodes it does not have.
  const Graph other = *BuildModel("squeezenet", {});
  EXPECT_FALSE(ReplaySteps(other, Rules(), r->steps, {n}).ok());
}

TEST(Search, SpreadPrefixesAreLongestFirstAndNeverTheInput) {
  EXPECT_EQ(SpreadPrefixes(10, 3), (std::vector<size_t>{10, 7, 3}));
  EXPECT_EQ(SpreadPrefixes(34, 3), (std::vector<size_t>{34, 23, 11}));
  EXPECT_EQ(SpreadPrefixes(2, 3), (std::vector<size_t>{2, 1}));
  EXPECT_EQ(SpreadPrefixes(5, 1), (std::vector<size_t>{5}));
  EXPECT_TRUE(SpreadPrefixes(0, 3).empty());
  EXPECT_TRUE(SpreadPrefixes(7, 0).empty());
}

TEST(Search, BadOptionsAreErrors) {
  auto cost = Analytic();
  const Graph g = SmallBert();
  SearchLimits o;
  auto r = RunSearch("annealing", g, Rules(), *cost, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown search"), std::string::npos);
  o.budget = 0;
  EXPECT_FALSE(RunSearch("greedy", g, Rules(), *cost, o).ok());
  o.budget = 5;
  EXPECT_FALSE(RunSearch("greedy", g, Rules(), *cost, o, {{"alpha", "0.5"}}).ok());
}

}  // namespace
}  // namespace rewire

namespace rewire {
namespace {

// Folding-heavy CNNs: conv+BN folds add weight-only nodes while removing operators; the growth
// cap counts only operators that run, so backtracking reaches at least greedy's result.
class BacktrackOnCnn : public ::testing::TestWithParam<const char*> {};

TEST_P(BacktrackOnCnn, ReachesGreedyWithinItsBudget) {
  auto cost = Analytic();
  const Graph g = *BuildModel(GetParam());
  SearchLimits greedy;
  greedy.budget = 200;
  SearchLimits back;
  back.budget = 100;
  auto a = RunSearch("greedy", g, Rules(), *cost, greedy);
  auto b = RunSearch("backtrack", g, Rules(), *cost, back);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->reason, StopReason::kSaturated);
  EXPECT_LE(b->final_cost_ms, a->final_cost_ms * (1 + 1e-9));
}

INSTANTIATE_TEST_SUITE_P(Zoo, BacktrackOnCnn, ::testing::Values("squeezenet", "resnext50"));

}  // namespace
}  // namespace rewire

namespace rewire {
namespace {

TEST(Search, BacktrackQueueStaysUnderItsCap) {
  auto cost = Analytic();
  const Graph g = SmallBert();
  SearchLimits o;
  o.budget = 12;
  size_t largest = 0;
  o.progress = [&](const SearchProgress& p) { largest = std::max(largest, p.queue_size); };
  auto r = RunSearch("backtrack", g, Rules(), *cost, o, {{"max-queue", "25"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_LE(largest, 25u);
  EXPECT_GT(r->stats.Number("dropped"), 0);
  EXPECT_LT(r->final_cost_ms, r->initial_cost_ms);
}

}  // namespace
}  // namespace rewire

// Passes (env/passes.h) and the searches over them (env/pass_searches.h): a pass runs its rules to
// a fixed point and stops; pipelines name known passes; on a graph where one pass closes another's
// door the exhaustive search finds the better order; an environment whose actions are passes
// offers only passes that change the graph and costs them exactly.

#include "env/passes.h"

#include <gtest/gtest.h>

#include "cost/operator_cost.h"
#include "env/environment.h"
#include "env/features.h"
#include "env/pass_searches.h"
#include "env/search_registry.h"
#include "graph/builder.h"
#include "graph/models/zoo.h"
#include "ruleset/rule_verify.h"
#include "tests/env/pass_order_toy.h"
#include "tests/ruleset/shipped_rules.h"

namespace rewire {
namespace {

using testing::PassOrderGraph;
using testing::PassOrderRules;

std::shared_ptr<const PassSet> Passes(const std::vector<rules::Rule>& rules) {
  auto set = PassSet::Make(rules);
  EXPECT_TRUE(set.ok()) << set.status().message();
  return set.ok() ? *set : nullptr;
}

int OpsOf(const Graph& g, OpType op) {
  const auto counts = g.OpCounts();
  const auto it = counts.find(op);
  return it == counts.end() ? 0 : it->second;
}

TEST(Passes, ARulePassRunsItsRulesToAFixedPointAndStops) {
  const std::vector<rules::Rule>& rules = testing::VerifiedShippedRules();
  auto set = Passes(rules);
  ASSERT_TRUE(set);
  const int fusion = set->Find("fusion");
  ASSERT_GE(fusion, 0);
  // Every Conv2D of SqueezeNet is followed by a Relu: the fusion pass must take them all.
  const Graph g = *BuildModel("squeezenet");
  const int relus = OpsOf(g, OpType::kRelu);
  ASSERT_GT(relus, 10);
  OperatorCountModel ops;
  auto out = set->pass(static_cast<size_t>(fusion)).Run(g, ops);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_GE(out->changes, relus);
  EXPECT_EQ(OpsOf(out->graph, OpType::kRelu), 0) << "a Relu left unfused: not a fixed point";
  EXPECT_EQ(RunningOperators(out->graph), RunningOperators(g) - relus);
  ASSERT_TRUE(out->graph.Validate().ok());
  // At its fixed point the pass changes nothing more, and stops.
  auto again = set->pass(static_cast<size_t>(fusion)).Run(out->graph, ops);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->changes, 0);
  EXPECT_EQ(again->graph.Hash(), out->graph.Hash());
}

TEST(Passes, APipelineWithAnUnknownPassIsAnErrorNamingTheKnownOnes) {
  auto set = Passes(testing::VerifiedShippedRules());
  ASSERT_TRUE(set);
  auto bad = set->ParsePipeline("fold,fusoin,merge");
  ASSERT_FALSE(bad.ok());
  const std::string m = bad.status().message();
  EXPECT_NE(m.find("unknown pass 'fusoin'"), std::string::npos) << m;
  for (const char* known : {"fold", "dce", "cse", "fusion", "merge", "layout", "algebraic"}) {
    EXPECT_NE(m.find(known), std::string::npos) << known << " is not named: " << m;
  }
  EXPECT_FALSE(set->ParsePipeline("").ok());
  EXPECT_FALSE(set->ParsePipeline("fold,,merge").ok());
  auto good = set->ParsePipeline(" fold , fusion,fusion ");
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_EQ(set->PipelineText(*good), "fold,fusion,fusion");
  // The default pipeline names every pass once, fold last.
  const std::vector<int> d = set->DefaultPipeline();
  EXPECT_EQ(d.size(), set->size());
  EXPECT_EQ(d.back(), set->Find("fold"));
  // The search reports the same error for its option, and the registry lists the searches.
  Graph g = *BuildModel("squeezenet");
  OperatorCountModel ops;
  auto run = RunSearch("passes", g, testing::VerifiedShippedRules(), ops, SearchLimits{},
                       {{"passes", "fold,nope"}});
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("--passes"), std::string::npos);
  EXPECT_NE(run.status().message().find("known passes: fold, dce, cse"), std::string::npos)
      << run.status().message();
}

TEST(Passes, DceRemovesWhatNoOutputNeedsAndCseComputesEqualOperatorsOnce) {
  GraphBuilder b(1);
  const ValueRef x = b.Input("x", {4, 8});
  const ValueRef w = b.Weight("w", {8, 8}, -0.1f, 0.1f);
  const ValueRef m1 = b.MatMul(x, w);
  const ValueRef m2 = b.MatMul(x, w);  // equal to m1
  b.Tanh(m1);                          // dead
  b.Output("y", b.Add(b.Relu(m1), b.Relu(m2)));
  auto g = b.Finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto set = Passes({});
  ASSERT_TRUE(set);
  OperatorCountModel ops;
  EXPECT_EQ(RunningOperators(*g), 6);
  auto dce = set->pass(static_cast<size_t>(set->Find("dce"))).Run(*g, ops);
  ASSERT_TRUE(dce.ok()) << dce.status().message();
  EXPECT_EQ(dce->changes, 1);
  EXPECT_EQ(OpsOf(dce->graph, OpType::kTanh), 0);
  auto cse = set->pass(static_cast<size_t>(set->Find("cse"))).Run(dce->graph, ops);
  ASSERT_TRUE(cse.ok()) << cse.status().message();
  EXPECT_EQ(cse->changes, 2) << "the second MatMul, then the second Relu";
  EXPECT_EQ(RunningOperators(cse->graph), 3);  // MatMul, Relu, Add(r, r)
  ASSERT_TRUE(cse->graph.Validate().ok());
  // Neither finds anything more.
  EXPECT_EQ(set->pass(static_cast<size_t>(set->Find("cse"))).Run(cse->graph, ops)->changes, 0);
  EXPECT_EQ(set->pass(static_cast<size_t>(set->Find("dce"))).Run(cse->graph, ops)->changes, 0);
}

TEST(PassSearches, TheExhaustiveSearchFindsTheOrderThatKeepsTheDoorOpen) {
  const std::vector<rules::Rule> rules = PassOrderRules();
  ASSERT_EQ(rules.size(), 3u);
  for (const rules::Rule& r : rules) {
    EXPECT_TRUE(VerifyRule(r).passed) << r.name << " is not a verified rewrite";
  }
  const Graph g = PassOrderGraph();
  ASSERT_EQ(RunningOperators(g), 6);
  OperatorCountModel ops;
  auto run = [&](const std::string& search, std::vector<std::pair<std::string, std::string>> o) {
    auto r = RunSearch(search, g, rules, ops, SearchLimits{}, o);
    EXPECT_TRUE(r.ok()) << search << ": " << r.status().message();
    return r.ok() ? std::move(r).value() : SearchResult{};
  };
  // Fusion first closes the door: merge's rule takes plain convs only.
  const SearchResult fusion_first = run("passes", {{"passes", "fusion,merge"}});
  EXPECT_EQ(RunningOperators(fusion_first.best), 3);
  EXPECT_EQ(fusion_first.stats.Number("operators_after"), 3);
  const SearchResult merge_first = run("passes", {{"passes", "merge,fusion"}});
  EXPECT_EQ(RunningOperators(merge_first.best), 2);
  ASSERT_EQ(merge_first.steps.size(), 2u);
  EXPECT_EQ(merge_first.steps[0].rule, "merge");
  EXPECT_EQ(merge_first.steps[0].cost_ms, 4);  // operators after each pass
  EXPECT_EQ(merge_first.steps[1].cost_ms, 2);
  // The exhaustive search over every order of two passes at most finds merge, then fusion.
  const SearchResult best = run("pass-beam", {{"depth", "2"}});
  EXPECT_EQ(RunningOperators(best.best), 2);
  EXPECT_EQ(best.stats.Text("best_sequence"), "merge,fusion");
  EXPECT_EQ(best.stats.Text("exhaustive"), "yes");
  // A beam of one graph is greedy over passes: it keeps fusion's 3 operators and misses it.
  const SearchResult narrow = run("pass-beam", {{"depth", "2"}, {"width", "1"}});
  EXPECT_EQ(RunningOperators(narrow.best), 3);
  // Random orders of the two: the best is the better order, the median is reported.
  const SearchResult random = run("pass-random", {{"passes", "fusion,merge"}, {"sequences", "8"}});
  EXPECT_EQ(RunningOperators(random.best), 2);
  EXPECT_EQ(random.stats.Number("sequences"), 8);
  const double median = random.stats.Number("median_operators");
  EXPECT_TRUE(median == 2 || median == 3) << median;
  // Every result computes what its input does (shapes and outputs checked by Validate; the
  // rules are verified rewrites).
  for (const SearchResult* r : {&fusion_first, &merge_first, &best, &narrow, &random}) {
    EXPECT_TRUE(r->best.Validate().ok());
  }
}

TEST(PassActions, AnEnvironmentOfPassesOffersOnlyPassesThatChangeTheGraphCostedExactly) {
  const std::vector<rules::Rule> rules = PassOrderRules();
  const Graph g = PassOrderGraph();
  OperatorCountModel ops;
  auto actions = MakePassActions(rules, ops);
  ASSERT_TRUE(actions.ok()) << actions.status().message();
  EnvOptions eo(8, 100);
  eo.actions = *actions;
  Environment env(rules, ops, eo);
  auto obs = env.Reset(g);
  ASSERT_TRUE(obs.ok()) << obs.status().message();
  // fold, dce and cse change nothing here: only merge and fusion are offered, with the No-Op.
  ASSERT_EQ(env.candidates().size(), 2u);
  EXPECT_EQ(env.candidates()[0].name, "merge");
  EXPECT_EQ(env.candidates()[1].name, "fusion");
  EXPECT_EQ(env.candidates()[0].cost_ms, 4);
  EXPECT_EQ(env.candidates()[1].cost_ms, 3);
  // The candidates encode as rewrites do (their regions from the passes' whole diffs).
  const ObservationFeatures f = EncodeObservation(env, 2);
  EXPECT_EQ(f.num_actions(), 3);
  auto step = env.Step(0);  // merge
  ASSERT_TRUE(step.ok()) << step.status().message();
  EXPECT_EQ(step->rule, "merge");
  EXPECT_NEAR(step->reward, 100.0 * 2 / 6, 1e-9);
  EXPECT_EQ(env.cost_ms(), 4);
  EXPECT_EQ(env.cost_ms(), RunningOperators(env.graph()));
  // Now fusion (and fold, for the concatenated weight) act; merge does not.
  std::vector<std::string> names;
  for (const EnvCandidate& c : env.candidates()) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fold", "fusion"}));
  const size_t fusion = 1;
  step = env.Step(fusion);
  ASSERT_TRUE(step.ok());
  EXPECT_EQ(env.cost_ms(), 2);
  EXPECT_EQ(env.cost_ms(), RunningOperators(env.graph()));
  // A second episode reaches the same graphs from the cache: no pass runs again.
  const int64_t runs = (*actions)->cache().runs();
  ASSERT_TRUE(env.Reset(g).ok());
  ASSERT_TRUE(env.Step(0).ok());
  ASSERT_TRUE(env.Step(fusion).ok());
  EXPECT_EQ(env.cost_ms(), 2);
  EXPECT_EQ((*actions)->cache().runs(), runs);
  EXPECT_GT((*actions)->cache().hits(), 0);
}

TEST(PassActions, WithoutMaskingEveryPassIsOfferedAndOneThatChangesNothingEarnsNothing) {
  const std::vector<rules::Rule> rules = PassOrderRules();
  const Graph g = PassOrderGraph();
  OperatorCountModel ops;
  auto actions = MakePassActions(rules, ops, "", /*masking=*/false);
  ASSERT_TRUE(actions.ok()) << actions.status().message();
  EnvOptions eo(8, 100);
  eo.actions = *actions;
  Environment env(rules, ops, eo);
  ASSERT_TRUE(env.Reset(g).ok());
  std::vector<std::string> names;
  for (const EnvCandidate& c : env.candidates()) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fold", "dce", "cse", "merge", "fusion"}));
  auto idle = env.Step(0);  // fold: nothing to fold
  ASSERT_TRUE(idle.ok()) << idle.status().message();
  EXPECT_EQ(idle->reward, 0);
  EXPECT_FALSE(idle->done);
  EXPECT_EQ(env.graph().Hash(), g.Hash());
  EXPECT_EQ(env.candidates().size(), 5u);
}

TEST(PassActions, ADiffOfAWholePassCostsWhatTheGraphCostsOnAZooModel) {
  // Under the analytic model, every pass candidate's incremental cost (its composite diff
  // against the cost table) equals the full cost of its graph.
  const std::vector<rules::Rule>& rules = testing::VerifiedShippedRules();
  auto cost = testing::AnalyticCost();
  auto actions = MakePassActions(rules, *cost);
  ASSERT_TRUE(actions.ok());
  EnvOptions eo(4, 500);
  eo.actions = *actions;
  Environment env(rules, *cost, eo);
  ASSERT_TRUE(env.Reset(*BuildModel("squeezenet")).ok());
  ASSERT_FALSE(env.candidates().empty());
  for (const EnvCandidate& c : env.candidates()) {
    auto full = cost->GraphCostMs(c.result);
    ASSERT_TRUE(full.ok());
    EXPECT_NEAR(c.cost_ms, *full, 1e-9 * *full) << c.name;
  }
  ASSERT_TRUE(env.Step(0).ok());
  auto full = cost->GraphCostMs(env.graph());
  ASSERT_TRUE(full.ok());
  EXPECT_NEAR(env.cost_ms(), *full, 1e-9 * *full);
}

}  // namespace
}  // namespace rewire

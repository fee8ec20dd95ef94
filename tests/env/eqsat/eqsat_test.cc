// `--search eqsat` and `--search mcts-eqsat` by name through the search registry.

#include "env/eqsat/eqsat_search.h"
#include "env/eqsat/saturate.h"

#include "env/search_registry.h"

#include <gtest/gtest.h>

#include "env/finish.h"
#include "graph/models/zoo.h"
#include "ruleset/rule_verify.h"
#include "tests/graph/test_util.h"
#include "tests/ruleset/shipped_rules.h"

namespace rewire {
namespace {

using testing::F32;
using testing::Must;
using testing::V;

const std::vector<rules::Rule>& Rules() { return testing::VerifiedShippedRules(); }

// Relu commutes with a transpose (no cheaper: the same two operators), after which two
// transposes cancel. Greedy search never takes the first step, which gains nothing alone.
const char* kTwoSteps = R"(
rule relu_transpose_swap
  class layout
  source
    t = Transpose(x)
    r = Relu(t)
  target
    q = Relu(x)
    u = Transpose(q; *t)
  outputs r -> u
  check x=[2,3] t.perm=[1,0]
  check x=[2,3,4] t.perm=[2,0,1]
end

rule transpose_transpose
  class layout
  source
    a = Transpose(x)
    b = Transpose(a)
  where
    a.perm == [1, 0] && b.perm == [1, 0]
  outputs b -> x
  check x=[2,3]
  check x=[4,1]
end
)";

TEST(Eqsat, FindsAnOptimumThatNeedsTwoRewritesGreedyWouldNotTakeInThatOrder) {
  auto parsed = rules::ParseRules(kTwoSteps, "t.rules");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({64, 128})));
  const NodeId t1 = Must(g.AddOp(OpType::kTranspose, {V(x)}, {{"perm", Ints{1, 0}}}));
  const NodeId r = Must(g.AddOp(OpType::kRelu, {V(t1)}));
  const NodeId t2 = Must(g.AddOp(OpType::kTranspose, {V(r)}, {{"perm", Ints{1, 0}}}));
  ASSERT_TRUE(g.AddOutput("y", V(t2)).ok());
  auto cost = testing::AnalyticCost();
  SearchLimits greedy;
  const SearchResult gr = Must(RunSearch("greedy", g, *parsed, *cost, greedy));
  EXPECT_TRUE(gr.steps.empty());  // no single rewrite is cheaper
  for (const char* extraction : {"greedy", "ilp"}) {
    SCOPED_TRACE(extraction);
    SearchLimits o;
    const SearchResult eq =
        Must(RunSearch("eqsat", g, *parsed, *cost, o, {{"extract", extraction}}));
    EXPECT_EQ(eq.reason, StopReason::kSaturated);
    EXPECT_EQ(eq.best.NumOperators(), 1);  // Relu(x)
    EXPECT_LT(eq.final_cost_ms, gr.final_cost_ms);
    EXPECT_TRUE(CheckEquivalent(g, eq.best, 1e-6).verified);
  }
}

Graph Model(const std::string& name) { return Must(BuildModel(name)); }

TEST(Eqsat, EveryExtractedGraphVerifies) {
  auto cost = testing::AnalyticCost();
  for (const char* model : {"nasrnn", "squeezenet", "resnet50"}) {
    const Graph g = Model(model);
    for (const char* extraction : {"greedy", "ilp"}) {
      SCOPED_TRACE(std::string(model) + " " + extraction);
      SearchLimits o;
      const SearchResult r = Must(
          RunSearch("eqsat", g, Rules(), *cost, o,
                    {{"extract", extraction}, {"egraph-nodes", "8000"}, {"ilp-time-limit", "1"}}));
      EXPECT_LE(r.final_cost_ms, r.initial_cost_ms);
      EXPECT_TRUE(r.steps.empty());
      const FinishedGraph f = Must(FinishSearch(g, r.best, *cost, {}));
      EXPECT_TRUE(f.equivalence.verified) << f.equivalence.message;
      EXPECT_NEAR(f.final_cost_ms, r.final_cost_ms, 1e-9 * r.initial_cost_ms);
    }
  }
}

// TT under rewire's rules and the generated transformer rules: cycle filtering once blacklisted
// e-nodes until an output class had no acyclic extraction left ("output 'output' has no acyclic
// extraction through usable e-nodes"). It never blacklists the anchors of an acyclic extraction
// now, so both extractions find a graph, no dearer than the input, that verifies.
TEST(Eqsat, CycleFilteringLeavesAnExtractionWhereManyCyclesClose) {
  auto rules = LoadVerifiedRules(std::string(REWIRE_SOURCE_DIR) + "/configs/rules," +
                                 REWIRE_SOURCE_DIR + "/configs/rules/generated/transformer");
  ASSERT_TRUE(rules.ok()) << rules.status().message();
  auto cost = testing::AnalyticCost();
  const Graph g = Model("tt");
  for (const char* extraction : {"greedy", "ilp"}) {
    SCOPED_TRACE(extraction);
    SearchLimits o;
    auto r =
        RunSearch("eqsat", g, *rules, *cost, o, {{"extract", extraction}, {"ilp-time-limit", "1"}});
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_GT(r->stats.Number("blacklisted"), 1000u);  // the filtering had work to do
    EXPECT_LE(r->final_cost_ms, r->initial_cost_ms);
    const FinishedGraph f = Must(FinishSearch(g, r->best, *cost, {}));
    EXPECT_TRUE(f.equivalence.verified) << f.equivalence.message;
  }
}

// The learned builder's lookahead matches once and applies subsets of those matches to copies:
// each copy must end as the round that matches for itself would leave it.
TEST(Eqsat, MatchesFoundOnceForMoreRulesGiveEachCopyTheRoundItWouldHaveHad) {
  const std::vector<eqsat::ERule> rules = eqsat::MakeERules(Rules());
  eqsat::RewriteState state;
  state.egraph = Must(eqsat::EGraph::FromGraph(Model("nasrnn")));
  eqsat::RoundOptions o;
  o.node_limit = 4000;
  // A first round, so that the matches below skip some already applied.
  std::vector<int> all;
  for (const eqsat::ERule& r : rules) all.push_back(r.index());
  Must(eqsat::RewriteRound(state, rules,
                           std::vector<int>(all.begin(), all.begin() + all.size() / 2), o));
  const eqsat::RoundMatches found = eqsat::FindRoundMatches(state, rules, all, o);
  ASSERT_EQ(found.rules, all);
  // Subsets in other orders, among them one that runs into the node limit.
  const std::vector<std::vector<int>> subsets = {
      all, {all.rbegin(), all.rend()}, {all.begin() + all.size() / 3, all.end()}, {all[0]}};
  size_t node_limited = 0;
  for (size_t limit : {o.node_limit, state.egraph.num_nodes() + 200}) {
    eqsat::RoundOptions lo = o;
    lo.node_limit = limit;
    for (const std::vector<int>& which : subsets) {
      eqsat::RewriteState own = state, reused = state;
      const eqsat::RoundResult a = Must(eqsat::RewriteRound(own, rules, which, lo));
      const eqsat::RoundResult b = Must(eqsat::RewriteRound(reused, rules, which, lo, found));
      EXPECT_EQ(a.matches, b.matches);
      EXPECT_EQ(a.applied, b.applied);
      EXPECT_EQ(a.applied_per_rule, b.applied_per_rule);
      EXPECT_EQ(a.node_limit, b.node_limit);
      EXPECT_EQ(own.egraph.num_nodes(), reused.egraph.num_nodes());
      EXPECT_EQ(own.egraph.num_classes(), reused.egraph.num_classes());
      EXPECT_EQ(own.applied, reused.applied);
      node_limited += a.node_limit;
    }
  }
  EXPECT_GT(node_limited, 0u);
  // A rule with matches, given the matches of another rule, has none in the round.
  size_t with = 0;
  while (with < all.size() && found.per_rule[with].empty()) ++with;
  ASSERT_LT(with, all.size());
  const int other = all[with == 0 ? 1 : 0];
  const eqsat::RoundMatches others = eqsat::FindRoundMatches(state, rules, {other}, o);
  eqsat::RewriteState copy = state;
  const eqsat::RoundResult none = Must(eqsat::RewriteRound(copy, rules, {all[with]}, o, others));
  EXPECT_EQ(none.matches, 0u);
  EXPECT_EQ(copy.egraph.num_nodes(), state.egraph.num_nodes());
}

TEST(Eqsat, TheNodeLimitIsRespectedAndReported) {
  auto cost = testing::AnalyticCost();
  SearchLimits o;
  const SearchResult r = Must(RunSearch("eqsat", Model("nasrnn"), Rules(), *cost, o,
                                        {{"extract", "greedy"}, {"egraph-nodes", "1500"}}));
  EXPECT_EQ(r.reason, StopReason::kNodeLimit);
  EXPECT_LE(r.stats.Number("egraph_nodes"), 1500u);
  EXPECT_GT(r.stats.Number("egraph_nodes"), 1000u);
  EXPECT_STREQ(StopReasonName(r.reason), "node limit");
}

TEST(Eqsat, TheIterationAndTimeLimitsAreRespectedAndReported) {
  auto cost = testing::AnalyticCost();
  const Graph g = Model("nasrnn");
  SearchLimits o;
  const SearchResult one = Must(
      RunSearch("eqsat", g, Rules(), *cost, o, {{"extract", "greedy"}, {"eqsat-iterations", "1"}}));
  EXPECT_EQ(one.reason, StopReason::kIterationLimit);
  EXPECT_EQ(one.iterations, 1);
  o.time_limit_s = 1e-6;
  const SearchResult timed = Must(RunSearch("eqsat", g, Rules(), *cost, o,
                                            {{"extract", "greedy"}, {"eqsat-iterations", "15"}}));
  EXPECT_EQ(timed.reason, StopReason::kTimeLimit);
  EXPECT_LE(timed.final_cost_ms, timed.initial_cost_ms);
  EXPECT_TRUE(CheckEquivalent(g, timed.best, 1e-3).verified);
}

TEST(Eqsat, MctsRespectsItsNodeBudgetAndRepeatsForASeed) {
  auto cost = testing::AnalyticCost();
  const Graph g = Model("nasrnn");
  SearchLimits o;
  o.seed = 7;
  const SearchResult a = Must(RunSearch("mcts-eqsat", g, Rules(), *cost, o,
                                        {{"extract", "greedy"},
                                         {"egraph-nodes", "2500"},
                                         {"mcts-simulations", "3"},
                                         {"mcts-rollout-depth", "1"},
                                         {"mcts-steps", "4"}}));
  const SearchResult b = Must(RunSearch("mcts-eqsat", g, Rules(), *cost, o,
                                        {{"extract", "greedy"},
                                         {"egraph-nodes", "2500"},
                                         {"mcts-simulations", "3"},
                                         {"mcts-rollout-depth", "1"},
                                         {"mcts-steps", "4"}}));
  EXPECT_LE(a.stats.Number("egraph_nodes"), 2500u);
  EXPECT_GT(a.stats.Number("mcts_simulations"), 0u);
  EXPECT_EQ(a.best.Hash(), b.best.Hash());
  EXPECT_LT(a.final_cost_ms, a.initial_cost_ms);
  EXPECT_TRUE(CheckEquivalent(g, a.best, 1e-3).verified);
}

TEST(Eqsat, ASeedOfTheInputItselfChangesNothingAndAGreedyResultIsNoWorseThanItself) {
  auto cost = testing::AnalyticCost();
  const Graph g = Model("nasrnn");
  const SearchLimits limits;
  eqsat::EqsatSearch plain;
  plain.options.node_limit = 8000;
  plain.options.extraction = "greedy";
  const SearchResult a = Must(plain.Run(g, Rules(), *cost, limits));
  eqsat::EqsatSearch self = plain;
  self.seeds = {g};
  const SearchResult b = Must(self.Run(g, Rules(), *cost, limits));
  EXPECT_EQ(b.stats.Number("egraph_nodes"), a.stats.Number("egraph_nodes"));
  EXPECT_EQ(b.iterations, a.iterations);
  EXPECT_DOUBLE_EQ(b.final_cost_ms, a.final_cost_ms);
  // Seeded with greedy search's result: never dearer than that result, and it verifies.
  const SearchResult gr = Must(RunSearch("greedy", g, Rules(), *cost, limits));
  eqsat::EqsatSearch seeded = plain;
  seeded.seeds = {gr.best};
  const SearchResult c = Must(seeded.Run(g, Rules(), *cost, limits));
  EXPECT_EQ(c.stats.Number("seeds"), 1u);
  EXPECT_LE(c.final_cost_ms, gr.final_cost_ms * (1 + 1e-12));
  const FinishedGraph f = Must(FinishSearch(g, c.best, *cost, {}));
  EXPECT_TRUE(f.equivalence.verified) << f.equivalence.message;
  std::printf(
      "nasrnn eqsat: plain %zu e-nodes %d rounds %.4f ms; seeded with greedy's %.4f ms: "
      "%zu e-nodes %d rounds %.4f ms\n",
      static_cast<size_t>(a.stats.Number("egraph_nodes")), a.iterations, a.final_cost_ms,
      gr.final_cost_ms, static_cast<size_t>(c.stats.Number("egraph_nodes")), c.iterations,
      c.final_cost_ms);
}

TEST(Eqsat, RejectsOptionsOutOfRange) {
  auto cost = testing::AnalyticCost();
  const Graph g = Model("nasrnn");
  const SearchLimits limits;
  eqsat::EqsatSearch search;
  search.options.extraction = "best";
  EXPECT_EQ(search.Run(g, Rules(), *cost, limits).status().message(),
            "unknown extraction 'best' (known: greedy, ilp)");
  search.options.extraction = "ilp";
  search.options.node_limit = 0;
  EXPECT_EQ(search.Run(g, Rules(), *cost, limits).status().message(),
            "the e-graph node limit must be at least 1");
  search.options.node_limit = 10;
  search.options.ilp_time_limit_s = 0;
  EXPECT_EQ(search.Check(limits).message(), "the ILP time limit must be positive");
  // Set by name, as the command line sets them, a value out of range is refused at once.
  EXPECT_EQ(RunSearch("eqsat", g, Rules(), *cost, limits, {{"extract", "best"}}).status().message(),
            "search eqsat: --extract takes one of greedy, ilp, got 'best'");
  EXPECT_EQ(
      RunSearch("eqsat", g, Rules(), *cost, limits, {{"egraph-nodes", "0"}}).status().message(),
      "search eqsat: --egraph-nodes must be above 0, got 0");
  EXPECT_EQ(RunSearch("eqsat", g, Rules(), *cost, limits, {{"mcts-steps", "3"}}).status().message(),
            "search eqsat: unknown option --mcts-steps (known: --egraph-nodes, --no-cycle-filter, "
            "--extract, --ilp-time-limit, --ilp-max-nodes, --ilp-no-warm-start, "
            "--ilp-no-requirement-rows, "
            "--eqsat-iterations, --multi-iterations)");
}

}  // namespace
}  // namespace rewire

// Searches guided by the local advantage model (env/candidate_ranker.h, env/advantage_search.h,
// advantage_model/advantage_ranker.h): on a small graph with one paying rewrite among many
// neutral ones, a model trained there ranks the paying one first, the guided progressive search
// finds it in fewer evaluations than its unguided twin, and greedy search pruned to the model's
// top candidate reaches greedy's result costing far fewer candidates.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "advantage_model/advantage_model.h"
#include "advantage_model/advantage_ranker.h"
#include "env/candidate_ranker.h"
#include "env/explore.h"
#include "env/search_registry.h"
#include "graph/builder.h"
#include "tests/ruleset/shipped_rules.h"

namespace rewire {
namespace {

namespace fs = std::filesystem;

constexpr int kNeutralBranches = 12;

/// Twelve independent Adds of two inputs (each Add's commuted twin costs the same: neutral
/// rewrites) and one MatMul followed by a Relu (fusing them pays).
Graph OnePayingGraph() {
  GraphBuilder b(7);
  for (int i = 0; i < kNeutralBranches; ++i) {
    const ValueRef x = b.Input("x" + std::to_string(i), {32, 64});
    const ValueRef y = b.Input("y" + std::to_string(i), {32, 64});
    b.Output("sum" + std::to_string(i), b.Add(x, y));
  }
  const ValueRef a = b.Input("a", {32, 64});
  const ValueRef w = b.WeightFanIn("w", {64, 64}, 64);
  b.Output("out", b.Relu(b.MatMul(a, w)));
  StatusOr<Graph> g = b.Finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  return std::move(g).value();
}

class AdvantageSearchTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    AddAdvantageRankers(Rankers());
    model_path_ = new std::string((fs::path(::testing::TempDir()) / "one_paying.pt").string());
    // The input state's labels, encoded; the model is trained on them alone.
    auto cost = testing::AnalyticCost();
    Environment env(testing::VerifiedShippedRules(), *cost, EnvOptions(2, 500));
    WalkOptions wo;
    wo.walks = 1;
    wo.steps = 1;
    wo.tau = 0.01;
    std::vector<AdvantageState> states;
    const Graph g = OnePayingGraph();
    const Status s = CollectWalks(env, "one-paying", "one-paying", g, wo, [&](AdvantageRecord&& r) {
      if (r.step > 0) return Status::Ok();
      StatusOr<AdvantageState> st = EncodeAdvantageState(env, g, r, 2);
      if (!st.ok()) return st.status();
      states.push_back(std::move(st).value());
      return Status::Ok();
    });
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(states.size(), 1u);
    labels_ = new std::vector<double>(states[0].advantages);
    AdvantageModel model = MakeAdvantageModel(GnnShape{32, 2, 4}, 3);
    AdvantageTrainOptions o;
    o.epochs = 6;
    o.steps_per_epoch = 40;
    o.batch = 16;
    o.lr = 3e-3;
    o.seed = 1;
    const auto sigma = ModelSigmas(states);
    StatusOr<double> loss = TrainAdvantageModel(model, states, sigma, o);
    ASSERT_TRUE(loss.ok()) << loss.status().message();
    AdvantageModelMeta meta;
    meta.shape = GnnShape{32, 2, 4};
    meta.sigma = sigma;
    meta.rule_prior = RulePrior(states, sigma);
    ASSERT_TRUE(SaveAdvantageModel(*model_path_, model, meta).ok());
  }
  static void TearDownTestSuite() {
    delete model_path_;
    delete labels_;
  }

  static SearchResult Run(const std::string& search,
                          const std::vector<std::pair<std::string, std::string>>& options,
                          uint64_t seed) {
    auto cost = testing::AnalyticCost();
    SearchLimits limits;
    limits.budget = 100000;
    limits.seed = seed;
    StatusOr<SearchResult> r = RunSearch(search, OnePayingGraph(), testing::VerifiedShippedRules(),
                                         *cost, limits, options);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? std::move(r).value() : SearchResult{};
  }

  static std::string* model_path_;
  static std::vector<double>* labels_;
};
std::string* AdvantageSearchTest::model_path_ = nullptr;
std::vector<double>* AdvantageSearchTest::labels_ = nullptr;

TEST_F(AdvantageSearchTest, TheGraphHasOnePayingRewriteAmongManyNeutralOnes) {
  int paying = 0, neutral = 0;
  for (double a : *labels_) {
    paying += a > 1e-12;
    neutral += std::fabs(a) <= 1e-12;
  }
  EXPECT_EQ(paying, 1);
  EXPECT_GE(neutral, kNeutralBranches);
}

TEST_F(AdvantageSearchTest, TheTrainedModelRanksThePayingRewriteFirst) {
  const size_t paying =
      static_cast<size_t>(std::max_element(labels_->begin(), labels_->end()) - labels_->begin());
  auto cost = testing::AnalyticCost();
  SearchLimits limits;
  Explorer x(testing::VerifiedShippedRules(), limits);
  StatusOr<ExploredState> s = x.Start(OnePayingGraph(), *cost);
  ASSERT_TRUE(s.ok()) << s.status().message();
  for (const char* name : {"model", "uniform"}) {
    StatusOr<std::unique_ptr<CandidateRanker>> ranker = Rankers().Make(name, *model_path_, 5);
    ASSERT_TRUE(ranker.ok()) << ranker.status().message();
    StatusOr<RankedCandidates> ranked = x.Rank(*s, **ranker);
    ASSERT_TRUE(ranked.ok()) << ranked.status().message();
    ASSERT_EQ(ranked->scores.size(), labels_->size()) << "the environment's candidates, in order";
    const size_t first = TopIndices(ranked->scores, 1)[0];
    if (std::string(name) == "model") {
      EXPECT_EQ(first, paying);
    } else {
      // A uniform ranker's first pick is wherever its draws put it: here not the paying one,
      // so the model's pick above is not an accident of candidate order.
      EXPECT_NE(first, paying);
    }
  }
  // Ranking costs nothing: no candidate was evaluated.
  EXPECT_EQ(x.result.candidates_evaluated, 0);
}

TEST_F(AdvantageSearchTest, GuidedSearchFindsItInFewerEvaluationsThanItsUnguidedTwin) {
  int64_t guided_total = 0, unguided_total = 0;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    // --top-fraction 0.05: the pool of the best-ranked untried candidates is one candidate here.
    const SearchResult guided = Run(
        "advantage",
        {{"ranker", "model"}, {"advantage-model", *model_path_}, {"top-fraction", "0.05"}}, seed);
    const SearchResult unguided =
        Run("advantage", {{"ranker", "uniform"}, {"top-fraction", "0.05"}}, seed);
    // Both find the one paying rewrite, and end where every remaining candidate was tried.
    EXPECT_LT(guided.final_cost_ms, guided.initial_cost_ms);
    EXPECT_DOUBLE_EQ(guided.final_cost_ms, unguided.final_cost_ms);
    EXPECT_EQ(guided.reason, StopReason::kSaturated);
    ASSERT_EQ(guided.steps.size(), 1u);
    EXPECT_EQ(guided.steps[0].evaluations, guided.stats.Number("evaluations_to_best"));
    // The guided search costs the paying rewrite first.
    EXPECT_EQ(guided.stats.Number("evaluations_to_best"), 1) << "seed " << seed;
    guided_total += static_cast<int64_t>(guided.stats.Number("evaluations_to_best"));
    unguided_total += static_cast<int64_t>(unguided.stats.Number("evaluations_to_best"));
    EXPECT_EQ(guided.stats.Number("moves"), 1);
    EXPECT_GT(guided.stats.Number("ranked"), 0);
  }
  EXPECT_LT(guided_total, unguided_total);
}

TEST_F(AdvantageSearchTest, GreedyPrunedToTheModelsTopCandidateReachesGreedysResult) {
  const SearchResult full = Run("greedy", {}, 0);
  const SearchResult pruned =
      Run("greedy",
          {{"advantage-top", "1"}, {"ranker", "model"}, {"advantage-model", *model_path_}}, 0);
  EXPECT_LT(full.final_cost_ms, full.initial_cost_ms);
  EXPECT_DOUBLE_EQ(pruned.final_cost_ms, full.final_cost_ms);
  // One candidate costed per step instead of every candidate.
  EXPECT_EQ(pruned.candidates_evaluated, static_cast<int64_t>(pruned.iterations));
  EXPECT_LT(pruned.candidates_evaluated * 3, full.candidates_evaluated);
}

TEST_F(AdvantageSearchTest, RankingOptionsSayWhatIsMissing) {
  auto cost = testing::AnalyticCost();
  SearchLimits limits;
  StatusOr<SearchResult> r =
      RunSearch("advantage", OnePayingGraph(), testing::VerifiedShippedRules(), *cost, limits, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--advantage-model"), std::string::npos)
      << r.status().message();
  r = RunSearch("greedy", OnePayingGraph(), testing::VerifiedShippedRules(), *cost, limits,
                {{"advantage-top", "3"}, {"ranker", "oracle"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown ranker 'oracle'"), std::string::npos)
      << r.status().message();
  r = RunSearch("advantage", OnePayingGraph(), testing::VerifiedShippedRules(), *cost, limits,
                {{"advantage-model", "/nonexistent/model.pt"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent/model.pt"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace rewire

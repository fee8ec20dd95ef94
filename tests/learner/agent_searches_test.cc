// The trained policy's searches in the optimise pipeline (learner/agent_searches.h): rl and
// guided load the request's checkpoint, and the pipeline finishes their graphs like any other.

#include "learner/agent_searches.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "env/eqsat/learned_builder.h"
#include "graph/files.h"
#include "graph/models/zoo.h"
#include "learner/policy.h"
#include "pipeline/optimize.h"
#include "tests/ruleset/shipped_rules.h"

namespace rewire {
namespace {

namespace fs = std::filesystem;

/// An untrained policy's checkpoint; removed at scope exit.
struct Checkpoint {
  Checkpoint() {
    torch::manual_seed(11);
    GnnPolicy policy(GnnShape{16, 2, 2});
    CheckpointMeta meta;
    meta.shape = GnnShape{16, 2, 2};
    EXPECT_TRUE(SaveCheckpoint(path, policy, nullptr, meta).ok());
  }
  ~Checkpoint() { fs::remove(path); }
  const std::string path =
      (fs::temp_directory_path() / ("rewire_optimize_" + std::to_string(::getpid()) + ".pt"))
          .string();
};

StatusOr<OptimizeReport> Optimize(const OptimizeRequest& request, const Graph& input,
                                  CostModel& cost) {
  REWIRE_ASSIGN_OR_RETURN(OptimizePipeline pipeline,
                          OptimizePipeline::Prepare(request, AllSearches()));
  return pipeline.Run(input, testing::VerifiedShippedRules(), cost);
}

TEST(AgentSearches, ThePolicySearchesLoadTheCheckpoint) {
  Checkpoint ckpt;
  auto cost = testing::AnalyticCost();
  ASSERT_TRUE(cost);
  const Graph input = *BuildModel("squeezenet");
  for (const char* algorithm : {"rl", "guided"}) {
    SCOPED_TRACE(algorithm);
    OptimizeRequest request;
    request.search = algorithm;
    request.limits.budget = 5;
    request.search_options = {{"policy", ckpt.path}, {"horizon", "4"}, {"samples", "1"}};
    auto out = Optimize(request, input, *cost);
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_TRUE(out->result.equivalence.verified) << out->result.equivalence.message;
    EXPECT_LE(out->result.final_cost_ms, out->search_result.initial_cost_ms * (1 + 1e-9));
    EXPECT_LE(out->search_result.steps.size(), 5u);
    if (std::string(algorithm) == "rl") {
      // The rollouts' figures: the best of both is the search's result.
      const auto& stats = out->search_result.stats;
      ASSERT_NE(stats.Find("greedy_policy_cost_ms"), nullptr);
      ASSERT_NE(stats.Find("sampled_best_cost_ms"), nullptr);
      EXPECT_DOUBLE_EQ(
          out->search_result.final_cost_ms,
          std::min(stats.Number("greedy_policy_cost_ms"), stats.Number("sampled_best_cost_ms")));
    }
  }
}

TEST(AgentSearches, RlEqsatSeedsTheEGraphWithTheRolloutAndEndsNoDearerThanIt) {
  Checkpoint ckpt;
  auto cost = testing::AnalyticCost();
  ASSERT_TRUE(cost);
  const Graph input = *BuildModel("squeezenet");
  OptimizeRequest request;
  request.search = "rl-eqsat";
  request.search_options = {{"policy", ckpt.path},     {"horizon", "6"},
                            {"samples", "1"},          {"egraph-nodes", "4000"},
                            {"eqsat-iterations", "2"}, {"ilp-time-limit", "1"}};
  auto out = Optimize(request, input, *cost);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_TRUE(out->result.equivalence.verified) << out->result.equivalence.message;
  const SearchResult& r = out->search_result;
  ASSERT_NE(r.stats.Find("rl_cost_ms"), nullptr);
  // The rollout is in the e-graph (a seed) and kept where the extraction misses it.
  EXPECT_LE(r.final_cost_ms, r.stats.Number("rl_cost_ms") * (1 + 1e-9));
  EXPECT_GT(r.stats.Number("egraph_nodes"), 0u);
  if (r.stats.Number("rl_cost_ms") < r.initial_cost_ms) {
    EXPECT_EQ(r.stats.Number("seeds"), 1u);
  } else {
    EXPECT_EQ(r.stats.Find("seeds"), nullptr);
  }
  ASSERT_FALSE(r.summary.empty());
  EXPECT_EQ(r.summary.front().first, "policy");
}

TEST(AgentSearches, RlEqsatGrowsTheSeededEGraphWithALearnedBuilder) {
  Checkpoint ckpt;
  auto cost = testing::AnalyticCost();
  ASSERT_TRUE(cost);
  TempFolder dir("rl-eqsat-learned");
  const std::string builder = dir.path() + "/builder.json";
  ASSERT_TRUE(eqsat::SaveBuilderPolicy(eqsat::BuilderPolicy{}, builder).ok());
  const Graph input = *BuildModel("squeezenet");
  OptimizeRequest request;
  request.search = "rl-eqsat";
  request.search_options = {{"policy", ckpt.path},    {"horizon", "6"},       {"samples", "1"},
                            {"egraph-nodes", "3000"}, {"grow", "learned"},    {"builder", builder},
                            {"builder-steps", "3"},   {"ilp-time-limit", "1"}};
  auto out = Optimize(request, input, *cost);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_TRUE(out->result.equivalence.verified) << out->result.equivalence.message;
  const SearchResult& r = out->search_result;
  // The builder grew it (its stats), within the node limit, and the rollout is no cheaper.
  ASSERT_NE(r.stats.Find("builder_stop"), nullptr);
  EXPECT_LE(r.stats.Number("builder_steps"), 3);
  EXPECT_LE(r.stats.Number("egraph_nodes"), 3000);
  EXPECT_LE(r.final_cost_ms, r.stats.Number("rl_cost_ms") * (1 + 1e-9));

  // A builder without --grow learned, and a builder file that is not there, are refused.
  for (const auto& [grow, path] :
       {std::pair<std::string, std::string>{"saturate", builder}, {"learned", builder + ".x"}}) {
    OptimizeRequest q;
    q.search = "rl-eqsat";
    q.search_options = {{"policy", ckpt.path}, {"grow", grow}, {"builder", path}};
    const auto refused = CheckRequest(q, AllSearches());
    ASSERT_FALSE(refused.ok()) << grow;
    EXPECT_NE(refused.status().message().find("--builder"), std::string::npos)
        << refused.status().message();
  }
}

TEST(AgentSearches, APolicyIsNeededExactlyByThePolicySearches) {
  Checkpoint ckpt;
  const SearchRegistry& searches = AllSearches();
  ASSERT_TRUE(searches.Has("rl"));
  ASSERT_TRUE(searches.Has("guided"));
  ASSERT_TRUE(searches.Has("rl-eqsat"));
  for (const char* search : {"rl", "guided", "rl-eqsat"}) {
    OptimizeRequest q;
    q.search = search;
    const auto missing = CheckRequest(q, searches);
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.status().message(),
              std::string("search ") + search + ": the " + search +
                  " search needs a policy checkpoint (--policy, from `rewire train`)");
  }
  // A search that runs no policy declares no --policy: giving it one is an unknown option.
  OptimizeRequest greedy;
  greedy.search = "greedy";
  greedy.search_options = {{"policy", ckpt.path}};
  const auto extra = CheckRequest(greedy, searches);
  ASSERT_FALSE(extra.ok());
  EXPECT_EQ(extra.status().message(),
            "search greedy: unknown option --policy (known: --ranker, --advantage-model, "
            "--advantage-top)");
  // A checkpoint that cannot be loaded is the search's error.
  auto cost = testing::AnalyticCost();
  ASSERT_TRUE(cost);
  OptimizeRequest bad;
  bad.search = "rl";
  bad.search_options = {{"policy", ckpt.path + ".missing"}};
  const auto out = Optimize(bad, *BuildModel("squeezenet"), *cost);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), "checkpoint " + ckpt.path + ".missing not found");
}

}  // namespace
}  // namespace rewire

// The trained policy's searches in the optimise pipeline (learner/agent_searches.h): rl and
// guided load the request's checkpoint, and the pipeline finishes their graphs like any other.

#include "learner/agent_searches.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "graph/models/zoo.h"
#include "learner/policy.h"
#include "pipeline/optimize.h"
#include "tests/kernels/shipped_rules.h"

namespace rewire {
namespace {

namespace fs = std::filesystem;

/// An untrained policy's checkpoint; removed at scope exit.
struct Checkpoint {
  Checkpoint() {
    torch::manual_seed(11);
    GnnPolicy policy(GnnShape{16, 2, 2});
    EXPECT_TRUE(
        SaveCheckpoint(path, policy, nullptr, CheckpointMeta{0, 0, 0, 0, GnnShape{16, 2, 2}, ""})
            .ok());
  }
  ~Checkpoint() { fs::remove(path); }
  const std::string path =
      (fs::temp_directory_path() / ("rewire_optimize_" + std::to_string(::getpid()) + ".pt"))
          .string();
};

StatusOr<OptimizeReport> Optimize(const OptimizeRequest& request, const Graph& input,
                                  CostModel& cost) {
  const SearchRegistry searches = AllSearches();
  REWIRE_ASSIGN_OR_RETURN(OptimizePipeline pipeline, OptimizePipeline::Prepare(request, searches));
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
    request.search.algorithm = algorithm;
    request.search.budget = 5;
    request.policy = ckpt.path;
    request.agent.horizon = 4;
    request.agent.samples = 1;
    auto out = Optimize(request, input, *cost);
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_TRUE(out->result.equivalence.verified) << out->result.equivalence.message;
    EXPECT_LE(out->result.final_cost_ms, out->search_result.initial_cost_ms * (1 + 1e-9));
    EXPECT_LE(out->search_result.steps.size(), 5u);
    if (std::string(algorithm) == "rl") {
      // The rollouts' figures: the best of both is the search's result.
      const auto& stats = out->search_result.stats;
      ASSERT_EQ(stats.count("greedy_policy_cost_ms"), 1u);
      ASSERT_EQ(stats.count("sampled_best_cost_ms"), 1u);
      EXPECT_DOUBLE_EQ(
          out->search_result.final_cost_ms,
          std::min(stats.at("greedy_policy_cost_ms"), stats.at("sampled_best_cost_ms")));
    }
  }
}

TEST(AgentSearches, APolicyIsNeededExactlyByThePolicySearches) {
  Checkpoint ckpt;
  const SearchRegistry searches = AllSearches();
  EXPECT_TRUE(searches.NeedsPolicy("rl"));
  EXPECT_TRUE(searches.NeedsPolicy("guided"));
  EXPECT_FALSE(searches.NeedsPolicy("greedy"));
  OptimizeRequest rl;
  rl.search.algorithm = "rl";
  const Status missing = CheckRequest(rl, searches);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("needs a policy checkpoint"), std::string::npos)
      << missing.message();
  OptimizeRequest greedy;
  greedy.search.algorithm = "greedy";
  greedy.policy = ckpt.path;
  const Status extra = CheckRequest(greedy, searches);
  ASSERT_FALSE(extra.ok());
  EXPECT_NE(extra.message().find("not to greedy"), std::string::npos) << extra.message();
  // A checkpoint that cannot be loaded is the search's error.
  auto cost = testing::AnalyticCost();
  ASSERT_TRUE(cost);
  OptimizeRequest bad;
  bad.search.algorithm = "rl";
  bad.policy = ckpt.path + ".missing";
  EXPECT_FALSE(Optimize(bad, *BuildModel("squeezenet"), *cost).ok());
}

}  // namespace
}  // namespace rewire

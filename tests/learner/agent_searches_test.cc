// OptimizeGraph: `rewire optimize` as a library call (search, then FinishSearch).

#include "learner/optimize.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "graph/models/zoo.h"
#include "learner/policy.h"
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

TEST(OptimizeGraph, GreedyIsTheSearchThenFinishSearch) {
  auto cost = testing::AnalyticCost();
  ASSERT_TRUE(cost);
  const auto& rules = testing::VerifiedShippedRules();
  const Graph input = *BuildModel("squeezenet");
  OptimizeRequest request;
  request.search.algorithm = "greedy";
  request.search.budget = 50;
  request.finish.export_onnx = true;
  auto out = OptimizeGraph(input, rules, *cost, request);
  ASSERT_TRUE(out.ok()) << out.status().message();

  // The same as the two steps by hand.
  auto searched = RunSearch(input, rules, *cost, request.search);
  ASSERT_TRUE(searched.ok());
  const double searched_cost = searched->final_cost_ms;
  auto finished = FinishSearch(input, std::move(searched->best), *cost, request.finish);
  ASSERT_TRUE(finished.ok());
  ASSERT_EQ(out->search.steps.size(), searched->steps.size());
  for (size_t i = 0; i < searched->steps.size(); ++i)
    EXPECT_EQ(out->search.steps[i].rule, searched->steps[i].rule);
  EXPECT_EQ(out->search.reason, searched->reason);
  EXPECT_DOUBLE_EQ(out->search.initial_cost_ms, searched->initial_cost_ms);
  EXPECT_DOUBLE_EQ(out->search.final_cost_ms, searched_cost);
  EXPECT_DOUBLE_EQ(out->result.final_cost_ms, finished->final_cost_ms);
  EXPECT_EQ(out->result.graph.Hash(), finished->graph.Hash());
  EXPECT_EQ(out->result.onnx, finished->onnx);
  EXPECT_TRUE(out->result.equivalence.verified) << out->result.equivalence.message;
  EXPECT_LT(out->result.final_cost_ms, out->search.initial_cost_ms);
}

TEST(OptimizeGraph, ThePolicySearchesLoadTheCheckpoint) {
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
    auto out = OptimizeGraph(input, testing::VerifiedShippedRules(), *cost, request);
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_TRUE(out->result.equivalence.verified) << out->result.equivalence.message;
    EXPECT_LE(out->result.final_cost_ms, out->search.initial_cost_ms * (1 + 1e-9));
    EXPECT_LE(out->search.steps.size(), 5u);
  }
}

TEST(OptimizeGraph, APolicyIsNeededExactlyByThePolicySearches) {
  Checkpoint ckpt;
  auto cost = testing::AnalyticCost();
  ASSERT_TRUE(cost);
  const Graph input = *BuildModel("squeezenet");
  OptimizeRequest rl;
  rl.search.algorithm = "rl";
  auto missing = OptimizeGraph(input, testing::VerifiedShippedRules(), *cost, rl);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("needs a policy checkpoint"), std::string::npos)
      << missing.status().message();
  OptimizeRequest greedy;
  greedy.search.algorithm = "greedy";
  greedy.policy = ckpt.path;
  auto extra = OptimizeGraph(input, testing::VerifiedShippedRules(), *cost, greedy);
  ASSERT_FALSE(extra.ok());
  EXPECT_NE(extra.status().message().find("rl and guided searches only"), std::string::npos)
      << extra.status().message();
  OptimizeRequest bad;
  bad.search.algorithm = "rl";
  bad.policy = ckpt.path + ".missing";
  EXPECT_FALSE(OptimizeGraph(input, testing::VerifiedShippedRules(), *cost, bad).ok());
  OptimizeRequest unknown;
  unknown.search.algorithm = "annealing";
  auto u = OptimizeGraph(input, testing::VerifiedShippedRules(), *cost, unknown);
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.status().message().find("annealing"), std::string::npos) << u.status().message();
}

}  // namespace
}  // namespace rewire

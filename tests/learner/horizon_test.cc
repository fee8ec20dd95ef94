// Every shipped training config gives its episodes room to do at least what greedy search does:
// a horizon shorter than greedy's number of rewrites caps the policy below greedy on that model,
// whatever it learns (the quickstart's 24 steps against greedy's 34 on SqueezeNet did).
// A config whose actions are passes needs room for the default pipeline instead.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "env/passes.h"
#include "env/search.h"
#include "env/search_registry.h"
#include "learner/config.h"
#include "learner/training.h"

namespace rewire {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> ShippedTrainingConfigs() {
  std::vector<std::string> out;
  const fs::path root = fs::path(REWIRE_SOURCE_DIR) / "configs";
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.path().extension() != ".toml") continue;
    const std::string rel = fs::relative(entry.path(), root).string();
    if (rel.rfind("rules/", 0) == 0 || rel.rfind("devices/", 0) == 0) continue;
    out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ShippedConfigs, EveryHorizonFitsWhatGreedySearchNeedsOnTheConfigsModels) {
  const std::vector<std::string> configs = ShippedTrainingConfigs();
  ASSERT_GE(configs.size(), 10u);
  const RunPaths paths{std::string(REWIRE_SOURCE_DIR) + "/configs/rules",
                       std::string(REWIRE_SOURCE_DIR) + "/configs/devices"};
  for (const std::string& path : configs) {
    SCOPED_TRACE(path);
    auto config = LoadTrainConfig(path);
    ASSERT_TRUE(config.ok()) << config.status().message();
    std::vector<ModelSpec> specs = config->env.models;
    specs.insert(specs.end(), config->eval.models.begin(), config->eval.models.end());
    auto res = LoadResources(*config, paths, specs);
    ASSERT_TRUE(res.ok()) << res.status().message();
    if (config->env.actions == "passes") {
      // An action is a whole pass: the horizon must fit the default pipeline, every pass once.
      auto passes = PassSet::Make(res->rules);
      ASSERT_TRUE(passes.ok()) << passes.status().message();
      EXPECT_LE(static_cast<int>((*passes)->DefaultPipeline().size()), config->env.horizon);
      continue;
    }
    std::set<std::string> seen;
    for (const auto& [label, graph] : res->models) {
      if (!seen.insert(label).second) continue;
      SearchLimits so;
      so.budget = 100000;
      so.max_candidates = static_cast<size_t>(config->env.max_candidates);
      auto greedy = RunSearch("greedy", graph, res->rules, *res->cost, so);
      ASSERT_TRUE(greedy.ok()) << label << ": " << greedy.status().message();
      EXPECT_LE(static_cast<int>(greedy->steps.size()), config->env.horizon)
          << label << ": greedy search takes " << greedy->steps.size() << " rewrites to reach "
          << greedy->initial_cost_ms / greedy->final_cost_ms << "x, env.horizon is "
          << config->env.horizon;
    }
  }
}

TEST(LoadResources, ALearnedCostIsTheOneOfTheRuntimeAndThreadsTheEvalMeasuresIn) {
  const RunPaths paths{std::string(REWIRE_SOURCE_DIR) + "/configs/rules",
                       std::string(REWIRE_SOURCE_DIR) + "/configs/devices"};
  TrainConfig c;
  c.env.cost = "learned";
  c.eval.runtime = "ort";
  c.eval.runtime_threads = 2;
  auto two = LoadResources(c, paths, {});
  ASSERT_TRUE(two.ok()) << two.status().message();
  EXPECT_NE(two->cost->Name().find("2 threads"), std::string::npos) << two->cost->Name();
  c.eval.runtime_threads = 3;
  auto three = LoadResources(c, paths, {});
  ASSERT_FALSE(three.ok());
  EXPECT_NE(three.status().message().find("rewire ships no kernel model for ONNX Runtime CPU at 3 "
                                          "threads"),
            std::string::npos)
      << three.status().message();
  c.env.cost = "learned:" + std::string(REWIRE_SOURCE_DIR) + "/configs/cost/ort-cpu-1t.json";
  c.eval.runtime_threads = 2;
  auto other = LoadResources(c, paths, {});
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("not the runtime this run targets (ort-cpu, 2 threads)"),
            std::string::npos)
      << other.status().message();
  // Without a measuring eval the shipped model is the 1-thread one.
  c.env.cost = "learned";
  c.eval.runtime = "";
  auto plain = LoadResources(c, paths, {});
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_NE(plain->cost->Name().find("1 thread"), std::string::npos) << plain->cost->Name();
}

}  // namespace
}  // namespace rewire

// The seams' own test: four toys, each one file of tests/toys/ with one registration line in it
// and nothing else of rewire changed - a search, a cost model, an agent and a candidate ranker -
// run through the
// `rewire` command line (in-process, RunCli) and the acting loop.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cost/cost_registry.h"
#include "env/candidate_ranker.h"
#include "env/environment.h"
#include "graph/json.h"
#include "graph/models/zoo.h"
#include "graph/onnx/onnx_io.h"
#include "learner/acting.h"
#include "learner/agent.h"
#include "learner/agent_searches.h"
#include "learner/config.h"
#include "tests/ruleset/shipped_rules.h"

namespace rewire {
namespace {

namespace fs = std::filesystem;

/// A fresh folder for one test's files.
struct TempDir {
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() /
             ("rewire_toys_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& file) const { return (path / file).string(); }
  fs::path path;
};

/// `rewire ARGS...` in this process; its exit status.
int Rewire(std::vector<std::string> args) {
  args.insert(args.begin(), "rewire");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return cli::RunCli(static_cast<int>(argv.size()), argv.data());
}

Json Report(const std::string& path) {
  auto js = ReadJsonFile(path);
  EXPECT_TRUE(js.ok()) << js.status().message();
  return js.ok() ? *js : Json::object();
}

const std::string kRules = std::string(REWIRE_SOURCE_DIR) + "/configs/rules";

TEST(Toys, EachIsRegisteredByItsOwnFile) {
  EXPECT_TRUE(AllSearches().Has("first-improving"));
  EXPECT_TRUE(CostModels().Has("op-count"));
  EXPECT_TRUE(Agents().Has("uniform-random"));
  EXPECT_TRUE(Rankers().Has("shrinking"));
}

// The ranker: greedy search pruned to its 3 best-ranked candidates costs at most 3 per step and
// still finds rewrites that pay; the progressive search takes it as its guide.
TEST(Toys, AShrinkingRankerPrunesGreedySearchThroughRewireOptimize) {
  TempDir dir("ranker");
  ASSERT_EQ(
      Rewire({"optimize", "-q", "--model", "squeezenet", "--rules", kRules, "--search", "greedy",
              "--advantage-top", "3", "--ranker", "shrinking", "--report", dir / "pruned.json"}),
      0);
  const Json pruned = Report(dir / "pruned.json");
  EXPECT_EQ(pruned["verified"], true);
  const int64_t iterations = pruned["iterations"].get<int64_t>();
  ASSERT_GT(iterations, 1);
  EXPECT_LE(pruned["candidates_evaluated"].get<int64_t>(), 3 * iterations);
  EXPECT_GT(pruned["search_stats"]["ranked"].get<int64_t>(),
            pruned["candidates_evaluated"].get<int64_t>());
  EXPECT_LT(pruned["final_cost_ms"].get<double>(), pruned["initial_cost_ms"].get<double>());
  ASSERT_EQ(
      Rewire({"optimize", "-q", "--model", "squeezenet", "--rules", kRules, "--search", "advantage",
              "--ranker", "shrinking", "--budget", "300", "--report", dir / "progressive.json"}),
      0);
  const Json progressive = Report(dir / "progressive.json");
  EXPECT_EQ(progressive["verified"], true);
  EXPECT_LT(progressive["final_cost_ms"].get<double>(),
            progressive["initial_cost_ms"].get<double>());
  EXPECT_LE(progressive["candidates_evaluated"].get<int64_t>(), 300);
}

// The search: every step lowers the cost, the first step is no better than greedy search's
// (which takes the best), and the flags of other searches are explained, not ignored.
TEST(Toys, AFirstImprovingSearchRunsThroughRewireOptimize) {
  TempDir dir("search");
  ASSERT_EQ(Rewire({"optimize", "-q", "--model", "squeezenet", "--rules", kRules, "--search",
                    "first-improving", "--budget", "200", "--out", dir / "first.onnx", "--report",
                    dir / "first.json"}),
            0);
  ASSERT_EQ(Rewire({"optimize", "-q", "--model", "squeezenet", "--rules", kRules, "--search",
                    "greedy", "--budget", "200", "--report", dir / "greedy.json"}),
            0);
  const Json first = Report(dir / "first.json"), greedy = Report(dir / "greedy.json");
  EXPECT_EQ(JsonStringAt(first, "search"), "first-improving");
  EXPECT_EQ(first["verified"], true);
  EXPECT_EQ(JsonStringAt(first, "stop_reason"), "saturated");
  const Json& steps = first["steps"];
  ASSERT_GT(steps.size(), 1u);
  double previous = first["initial_cost_ms"].get<double>();
  for (const Json& s : steps) {
    EXPECT_LT(s["cost_ms"].get<double>(), previous) << s["rule"];
    previous = s["cost_ms"].get<double>();
  }
  EXPECT_GE(steps[0]["cost_ms"].get<double>(), greedy["steps"][0]["cost_ms"].get<double>());
  EXPECT_TRUE(ImportOnnxFile(dir / "first.onnx").ok());
  // --alpha belongs to backtrack: an error saying so, and nothing run.
  EXPECT_EQ(Rewire({"optimize", "-q", "--model", "squeezenet", "--rules", kRules, "--search",
                    "first-improving", "--alpha", "2", "--report", dir / "none.json"}),
            1);
  EXPECT_FALSE(fs::exists(dir / "none.json"));
}

// The cost model: a whole-graph model (not additive) drives greedy search through the cost
// tables: the report's initial cost is its count of the input's operators, and every rewrite
// greedy search took removed at least one whole operator.
TEST(Toys, AnOperatorCountCostModelRunsThroughRewireOptimize) {
  TempDir dir("cost");
  ASSERT_EQ(Rewire({"optimize", "-q", "--model", "squeezenet", "--rules", kRules, "--search",
                    "greedy", "--budget", "100", "--cost", "op-count", "--out", dir / "count.onnx",
                    "--report", dir / "count.json"}),
            0);
  const Json js = Report(dir / "count.json");
  EXPECT_EQ(JsonStringAt(js, "cost_model"), "op-count");
  EXPECT_EQ(js["verified"], true);
  CostModelOptions options;
  options.kind = "op-count";
  auto model = CostModels().Make(options);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_FALSE((*model)->additive());
  auto input = (*model)->GraphCostMs(*BuildModel("squeezenet"));
  ASSERT_TRUE(input.ok());
  EXPECT_EQ(js["initial_cost_ms"].get<double>(), *input);
  const Json& steps = js["steps"];
  ASSERT_GT(steps.size(), 0u);
  double previous = *input;
  for (const Json& s : steps) {
    EXPECT_LE(s["cost_ms"].get<double>(), previous - 1) << s["rule"];
    previous = s["cost_ms"].get<double>();
  }
  EXPECT_LE(js["final_cost_ms"].get<double>(), *input - steps.size());
  EXPECT_TRUE(ImportOnnxFile(dir / "count.onnx").ok());
}

// The agent in the acting loop: every step takes a candidate (the No-Op only when none is
// left), and the observations are in its format (no graph).
TEST(Toys, AUniformRandomAgentPlaysInTheActingLoop) {
  TrainConfig config;
  auto agent = Agents().Create("uniform-random", config, 0);
  ASSERT_TRUE(agent.ok()) << agent.status().message();
  auto cost = testing::AnalyticCost();
  EnvOptions eo;
  eo.horizon = 6;
  Environment env(testing::VerifiedShippedRules(), *cost, eo);
  const Graph graph = *BuildModel("squeezenet");
  std::mt19937_64 rng(3);
  auto played = PlayEpisodes(**agent, {EpisodeSeat{&env, &graph, &rng}}, ActingOptions{});
  ASSERT_TRUE(played.ok()) << played.status().message();
  const Episode& ep = (*played)[0].episode;
  ASSERT_EQ(ep.steps.size(), 6u);
  for (const RolloutStep& s : ep.steps) {
    EXPECT_TRUE(s.observation.nodes.empty());
    ASSERT_GT(s.observation.candidates.size(), 0u);
    EXPECT_LT(s.action, s.observation.num_actions() - 1);  // a candidate, not the No-Op
    EXPECT_FLOAT_EQ(s.logprob, -std::log(float(s.observation.candidates.size())));
  }
  EXPECT_EQ(ep.rules.size(), 6u);
}

// The agent in training and in a search: `rewire train` runs it (learning nothing) and writes
// its checkpoint, which `--search rl` loads with the agent that wrote it.
TEST(Toys, AUniformRandomAgentTrainsAndSearchesThroughRewire) {
  TempDir dir("agent");
  {
    std::ofstream toml(dir / "toy.toml");
    toml << "[run]\ndir = \"" << (dir / "run") << "\"\nagent = \"uniform-random\"\n"
         << "max_updates = 2\n[env]\nmodels = [\"squeezenet\"]\nhorizon = 5\nrules = \"" << kRules
         << "\"\n[ppo]\nepisodes_per_update = 2\n";
  }
  ASSERT_EQ(Rewire({"train", "-q", "--config", dir / "toy.toml"}), 0);
  std::ifstream metrics(dir / "run/metrics.jsonl");
  int lines = 0;
  for (std::string line; std::getline(metrics, line);) {
    auto js = ParseJsonObject(line);
    ASSERT_TRUE(js.ok()) << line;
    EXPECT_EQ((*js)["update"].get<double>(), ++lines);
    EXPECT_EQ((*js)["charts/episodic_length"].get<double>(), 5);
    EXPECT_FALSE(js->contains("losses/value_loss"));  // no PPO here
  }
  EXPECT_EQ(lines, 2);
  const std::string ckpt = dir / "run/checkpoints/latest.pt";
  auto loaded = Agents().Load(ckpt);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ((*loaded)->Name(), "uniform-random");
  ASSERT_EQ(Rewire({"optimize", "-q", "--model", "squeezenet", "--rules", kRules, "--search", "rl",
                    "--policy", ckpt, "--horizon", "5", "--report", dir / "rl.json"}),
            0);
  const Json js = Report(dir / "rl.json");
  EXPECT_EQ(JsonStringAt(js, "search"), "rl");
  EXPECT_EQ(js["verified"], true);
  EXPECT_LE(js["final_cost_ms"].get<double>(), js["initial_cost_ms"].get<double>());
}

}  // namespace
}  // namespace rewire

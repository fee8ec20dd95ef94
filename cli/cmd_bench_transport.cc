// `rewire bench transport`: the actor transport over loopback (actors/bench.h).

#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "actors/bench.h"
#include "cli/commands.h"
#include "cost/cost_registry.h"
#include "graph/json.h"
#include "learner/config.h"
#include "learner/training.h"
#include "ruleset/rule_verify.h"

namespace rewire::cli {
namespace {

/// The number at `key` of each line of a metrics.jsonl text that has one.
std::vector<double> MetricColumn(const std::string& jsonl, const std::string& key) {
  std::vector<double> out;
  std::istringstream in(jsonl);
  std::string line;
  while (std::getline(in, line)) {
    const StatusOr<Json> metrics = ParseJsonObject(line);
    if (!metrics.ok()) continue;
    if (const std::optional<double> v = JsonNumberAt(*metrics, key)) out.push_back(*v);
  }
  return out;
}

/// Training samples (environment steps learned from) per second of a `rewire launch` run with
/// `actors` env actors, over its updates after the first (which includes start-up).
void BenchTraining(const std::string& config, int actors, int updates, bool single_process) {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) throw CommandError("cannot find this executable (/proc/self/exe)");
  self[n] = '\0';
  std::random_device rd;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("rewire-bench-train-" + std::to_string(rd()));
  const TrainConfig c = Take(LoadTrainConfig(config));
  std::string cmd = std::string("'") + self + "' ";
  if (single_process) {
    // The same episodes per update as the distributed run's learner ranks together.
    cmd += "train -q --config '" + config + "' --set ppo.episodes_per_update=" +
           std::to_string(c.ppo.episodes_per_update * c.distributed.learners);
  } else {
    cmd += "launch --config '" + config + "' --set distributed.actors=" + std::to_string(actors);
  }
  cmd += " --set run.dir='" + dir.string() + "' --set run.max_updates=" + std::to_string(updates) +
         " >" + (dir.string() + ".log") + " 2>&1";
  const int status = std::system(cmd.c_str());
  const std::string metrics = [&] {
    std::ifstream f(dir / "metrics.jsonl");
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  const std::vector<double> steps = MetricColumn(metrics, "global_step");
  const std::vector<double> wall = MetricColumn(metrics, "wall_time");
  if (status != 0 || steps.size() < 2 || wall.size() != steps.size()) {
    std::printf("  %-34s failed (exit %d; log %s.log)\n",
                single_process ? "rewire train" : "launch", status, dir.string().c_str());
    return;
  }
  std::filesystem::remove(dir.string() + ".log", ec);
  const double sps = (steps.back() - steps.front()) / std::max(1e-9, wall.back() - wall.front());
  if (single_process) {
    std::printf("  %-34s %8.1f samples/s\n", "one process (rewire train)", sps);
  } else {
    const std::string label = std::to_string(c.distributed.learners) + " learner ranks, " +
                              std::to_string(actors) + " env actor" + (actors == 1 ? "" : "s");
    std::printf("  %-34s %8.1f samples/s\n", label.c_str(), sps);
  }
  std::fflush(stdout);
}

}  // namespace

void RegisterBenchTransport(CLI::App& bench) {
  struct TransportCli {
    std::string rules;
    CostModelOptions cost;
    actors::TransportBenchOptions bench;
    std::vector<std::string> gnn = {"2x32", "3x64"};
    std::string train_config;
    std::vector<int> train_actors = {1, 2, 4};
    int train_updates = 6;
  };
  auto t = std::make_shared<TransportCli>();
  auto* cmd = bench.add_subcommand(
      "transport",
      "Actor transport over loopback: rollout throughput, weight broadcast and fetch latency");
  cmd->add_option("--models", t->bench.models, "Zoo models the benchmark episodes run on")
      ->capture_default_str();
  cmd->add_option("--rules", t->rules, "Rules file or directory (default: configs/rules)");
  cmd->add_option("--cost", t->cost.kind, "analytic | cpu | cuda")->capture_default_str();
  cmd->add_option("--device", t->cost.device, "Device profile name or path");
  cmd->add_option("--steps", t->bench.episode_steps, "Random rewrites per benchmark episode")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--hops", t->bench.hops, "GNN layers the observations are encoded for")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--max-candidates", t->bench.max_candidates, "Candidates per observation at most")
      ->capture_default_str();
  cmd->add_option("--rollouts", t->bench.rollouts, "Rollout messages per throughput measurement")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--blob-bytes", t->bench.blob_bytes,
                  "Weight blob sizes in bytes (the GNN's serialized size)")
      ->capture_default_str();
  cmd->add_option("--subscribers", t->bench.subscribers, "Subscriber counts for the broadcast")
      ->capture_default_str();
  cmd->add_option("--repeats", t->bench.repeats, "Broadcasts and fetches timed per configuration")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--seed", t->bench.seed, "Seed of the random episodes")->capture_default_str();
  cmd->add_option(
         "--gnn", t->gnn,
         "GNN shapes (LAYERSxHIDDEN) whose real weights are broadcast; none: --blob-bytes filler")
      ->capture_default_str();
  cmd->add_option(
      "--train-config", t->train_config,
      "Config for the training throughput runs (default configs/distributed-local.toml)");
  cmd->add_option("--train-actors", t->train_actors,
                  "Env actor counts to measure training samples/s with (0: skip)")
      ->capture_default_str();
  cmd->add_option("--train-updates", t->train_updates, "PPO updates per training throughput run")
      ->check(CLI::Range(2, 10000))
      ->capture_default_str();
  cmd->callback([t]() {
    for (const std::string& g : t->gnn) {
      TrainConfig config;  // the ppo-gnn agent, of this GNN shape
      GnnSection& shape = config.gnn;
      char x = 0;
      std::istringstream in(g);
      if (!(in >> shape.layers >> x >> shape.hidden) || x != 'x' || !in.eof()) {
        throw CommandError("--gnn expects LAYERSxHIDDEN (e.g. 3x64), got '" + g + "'");
      }
      std::string blob = Take(InitialAgentWeights(config, t->bench.seed));
      std::string label = fmt::format("GNN {} ({:.0f} KiB)", g, blob.size() / 1024.0);
      t->bench.weights.emplace_back(std::move(label), std::move(blob));
    }
    const auto rules = Take(LoadVerifiedRules(t->rules.empty() ? DefaultRulesPath() : t->rules));
    if (t->cost.devices_dir.empty()) t->cost.devices_dir = DefaultDevicesDir();
    auto cost = Take(MakeCostModel(t->cost));
    std::printf("%zu verified rules, cost %s\n", rules.size(), cost->Name().c_str());
    std::printf("%s", Take(actors::BenchTransport(rules, *cost, t->bench)).c_str());
    std::fflush(stdout);
    std::vector<int> counts;
    for (int a : t->train_actors) {
      if (a > 0) counts.push_back(a);
    }
    if (counts.empty()) return;
    std::string config = t->train_config;
    if (config.empty()) {
      config = "configs/distributed-local.toml";
      if (!std::filesystem::exists(config)) config = std::string(REWIRE_SOURCE_DIR) + "/" + config;
    }
    std::printf(
        "training throughput (%s, %d updates; samples/s over the updates after the first; %u "
        "cores)\n",
        config.c_str(), t->train_updates, std::thread::hardware_concurrency());
    std::fflush(stdout);
    BenchTraining(config, 0, t->train_updates, true);
    for (int a : counts) BenchTraining(config, a, t->train_updates, false);
  });
}

}  // namespace rewire::cli

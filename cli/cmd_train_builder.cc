// `rewire train-builder`: trains the e-graph builder of `--search learned-eqsat`
// (env/eqsat/learned_builder.h, docs/eqsat.md) on a set of models and writes its checkpoint.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cost/cost_registry.h"
#include "env/eqsat/learned_builder.h"
#include "graph/models/load.h"
#include "learner/config.h"
#include "ruleset/rule_verify.h"

namespace rewire::cli {
namespace {

struct TrainBuilderOptions {
  std::vector<std::string> models;
  std::string rules, out, init;
  std::string cost = "learned";
  std::string device, devices_dir;
  eqsat::BuilderTrainOptions train;
};

void TrainBuilderCommand(TrainBuilderOptions& o) {
  std::vector<eqsat::BuilderTrainGraph> graphs;
  for (const std::string& text : o.models) {
    const ModelSpec spec = Take(ParseModelSpec(text));
    StatusOr<Graph> g = LoadModelSpec(spec);
    if (!g.ok()) throw CommandError("--model " + text + ": " + g.status().message());
    graphs.push_back({spec.Label(), std::move(g).value()});
  }
  const auto rules = Take(LoadVerifiedRules(o.rules.empty() ? DefaultRulesPath() : o.rules));
  CostModelOptions co = ParseCostSpec(o.cost);
  if (!o.device.empty()) co.device = o.device;
  co.devices_dir = o.devices_dir.empty() ? DefaultDevicesDir() : o.devices_dir;
  auto cost = Take(MakeCostModel(co));
  eqsat::BuilderPolicy init;
  if (!o.init.empty()) init = Take(eqsat::LoadBuilderPolicy(o.init));
  std::fprintf(stderr,
               "train-builder: %zu model(s), %zu verified rules, cost %s, %zu e-nodes, %d steps, "
               "%d epoch(s) of %d episode(s) per model, seed %llu\n",
               graphs.size(), rules.size(), cost->Name().c_str(), o.train.node_limit,
               o.train.max_steps, o.train.epochs, o.train.episodes_per_graph,
               static_cast<unsigned long long>(o.train.seed));
  o.train.progress = [](const eqsat::BuilderEpoch& e) {
    std::fprintf(stderr, "%s\n", eqsat::BuilderEpochText(e).c_str());
  };
  const eqsat::BuilderPolicy policy =
      Take(eqsat::TrainBuilder(graphs, rules, *cost, o.train, init));
  Check(eqsat::SaveBuilderPolicy(policy, o.out));
  std::printf(
      "wrote %s: %d epochs in %.1f s, the policy of epoch %d (its deterministic builds saved "
      "%.4f of the input's cost, the mean over the models; the last epoch's sampled ones %.4f)\n",
      o.out.c_str(), policy.epochs, policy.train_seconds, policy.best_epoch,
      policy.best_greedy_return, policy.final_mean_return);
}

}  // namespace

void RegisterTrainBuilder(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "train-builder",
      "Train the e-graph builder of `--search learned-eqsat` (a policy choosing which rules "
      "enter the e-graph, and a value deciding when to stop) on models, and write its "
      "checkpoint (docs/eqsat.md)");
  auto o = std::make_shared<TrainBuilderOptions>();
  cmd->add_option("-m,--model", o->models,
                  "Model to train on: a zoo name, NAME:key=value,... or an .onnx file "
                  "(repeatable)")
      ->required();
  cmd->add_option("-o,--out", o->out, "Where the checkpoint (JSON) is written")->required();
  cmd->add_option("--rules", o->rules,
                  "Rule files or directories, comma-separated (default: $REWIRE_RULES, else "
                  "configs/rules)");
  cmd->add_option("--cost", o->cost, "The cost model the extracted cost is judged by")
      ->capture_default_str();
  cmd->add_option("--device", o->device, "Device profile name (configs/devices) or path");
  cmd->add_option("--devices-dir", o->devices_dir, "Where device profiles are looked up");
  cmd->add_option("--init", o->init, "A checkpoint to continue training from");
  cmd->add_option("--egraph-nodes", o->train.node_limit, "E-nodes the e-graph may hold")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--steps", o->train.max_steps, "Steps per episode at most")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--epochs", o->train.epochs, "Updates (each over every model's episodes)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--episodes", o->train.episodes_per_graph,
                  "Sampled episodes per model and epoch (at least 2 for a baseline of the "
                  "model's own)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--lr", o->train.learning_rate, "Adam's learning rate")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--seed", o->train.seed, "The seed of the sampled episodes")
      ->capture_default_str();
  cmd->add_option("--episode-time-limit", o->train.episode_time_limit_s,
                  "Seconds one episode may build for (0: none)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->callback([o]() { TrainBuilderCommand(*o); });
}

}  // namespace rewire::cli

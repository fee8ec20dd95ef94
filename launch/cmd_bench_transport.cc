// `rewire bench transport`: the actor transport over loopback (actors/bench.h).

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "actors/bench.h"
#include "kernels/cost_backends.h"
#include "kernels/rule_verify.h"
#include "launch/commands.h"

namespace rewire::cli {

void RegisterBenchTransport(CLI::App& bench) {
  struct TransportCli {
    std::string rules;
    CostModelOptions cost;
    actors::TransportBenchOptions bench;
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
  cmd->callback([t]() {
    const auto rules = Take(LoadVerifiedRules(t->rules.empty() ? DefaultRulesPath() : t->rules));
    if (t->cost.devices_dir.empty()) t->cost.devices_dir = DefaultDevicesDir();
    auto cost = Take(MakeCostModel(t->cost));
    std::printf("%zu verified rules, cost %s\n", rules.size(), cost->Name().c_str());
    std::printf("%s", Take(actors::BenchTransport(rules, *cost, t->bench)).c_str());
  });
}

}  // namespace rewire::cli

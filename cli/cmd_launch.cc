// `rewire launch`: distributed training. By default the supervisor of this machine (or of one
// node of a cluster job): it starts the learner ranks and env actors the config's [distributed]
// section asks for and supervises them. `--role learner|actor` is how the supervisor starts its
// children (and how a process of a cluster job can be started by hand).

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "actors/runtime.h"
#include "cli/commands.h"
#include "graph/env_var.h"
#include "learner/config.h"
#include "learner/rendezvous.h"
#include "learner/trainer.h"

namespace rewire::cli {
namespace {

struct LaunchCliOptions {
  std::string config;
  std::vector<std::string> overrides;
  std::string role = "supervisor";
  bool resume = false;
  int node = -1;
  int nodes = -1;
  std::string master_addr;
};

/// This executable, for the supervisor's children.
std::string SelfPath() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw CommandError("cannot find this executable (/proc/self/exe)");
  return std::string(buf, static_cast<size_t>(n));
}

/// A non-negative integer from the environment, or `fallback` when unset or empty.
int NonNegativeEnvInt(const char* name, int fallback) {
  const int64_t x = Take(IntFromEnv(name, fallback));
  if (x < 0 || x > INT_MAX) {
    throw CommandError(std::string(name) + " must be a non-negative integer, got '" +
                       std::getenv(name) + "'");
  }
  return static_cast<int>(x);
}

}  // namespace

void RegisterLaunch(CLI::App& app) {
  auto o = std::make_shared<LaunchCliOptions>();
  auto* cmd = app.add_subcommand("launch",
                                 "Distributed training: learner ranks and env actors as supervised "
                                 "processes (see [distributed])");
  cmd->add_option("-c,--config", o->config, "TOML config (see configs/distributed-local.toml)")
      ->required();
  cmd->add_option("--set", o->overrides, "Override a config value: section.key=value (repeatable)");
  cmd->add_flag("--resume", o->resume, "Continue the run in run.dir from its last checkpoint");
  cmd->add_option("--role", o->role,
                  "supervisor (default): start and watch this node's processes; learner, actor: "
                  "one process (the supervisor starts these)")
      ->check(CLI::IsMember({"supervisor", "learner", "actor"}));
  cmd->add_option("--node", o->node,
                  "This node's index in a multi-node job (default: SLURM_PROCID, else 0)");
  cmd->add_option("--nodes", o->nodes, "Nodes in the job (default: SLURM_NTASKS, else 1)");
  cmd->add_option("--master-addr", o->master_addr,
                  "Address of node 0, where learner rank 0 hosts the rendezvous (default: "
                  "MASTER_ADDR, else the "
                  "first host of SLURM_JOB_NODELIST, else distributed.bind)");
  cmd->footer(
      "Each node runs distributed.learners learner ranks and distributed.actors env actors; the "
      "learner ranks of\n"
      "all nodes train one policy data-parallel. The run stops by itself after run.max_updates "
      "updates, or on\n"
      "SIGINT/SIGTERM (checkpoint kept). The run directory gets what `rewire train` writes, plus "
      "processes.json,\n"
      "endpoints/, learners/*.json and actors/*.json (counters) and supervisor<N>.json. "
      "docs/cluster.md: Slurm.");
  cmd->callback([o]() {
    const TrainConfig config = Take(LoadTrainConfig(o->config, o->overrides));
    const RunPaths paths{DefaultRulesPath(), DefaultDevicesDir()};
    if (o->role == "learner" || o->role == "actor") {
      Check(actors::InstallStopFlagHandlers());
      Check(o->role == "learner" ? actors::RunLearnerService(config, paths)
                                 : actors::RunEnvActor(config, paths));
      return;
    }
    actors::NodeOptions n;
    n.config_path = o->config;
    n.self = SelfPath();
    n.resume = o->resume;
    n.node = o->node >= 0 ? o->node : NonNegativeEnvInt("SLURM_PROCID", 0);
    n.nodes = o->nodes >= 0 ? o->nodes : std::max(1, NonNegativeEnvInt("SLURM_NTASKS", 1));
    n.master_addr = o->master_addr;
    if (n.master_addr.empty() && std::getenv("MASTER_ADDR") && *std::getenv("MASTER_ADDR")) {
      n.master_addr = std::getenv("MASTER_ADDR");
    }
    if (n.master_addr.empty() && n.nodes > 1) {
      const char* list = std::getenv("SLURM_JOB_NODELIST");
      if (list == nullptr || *list == '\0') list = std::getenv("SLURM_NODELIST");
      if (list == nullptr || *list == '\0') {
        throw CommandError("a job of " + std::to_string(n.nodes) +
                           " nodes needs --master-addr, MASTER_ADDR or SLURM_JOB_NODELIST");
      }
      n.master_addr = Take(FirstHostOfNodelist(list));
    }
    Check(actors::RunNode(config, paths, n));
  });
}

}  // namespace rewire::cli

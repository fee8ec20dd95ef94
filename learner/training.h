#pragma once
// The two halves of training as objects, so that they can live in different processes
// (docs/cluster.md, docs/rl.md). Both hold an agent (learner/agent.h: run.agent, "ppo-gnn" by
// default) and know no algorithm. No LibTorch in this header: actors/ and cli/ include it.
//
//   LearnerRank   one data-parallel learner rank: the agent, the all-reduce group, the run
//                 directory (config, metrics, checkpoints, per-rank weight checksums). Update()
//                 runs one update of the agent on the episodes it is given, wherever they came
//                 from, and records it.
//   ActingPolicy  an acting copy of the agent and environments: loads broadcast weights and plays
//                 episodes, recording what the agent learns from. An env actor is one of these.
//
// Train() (learner/trainer.h) is a LearnerRank collecting its own episodes; `rewire launch`
// feeds LearnerRanks with episodes from remote ActingPolicies.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cost/cost_model.h"
#include "env/environment.h"
#include "graph/graph.h"
#include "graph/rules/rule.h"
#include "graph/status.h"
#include "learner/acting.h"
#include "learner/config.h"
#include "replay/rollout.h"

namespace rewire {

class CostCache;

/// What every run needs: verified rules, a cost model, the models as graphs.
struct Resources {
  std::vector<rules::Rule> rules;
  uint64_t rules_hash = 0;  // RulesContentHash of the rules' files: compact rollouts name it
  std::unique_ptr<CostModel> cost;
  std::vector<std::pair<std::string, Graph>> models;  // label, graph
  /// The sparse reward's end-to-end model (MakeEnvOptions sets it up; null for the dense one)
  /// and the store its measurements are shared through by the run's processes.
  std::shared_ptr<CostModel> reward_model;
  std::shared_ptr<CostCache> measurement_store;
};

/// Loads the rules (verified), the cost model and `models` as env configures them.
StatusOr<Resources> LoadResources(const TrainConfig& config, const RunPaths& paths,
                                  const std::vector<ModelSpec>& models);

/// What an environment's episodes depend on besides the rules and the actions: the horizon, the
/// candidate cap, the cost model, the reward and the agent's observation format. A compact
/// rollout carries its actor's and is replayed only by a learner with the same.
std::string EnvReplayKey(const TrainConfig& config, const Resources& resources,
                         const ObservationFormat& format);

/// The environment env configures: horizon, candidate cap, and the reward (env.reward). The
/// sparse reward measures graphs end to end on env.reward_device through an e2e cost model it
/// sets up in `resources` (reward_model), whose measurements go through the run's store
/// (env.cost_cache, else <run.dir>/measurements.sqlite): a graph is measured once per run, by
/// whichever of its processes meets it first. Errors: the runtime cannot start (no ONNX Runtime,
/// no GPU), the store cannot be opened.
StatusOr<EnvOptions> MakeEnvOptions(const TrainConfig& config, Resources& resources);

/// What the run has measured so far: this process's counts (env.cost's and the sparse
/// reward's), and the store's log of every process's measurements (`store_measured`,
/// `store_seconds`; -1 without a store).
struct RunMeasurements {
  MeasurementCounts local;  // `unmeasurable`: graphs env.cost's and the reward's models refused
  int64_t store_measured = -1;
  double store_seconds = 0;
};
StatusOr<RunMeasurements> CountMeasurements(const Resources& resources);

/// The weights (what learners broadcast) of a fresh agent as `config` asks (run.agent), drawn
/// from `seed`.
StatusOr<std::string> InitialAgentWeights(const TrainConfig& config, uint64_t seed);

// ---------------------------------------------------------------------------- learner rank

enum class ResumeMode {
  kFresh,            // refuse a run directory that already holds a checkpoint
  kResume,           // continue from the checkpoint (an error if there is none)
  kResumeIfPresent,  // continue when there is a checkpoint, else start (a restarted process)
};

class LearnerRank {
 public:
  /// Joins the data-parallel group (RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT or Slurm's variables;
  /// a single process when unset), prepares the run directory (rank 0 writes config.toml),
  /// builds the policy and optimizer, loads the checkpoint as `mode` says, moves both to
  /// run.device (plain "cuda": GPU LOCAL_RANK, else SLURM_LOCALID, else the rank, modulo the
  /// GPUs; the all-reduce then runs on NCCL) and broadcasts rank 0's weights. `log` receives
  /// progress lines (also appended to the rank's log file).
  static StatusOr<std::unique_ptr<LearnerRank>> Create(const TrainConfig& config,
                                                       const RunPaths& paths, ResumeMode mode,
                                                       std::function<void(const std::string&)> log);
  ~LearnerRank();

  int rank() const;
  int world_size() const;
  /// Updates applied so far (the checkpoint's on a resume).
  int64_t policy_version() const;
  /// True once run.max_updates updates are done.
  bool finished() const;
  /// Writes a line to the rank's log (and to `log`).
  void Log(const std::string& line);

  /// `n` episodes of this rank's own agent (sampled actions, observations recorded): the
  /// rollouts of single-process training.
  StatusOr<std::vector<Episode>> CollectEpisodes(int n);

  /// One update of the agent on `episodes` (at least one per rank; every rank calls it
  /// together), the episodes' statistics all-reduced over the ranks, then rank 0 writes the
  /// checkpoint (every run.checkpoint_every updates and the last), the
  /// metrics line and the same values as TensorBoard scalars (RUN_DIR/tb/events.out.tfevents.*,
  /// step = the update), every rank its weights checksum, and a progress line is logged. `extra`
  /// metrics are appended to the metrics line. Errors: a collective or a write failed.
  Status Update(std::vector<Episode> episodes, double rollout_seconds,
                const std::vector<std::pair<std::string, double>>& extra = {});

  /// The current weights for actors (PolicyWeightsBytes).
  StatusOr<std::string> WeightsBytes();

  /// Rebuilds the observations of a compact episode (replay/replay.h) by replaying its actions on
  /// this rank's environment. Errors (the rollout must be dropped): another rule set or
  /// environment (`rules_hash`, `env_key`), a model this run does not train on, or actions that do
  /// not replay to the episode's rewrites, rewards and costs.
  Status Replay(uint64_t rules_hash, const std::string& env_key, Episode& episode);
  uint64_t rules_hash() const;
  const std::string& env_key() const;

  struct Impl;

 private:
  explicit LearnerRank(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------- acting policy

class ActingPolicy {
 public:
  /// Loads the resources and an untrained policy of the config's shape on
  /// distributed.actor_device (plain "cuda": GPU `device_index` modulo the GPUs); episodes are
  /// seeded by `seed`. No weights are loaded yet (version -1).
  static StatusOr<std::unique_ptr<ActingPolicy>> Create(const TrainConfig& config,
                                                        const RunPaths& paths, uint64_t seed,
                                                        int64_t device_index = 0);
  ~ActingPolicy();

  /// Loads broadcast weights. Errors: bytes that are not weights of this shape.
  Status LoadWeights(const std::string& bytes, int64_t version);
  /// The version of the loaded weights; -1 before any.
  int64_t version() const;

  /// One sampled episode on a model drawn from env.models, observations recorded, stamped with
  /// the weights' version.
  StatusOr<Episode> RunEpisode();
  /// `n` episodes played side by side on `n` environments: every step encodes the observations of
  /// the episodes still running and runs one batched forward pass over them. Without
  /// `keep_observations` the steps carry no observations (compact rollouts: the learner replays),
  /// unless the environments exclude some unmeasurable graph (unmeasurable()): then they do.
  StatusOr<std::vector<Episode>> RunEpisodes(int n, bool keep_observations);

  const ActingProfile& profile() const;
  uint64_t rules_hash() const;
  const std::string& env_key() const;
  /// What this actor has measured, and the run's store's totals (CountMeasurements).
  StatusOr<RunMeasurements> measurements() const;
  /// The graphs its environments excluded as unmeasurable (their measurement crashed or hung),
  /// by structural hash, each once. Once there is one, RunEpisodes keeps observations even when
  /// asked for compact episodes (a learner replaying them would not know the exclusions).
  std::vector<UnmeasurableGraph> unmeasurable() const;

  struct Impl;

 private:
  explicit ActingPolicy(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rewire

#pragma once
// An agent: what acts on observations and learns from episodes. The acting loop
// (learner/acting.h), the env actors and learner ranks (learner/training.h, actors/), the
// checkpoints and the agent's searches (`--search rl|guided`) speak to this interface only, and
// take agents by name from an AgentRegistry (Agents()). The first agent is PPO over the GNN
// policy (learner/ppo_agent.h, "ppo-gnn"). No LibTorch in this header. Adding an agent is
// docs/architecture.md, "Adding an agent".
//
// The runtime owns what is not the algorithm: which episodes an agent learns from, the episode
// statistics all-reduced over the ranks, the run's position (RunState), the metrics file,
// TensorBoard and the log. The agent owns its model, its optimiser, its schedule and its state.

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "env/features.h"
#include "graph/registry.h"
#include "graph/status.h"
#include "replay/rollout.h"

namespace rewire {

class GradientAllReducer;  // learner/data_parallel.h
class Imagination;         // learner/imagination.h
struct TrainConfig;        // learner/config.h

/// What an agent makes of one observation: the log-probability of each action (the
/// observation's candidates in order, then the No-Op) and its value, the estimated return-to-go
/// in percent of the episode's initial cost (0 for an agent that estimates none).
struct ActionScores {
  std::vector<float> logp;
  float value = 0;
};

/// Where a run stands, saved in every checkpoint beside the agent's own state.
struct RunState {
  int64_t policy_version = 0;  // updates applied to the agent
  int64_t global_step = 0;     // environment steps so far
  double wall_time = 0;        // seconds of training so far
  double best_speedup = 0;     // the best episode's, over the run
  std::string rng_state;       // the trainer's generator, for an exact resume
};

/// What one learning update is given besides its episodes.
struct LearnContext {
  int64_t update = 1;       // the update being made, from 1
  int64_t max_updates = 1;  // run.max_updates: schedules anneal over it
  /// The data-parallel group: every rank calls Learn together, and gradients (or whatever the
  /// algorithm shares) are all-reduced over it. A group of one rank in a single process.
  GradientAllReducer* group = nullptr;
  /// Shuffles minibatches (the trainer's generator, checkpointed with the run).
  std::mt19937_64* rng = nullptr;
  /// Episodes played on the real matcher and rewriter without measuring (learner/imagination.h),
  /// for agents that learn from imagined rollouts; null where the runtime offers none.
  Imagination* imagination = nullptr;
};

/// What an update did, for the metrics file and TensorBoard (CleanRL's names, e.g.
/// "losses/value_loss") and for the progress line (`summary`, e.g. "value_loss 0.111 ...").
struct LearnReport {
  std::vector<std::pair<std::string, double>> metrics;
  std::string summary;
};

class Agent {
 public:
  virtual ~Agent() = default;

  /// The name it is registered under (AgentRegistry).
  virtual std::string Name() const = 0;
  /// The observation format it reads (env/features.h).
  virtual ObservationFormat observation_format() const = 0;

  // ---------------------------------------------------------------- acting
  /// Scores a batch of observations (in its format): one ActionScores per observation, its
  /// `logp` holding num_actions() entries. May run on a thread of its own while the caller steps
  /// other environments (one call at a time).
  virtual StatusOr<std::vector<ActionScores>> Score(
      const std::vector<const ObservationFeatures*>& batch) = 0;

  // ---------------------------------------------------------------- learning
  /// One update from `episodes` (acted by this agent's weights of some version, observations
  /// recorded in its format). Errors: a collective of the group failed.
  virtual StatusOr<LearnReport> Learn(std::vector<Episode> episodes,
                                      const LearnContext& context) = 0;
  /// How many of the newest real episodes it learns from again in later updates (a replay); 0,
  /// the default, for an agent that learns from each update's episodes once. A learner keeps
  /// that many per rank beside the checkpoint (replay/history.h) and, on resume, hands them back
  /// through Remember, so what was measured is not lost with the process.
  virtual int RememberedEpisodes() const { return 0; }
  /// The real episodes a resumed rank had learned from (oldest first, observations rebuilt),
  /// before its first Learn. The default has nothing to remember.
  virtual Status Remember(std::vector<Episode> episodes) {
    (void)episodes;
    return Status::Ok();
  }

  // ---------------------------------------------------------------- state
  /// The weights acting copies need (what learners broadcast to env actors).
  virtual StatusOr<std::string> WeightsBytes() = 0;
  /// Loads bytes from WeightsBytes of an agent of the same kind and shape.
  virtual Status LoadWeights(const std::string& bytes) = 0;
  /// A checksum of the weights: equal on every rank of a data-parallel group when they agree.
  virtual std::string WeightsChecksum() = 0;
  /// Makes every rank's weights rank 0's (the group's start).
  virtual Status Broadcast(GradientAllReducer& group) = 0;
  /// Writes the agent's whole state (weights and, for a learner, what resuming needs) with `run`
  /// to `path`, atomically.
  virtual Status SaveCheckpoint(const std::string& path, const RunState& run) = 0;
  /// Reads a checkpoint of this agent's kind and shape into it; returns the run's position.
  /// `resume`: the learner's state (optimiser) is loaded too, and must be there.
  virtual StatusOr<RunState> LoadCheckpoint(const std::string& path, bool resume) = 0;
  /// Moves the agent to `device` ("cpu", "cuda", "cuda:N"; plain "cuda" takes GPU `local_index`
  /// modulo the GPUs). Agents that compute on the CPU only accept "cpu".
  virtual Status UseDevice(const std::string& device, int64_t local_index) = 0;
};

/// Agents by name: how to make a fresh one as a training config asks, and how to load a
/// checkpoint one wrote.
class AgentRegistry {
 public:
  struct Entry {
    std::string name;
    std::string summary;
    /// A fresh agent as `config` asks (its [gnn] and [ppo] sections, ...), its weights drawn
    /// from `seed`.
    std::function<StatusOr<std::unique_ptr<Agent>>(const TrainConfig& config, uint64_t seed)>
        create;
    /// True when the file at `path` is a checkpoint this kind of agent wrote (cheap: a header).
    std::function<bool(const std::string& path)> recognises;
    /// The agent in checkpoint `path`, of the shape it was saved with, its weights loaded.
    std::function<StatusOr<std::unique_ptr<Agent>>(const std::string& path)> load;
  };

  /// Adds `entry` (replacing one of its name).
  void Add(Entry entry) { entries_.Add(std::move(entry)); }
  bool Has(const std::string& name) const { return entries_.Has(name); }
  std::vector<std::string> Names() const { return entries_.Names(); }
  /// The one-line summary of `name` (empty for an unknown name).
  std::string Summary(const std::string& name) const { return entries_.Summary(name); }

  /// A fresh agent `name` for `config`, its weights drawn from `seed`. Errors: an unknown name
  /// (listing the known ones), and the agent's own.
  StatusOr<std::unique_ptr<Agent>> Create(const std::string& name, const TrainConfig& config,
                                          uint64_t seed) const;
  /// The agent in checkpoint `path`, by the kind that recognises it. Errors: a missing file, a
  /// file no registered agent wrote, and the agent's own.
  StatusOr<std::unique_ptr<Agent>> Load(const std::string& path) const;

 private:
  NamedRegistry<Entry> entries_{"agent"};
};

/// Adds learner/'s agents: ppo-gnn and world-model (learner/agents.cc).
void AddLearnerAgents(AgentRegistry& registry);

/// The process's registry, with learner/'s agents from the first call on. Add agents at
/// start-up, before agents are made on other threads.
AgentRegistry& Agents();

}  // namespace rewire

#pragma once
// The acting loop: episodes of an agent (learner/agent.h) played side by side, one batched
// Score per step over the episodes still running, each observation encoded in the agent's
// format. Every caller acts through it: single-process training (LearnerRank::CollectEpisodes),
// env actors (ActingPolicy::RunEpisodes), and the agent's searches (the rl rollouts, the guided
// search's seeds). No LibTorch in this header.

#include <cstdint>
#include <random>
#include <vector>

#include "env/environment.h"
#include "env/search.h"
#include "learner/agent.h"
#include "replay/rollout.h"

namespace rewire {

/// Where acting's time went, in seconds.
struct ActingProfile {
  double env_s = 0;      // Reset and Step: enumerating candidates, applying and costing them
  double encode_s = 0;   // observation features
  double forward_s = 0;  // the agent's Score (a forward pass: tensors, the model) and the choice
  int64_t steps = 0;
  int64_t episodes = 0;
  int64_t forwards = 0;  // batched Score calls (steps / forwards = observations per call)
};

/// What one episode found.
struct EpisodeOutcome {
  Episode episode;                     // steps recorded as asked
  Graph best_graph;                    // the cheapest graph of the episode, when tracked
  std::vector<SearchStep> best_steps;  // rewrites from the start to best_graph
  /// The episode was cut at ActingOptions::max_steps before its environment ended it (its last
  /// step is not done); `last_observation` is then the state it was cut at, encoded in the
  /// agent's format (what a learner bootstraps the rest of the episode from).
  bool truncated = false;
  ObservationFeatures last_observation;
};

/// How the loop picks each action.
enum class ActionChoice {
  kSample,      // a candidate drawn by its probability (else the No-Op), from the episode's rng
  kMostLikely,  // the most likely action (the first of equals)
};

struct ActingOptions {
  ActionChoice choice = ActionChoice::kSample;
  /// Each step's action, log-probability and value (PPO); without it a step keeps its reward
  /// and done flag only.
  bool record_actions = true;
  /// Each step's observation too (PPO in this process); compact rollouts leave it to the learner.
  bool keep_observations = true;
  /// Each episode's cheapest graph and the rewrites that led to it (the policy's searches).
  bool track_best = false;
  /// With track_best: an episode stops once this many steps in a row found no cheaper graph
  /// (0: episodes run to their end). A search's rollout stops wandering that way.
  int stop_after_stale = 0;
  /// Each episode stops after this many steps of this call even when its environment would go on
  /// (0: to the end): the episode is then `truncated` (EpisodeOutcome). A model-based agent's
  /// imagined rollouts are a few steps deep this way.
  int max_steps = 0;
  /// Two halves of the episodes: while one half's Score runs on a thread, the other half steps
  /// and encodes (distributed.double_buffer). The episodes played are the same.
  bool double_buffer = false;
};

/// One episode to play: its environment (reset by the loop), the graph it starts from, and the
/// generator its sampled actions draw from (one draw per step: an episode's actions do not
/// depend on which other episodes share its forward passes).
struct EpisodeSeat {
  Environment* env = nullptr;
  const Graph* graph = nullptr;
  std::mt19937_64* rng = nullptr;
  /// Above 0: the episode starts at `graph` as step `start_step` of an episode whose first graph
  /// cost `initial_cost_ms` (Environment::ResetAt): a state partway through a real episode.
  int start_step = 0;
  double initial_cost_ms = 0;
};

/// Plays one episode per seat to its end with `agent`. `profile` (may be null) accumulates where
/// the time went. Errors: no seats, the environments' and the agent's errors.
StatusOr<std::vector<EpisodeOutcome>> PlayEpisodes(Agent& agent,
                                                   const std::vector<EpisodeSeat>& seats,
                                                   const ActingOptions& options,
                                                   ActingProfile* profile = nullptr);

}  // namespace rewire

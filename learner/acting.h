#pragma once
// The acting loop: episodes of a policy played side by side, one batched forward pass per step
// over the episodes still running. Every caller acts through it: single-process training
// (LearnerRank::CollectEpisodes), env actors (ActingPolicy::RunEpisodes), and the trained
// policy's searches (Agent: rl rollouts, the guided search's rollout). LibTorch: include only
// from learner/*.cc and tests.

#include <random>
#include <vector>

#include "env/environment.h"
#include "env/search.h"
#include "learner/policy.h"
#include "learner/training.h"
#include "replay/rollout.h"

namespace rewire {

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
  /// Two halves of the episodes: while one half's forward pass runs on a thread, the other half
  /// steps and encodes (distributed.double_buffer). The episodes played are the same.
  bool double_buffer = false;
};

/// One episode to play: its environment (reset by the loop), the graph it starts from, and the
/// generator its sampled actions draw from (one draw per step: an episode's actions do not
/// depend on which other episodes share its forward passes).
struct EpisodeSeat {
  Environment* env = nullptr;
  const Graph* graph = nullptr;
  std::mt19937_64* rng = nullptr;
};

/// Plays one episode per seat to its end. `profile` (may be null) accumulates where the time
/// went. Errors: no seats, and the environments' errors.
StatusOr<std::vector<EpisodeOutcome>> PlayEpisodes(GnnPolicy& policy,
                                                   const std::vector<EpisodeSeat>& seats,
                                                   const ActingOptions& options,
                                                   ActingProfile* profile = nullptr);

}  // namespace rewire

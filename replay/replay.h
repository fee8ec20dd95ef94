#pragma once
// Compact rollouts (docs/cluster.md, "Compact rollouts"): the environment is deterministic given
// the model, its options, the rules and the actions, so an env actor can send an episode without
// its observations (actions, log-probabilities, values, rewards, costs and the rewrites taken)
// and the learner rebuilds the observations by replaying the actions. A replay that does not
// reproduce the episode's rewrites, rewards and costs is an error: the rollout was acted on
// another environment (or is corrupt) and must not be learned from.

#include "env/environment.h"
#include "env/features.h"
#include "graph/graph.h"
#include "graph/status.h"
#include "replay/rollout.h"

namespace rewire {

/// Fills every step's observation of `episode` (EncodeObservation in `format`) by replaying its
/// actions in `env` from `graph`, and checks the replay against the episode: each action within
/// the observation's actions, each step's rewrite (episode.rules), reward and done flag, the
/// number of steps and the final cost. Errors: DataLoss naming the first step that differs.
/// `env` is left after the episode's last step.
Status ReplayObservations(Environment& env, const Graph& graph, const ObservationFormat& format,
                          Episode& episode);

}  // namespace rewire

#pragma once
// Imagination: episodes a model-based agent (learner/world_model_agent.h) plays without
// measuring anything. They run on the real matcher and rewriter - every state is a real graph
// and every action set is the one the real environment would offer there - in an environment of
// their own whose reward is the dense one of env.cost (the analytic model unless a config says
// otherwise: no runtime is timed); the agent replaces those rewards with its model's. Each starts
// at a state of a real episode: the real episode's first actions replayed (a branch point up to
// `max_depth` steps in), then `horizon` steps of the agent's sampled actions. No LibTorch here.

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cost/cost_model.h"
#include "env/environment.h"
#include "graph/graph.h"
#include "graph/rules/rule.h"
#include "graph/status.h"
#include "learner/agent.h"
#include "replay/rollout.h"

namespace rewire {

/// One imagined episode and where it started.
struct ImaginedEpisode {
  /// Sampled actions with their observations, log-probabilities and values; rewards are
  /// env.cost's (the agent relabels them). `episode.model` is the real episode's model.
  Episode episode;
  /// The real episode's actions replayed from the model's input to reach the start state.
  std::vector<int32_t> prefix;
  /// Cut after `horizon` steps before the environment ended it: `last_observation` is the state
  /// it was cut at (the agent bootstraps the rest of the episode from its value).
  bool truncated = false;
  ObservationFeatures last_observation;
};

/// How many imagined episodes, from how deep, how long.
struct ImagineRequest {
  int episodes = 16;   // >= 1
  int max_depth = 48;  // branch points are drawn uniformly from the first max_depth+1 states
  int horizon = 8;     // steps per imagined episode (>= 1)
};

/// What imagination has done so far.
struct ImaginationCounts {
  int64_t episodes = 0;
  int64_t steps = 0;
  /// Branch points cut short: a real episode's action no longer replays to its recorded rewrite
  /// (another candidate list) - the branch starts where the replay diverged.
  int64_t diverged = 0;
};

class Imagination {
 public:
  virtual ~Imagination() = default;
  /// Plays request.episodes episodes of `agent` (sampled actions), each branching from a state
  /// of one of `from` (real episodes with their actions recorded, on models this imagination
  /// knows), or from a model's input when `from` is empty. Draws from `rng`. Errors: a request
  /// out of range, an episode on an unknown model, the environments' and the agent's errors.
  virtual StatusOr<std::vector<ImaginedEpisode>> Play(Agent& agent,
                                                      const std::vector<const Episode*>& from,
                                                      const ImagineRequest& request,
                                                      std::mt19937_64& rng) = 0;
  virtual const ImaginationCounts& counts() const = 0;
};

/// Imagination over real environments: `rules`, `cost` and the models' graphs (label, graph) must
/// outlive it; `options` are the run's horizon and candidate cap (its reward is made dense: an
/// imagined episode measures nothing).
class EnvImagination : public Imagination {
 public:
  EnvImagination(const std::vector<rules::Rule>& rules, CostModel& cost, EnvOptions options,
                 std::vector<std::pair<std::string, const Graph*>> models);
  StatusOr<std::vector<ImaginedEpisode>> Play(Agent& agent, const std::vector<const Episode*>& from,
                                              const ImagineRequest& request,
                                              std::mt19937_64& rng) override;
  const ImaginationCounts& counts() const override { return counts_; }

 private:
  /// The state `depth` steps into `episode` (its actions replayed on `env`), and the depth
  /// reached (less when the replay diverged).
  StatusOr<int> Branch(Environment& env, const Graph& input, const Episode& episode, int depth,
                       std::vector<int32_t>& prefix);
  const Graph* ModelGraph(const std::string& label) const;

  const std::vector<rules::Rule>& rules_;
  CostModel& cost_;
  EnvOptions options_;
  std::vector<std::pair<std::string, const Graph*>> models_;
  std::vector<std::unique_ptr<Environment>> envs_;  // one per episode played side by side
  ImaginationCounts counts_;
};

}  // namespace rewire

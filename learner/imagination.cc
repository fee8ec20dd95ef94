#include "learner/imagination.h"

#include <algorithm>

#include "learner/acting.h"

namespace rewire {

EnvImagination::EnvImagination(const std::vector<rules::Rule>& rules, CostModel& cost,
                               EnvOptions options,
                               std::vector<std::pair<std::string, const Graph*>> models)
    : rules_(rules), cost_(cost), options_(std::move(options)), models_(std::move(models)) {
  options_.reward = RewardMode::kDense;  // nothing imagined is measured
  options_.measure = nullptr;
}

const Graph* EnvImagination::ModelGraph(const std::string& label) const {
  for (const auto& [name, graph] : models_) {
    if (name == label) return graph;
  }
  return nullptr;
}

StatusOr<int> EnvImagination::Branch(Environment& env, const Graph& input, const Episode& episode,
                                     int depth, std::vector<int32_t>& prefix) {
  REWIRE_RETURN_IF_ERROR(env.Reset(input).status());
  size_t rewrite = 0;
  for (int k = 0; k < depth; ++k) {
    const RolloutStep& step = episode.steps[static_cast<size_t>(k)];
    const size_t action = static_cast<size_t>(step.action);
    // The recorded action must name the same rewrite here (the No-Op ends a real episode).
    const bool replays = !env.done() && action < env.candidates().size() &&
                         rewrite < episode.rules.size() &&
                         env.candidates()[action].name == episode.rules[rewrite];
    if (!replays) {
      ++counts_.diverged;
      return k;
    }
    REWIRE_RETURN_IF_ERROR(env.Step(action).status());
    prefix.push_back(step.action);
    ++rewrite;
  }
  return depth;
}

StatusOr<std::vector<ImaginedEpisode>> EnvImagination::Play(Agent& agent,
                                                            const std::vector<const Episode*>& from,
                                                            const ImagineRequest& request,
                                                            std::mt19937_64& rng) {
  if (request.episodes < 1 || request.horizon < 1 || request.max_depth < 0) {
    return InvalidArgument("imagination needs at least one episode of at least one step");
  }
  if (models_.empty()) return InvalidArgument("imagination has no models to play on");
  const size_t n = static_cast<size_t>(request.episodes);
  while (envs_.size() < n) {
    envs_.push_back(std::make_unique<Environment>(rules_, cost_, options_));
  }
  std::vector<ImaginedEpisode> out(n);
  std::vector<Graph> starts(n);
  std::vector<std::mt19937_64> rngs(n);
  std::vector<EpisodeSeat> seats(n);
  for (size_t i = 0; i < n; ++i) {
    rngs[i].seed(rng());
    Environment& env = *envs_[i];
    if (from.empty()) {
      const auto& [label, graph] = models_[rng() % models_.size()];
      out[i].episode.model = label;
      seats[i] = EpisodeSeat{&env, graph, &rngs[i]};
      continue;
    }
    const Episode& real = *from[rng() % from.size()];
    const Graph* input = ModelGraph(real.model);
    if (!input) {
      return InvalidArgument("cannot imagine from an episode on '" + real.model +
                             "': not a model of this run");
    }
    // Branch points: the real episode's states before each of its steps (the last one's state
    // is where it stopped), at most max_depth steps in.
    const int longest = std::min<int>(request.max_depth, static_cast<int>(real.steps.size()) - 1);
    const int depth =
        longest > 0 ? static_cast<int>(rng() % static_cast<uint64_t>(longest + 1)) : 0;
    REWIRE_ASSIGN_OR_RETURN(const int reached, Branch(env, *input, real, depth, out[i].prefix));
    out[i].episode.model = real.model;
    if (reached == 0) {
      seats[i] = EpisodeSeat{&env, input, &rngs[i]};
    } else {
      starts[i] = env.graph();
      seats[i] = EpisodeSeat{&env, &starts[i], &rngs[i], reached, env.initial_cost_ms()};
    }
  }
  ActingOptions acting;  // sampled, every step with its observation
  acting.max_steps = request.horizon;
  REWIRE_ASSIGN_OR_RETURN(std::vector<EpisodeOutcome> played, PlayEpisodes(agent, seats, acting));
  for (size_t i = 0; i < n; ++i) {
    const std::string model = out[i].episode.model;
    out[i].episode = std::move(played[i].episode);
    out[i].episode.model = model;
    out[i].truncated = played[i].truncated;
    out[i].last_observation = std::move(played[i].last_observation);
    ++counts_.episodes;
    counts_.steps += static_cast<int64_t>(out[i].episode.steps.size());
  }
  return out;
}

}  // namespace rewire

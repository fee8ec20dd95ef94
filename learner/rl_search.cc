#include "learner/rl_search.h"

#include <memory>

#include "graph/clock.h"
#include "learner/acting.h"

namespace rewire {

StatusOr<RolloutsResult> PlayRollouts(Agent& agent, const Graph& graph,
                                      const std::vector<rules::Rule>& rules, CostModel& cost,
                                      const AgentSearchOptions& options) {
  const auto start = Clock::now();
  EnvOptions eo;
  eo.horizon = options.horizon;
  eo.max_candidates = options.max_candidates;
  eo.actions = options.actions;
  Environment env(rules, cost, eo);
  std::mt19937_64 rng(options.seed);
  RolloutsResult out;
  SearchResult& best = out.best;
  int64_t steps = 0;
  ActingOptions acting;
  acting.record_actions = false;
  acting.track_best = true;
  for (int k = 0; k <= options.samples; ++k) {
    acting.choice = k > 0 ? ActionChoice::kSample : ActionChoice::kMostLikely;
    REWIRE_ASSIGN_OR_RETURN(std::vector<EpisodeOutcome> played,
                            PlayEpisodes(agent, {EpisodeSeat{&env, &graph, &rng}}, acting));
    EpisodeOutcome& e = played[0];
    steps += static_cast<int64_t>(e.episode.steps.size());
    if (k == 0) {
      best.initial_cost_ms = e.episode.initial_cost_ms;
      best.final_cost_ms = e.episode.best_cost_ms;
      best.best = std::move(e.best_graph);
      best.steps = std::move(e.best_steps);
      out.greedy_policy_cost_ms = e.episode.best_cost_ms;
      continue;
    }
    if (out.sampled_best_cost_ms == 0 || e.episode.best_cost_ms < out.sampled_best_cost_ms) {
      out.sampled_best_cost_ms = e.episode.best_cost_ms;
    }
    if (e.episode.best_cost_ms < best.final_cost_ms) {
      best.final_cost_ms = e.episode.best_cost_ms;
      best.best = std::move(e.best_graph);
      best.steps = std::move(e.best_steps);
    }
  }
  best.iterations = static_cast<int>(steps);
  best.reason = StopReason::kSaturated;
  best.seconds = SecondsSince(start);
  return out;
}

Status CheckPolicyOption(const std::string& search, const std::string& policy) {
  if (policy.empty()) {
    return InvalidArgument("the " + search +
                           " search needs a policy checkpoint (--policy, from `rewire train`)");
  }
  return Status::Ok();
}

void RlSearch::DeclareOptions(OptionSet& set) {
  set.Add("policy", &policy, "Policy checkpoint (from `rewire train`); required");
  set.Add("samples", &samples, "Sampled rollouts besides the greedy-policy one").AtLeast(0);
  set.Add("horizon", &horizon, "Steps per rollout at most").AtLeast(1);
}

Status RlSearch::Check(const SearchLimits&) const { return CheckPolicyOption("rl", policy); }

StatusOr<SearchResult> RlSearch::Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                                     CostModel& cost, const SearchLimits& limits) {
  REWIRE_RETURN_IF_ERROR(Check(limits));
  REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<Agent> agent, Agents().Load(policy));
  AgentSearchOptions ao;
  ao.horizon = horizon;
  ao.samples = samples;
  ao.max_candidates = limits.max_candidates;
  ao.seed = limits.seed;
  REWIRE_ASSIGN_OR_RETURN(RolloutsResult found, PlayRollouts(*agent, graph, rules, cost, ao));
  found.best.stats.Set("greedy_policy_cost_ms", found.greedy_policy_cost_ms);
  if (samples > 0) found.best.stats.Set("sampled_best_cost_ms", found.sampled_best_cost_ms);
  return std::move(found.best);
}

}  // namespace rewire

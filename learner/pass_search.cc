#include "learner/pass_search.h"

#include <memory>

#include "cost/operator_cost.h"
#include "learner/agent.h"
#include "learner/rl_search.h"

namespace rewire {

void PolicyPassSearch::DeclareOptions(OptionSet& set) {
  PassSearch::DeclareOptions(set);
  set.Add("policy", &policy,
          "A checkpoint trained on pass actions (env.actions = \"passes\"): the agent orders the "
          "passes (--passes then lists the passes it may choose; default: every pass)");
  set.Add("samples", &samples, "--policy: sampled orders besides the most likely one").AtLeast(0);
  set.Add("horizon", &horizon, "--policy: passes per order at most").AtLeast(1);
}

StatusOr<SearchResult> PolicyPassSearch::Run(const Graph& graph,
                                             const std::vector<rules::Rule>& rules, CostModel& cost,
                                             const SearchLimits& limits) {
  if (policy.empty()) return PassSearch::Run(graph, rules, cost, limits);
  REWIRE_RETURN_IF_ERROR(Check(limits));
  REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<Agent> agent, Agents().Load(policy));
  // The agent chooses among every pass unless --passes names them ("default" is the option's
  // default, which names a pipeline, not a choice).
  REWIRE_ASSIGN_OR_RETURN(std::shared_ptr<PassActions> actions,
                          MakePassActions(rules, cost, passes == "default" ? "" : passes));
  AgentSearchOptions ao;
  ao.horizon = horizon;
  ao.samples = samples;
  ao.max_candidates = limits.max_candidates;
  ao.seed = limits.seed;
  ao.actions = actions;
  REWIRE_ASSIGN_OR_RETURN(RolloutsResult found, PlayRollouts(*agent, graph, rules, cost, ao));
  SearchResult& r = found.best;
  std::string order;
  for (const SearchStep& s : r.steps) order += (order.empty() ? "" : ",") + s.rule;
  r.path_note = "a step is a whole pass: its rewrites are not recorded one by one";
  r.stats.Set("order", order.empty() ? std::string("(none: the agent stops at once)") : order);
  r.stats.Set("greedy_policy_cost_ms", found.greedy_policy_cost_ms);
  if (samples > 0) r.stats.Set("sampled_best_cost_ms", found.sampled_best_cost_ms);
  r.stats.Set("operators_before", static_cast<int64_t>(RunningOperators(graph)));
  r.stats.Set("operators_after", static_cast<int64_t>(RunningOperators(r.best)));
  r.stats.Set("pass_runs", actions->cache().runs());
  r.stats.Set("pass_cache_hits", actions->cache().hits());
  return std::move(r);
}

}  // namespace rewire

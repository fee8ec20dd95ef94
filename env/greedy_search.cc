#include "env/greedy_search.h"

#include "env/explore.h"

namespace rewire {

void GreedySearch::DeclareOptions(OptionSet& set) { ranking.Declare(set, /*with_top=*/true); }

Status GreedySearch::Check(const SearchLimits& limits) const {
  REWIRE_RETURN_IF_ERROR(CheckExploreLimits(limits));
  return ranking.pruning() ? ranking.Check() : Status::Ok();
}

StatusOr<SearchResult> GreedySearch::Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                                         CostModel& cost, const SearchLimits& limits) {
  REWIRE_RETURN_IF_ERROR(Check(limits));
  std::unique_ptr<CandidateRanker> ranker;
  if (ranking.pruning()) {
    REWIRE_ASSIGN_OR_RETURN(ranker, ranking.Make(limits.seed));
  }
  Explorer x(rules, limits);
  x.RestrictRules(rules_enabled);
  REWIRE_ASSIGN_OR_RETURN(ExploredState s, x.Start(graph, cost));
  for (;;) {
    if (x.OutOfBudget()) return x.Finish(StopReason::kBudget);
    if (x.OutOfTime()) return x.Finish(StopReason::kTimeLimit);
    StatusOr<std::vector<ExploredChild>> costed =
        ranker ? x.RankedChildren(s, *ranker, static_cast<size_t>(ranking.top)) : x.Children(s);
    if (!costed.ok()) return x.StopOn(costed.status());
    std::vector<ExploredChild>& children = *costed;
    ++x.result.iterations;
    int best = -1;
    for (size_t i = 0; i < children.size(); ++i) {
      if (children[i].cost_ms < s.table.total_ms() - 1e-12 &&
          (best < 0 || children[i].cost_ms < children[best].cost_ms)) {
        best = static_cast<int>(i);
      }
    }
    if (best < 0) return x.Finish(StopReason::kSaturated);
    REWIRE_ASSIGN_OR_RETURN(s, x.Enter(s, std::move(children[best])));
    x.Keep(s);
    x.Progress(0);
  }
}

}  // namespace rewire

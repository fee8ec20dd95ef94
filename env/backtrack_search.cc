#include "env/backtrack_search.h"

#include <algorithm>
#include <memory>
#include <set>
#include <unordered_set>

#include "env/explore.h"

namespace rewire {

void BacktrackSearch::DeclareOptions(OptionSet& set) {
  set.Add("alpha", &options.alpha, "Queue candidates costing less than alpha x the best cost")
      .AtLeast(1);
  set.Add("max-growth", &options.max_growth,
          "Skip graphs running more than this x the input's operators");
  set.Add("max-queue", &options.max_queue, "Graphs kept in the queue at most");
  ranking.Declare(set, /*with_top=*/true);
}

Status BacktrackSearch::Check(const SearchLimits& limits) const {
  REWIRE_RETURN_IF_ERROR(CheckExploreLimits(limits));
  if (options.alpha < 1.0) return InvalidArgument("alpha must be at least 1");
  return ranking.pruning() ? ranking.Check() : Status::Ok();
}

StatusOr<SearchResult> BacktrackSearch::Run(const Graph& graph,
                                            const std::vector<rules::Rule>& rules, CostModel& cost,
                                            const SearchLimits& limits) {
  REWIRE_RETURN_IF_ERROR(Check(limits));
  std::unique_ptr<CandidateRanker> ranker;
  if (ranking.pruning()) {
    REWIRE_ASSIGN_OR_RETURN(ranker, ranking.Make(limits.seed));
  }
  Explorer x(rules, limits);
  REWIRE_ASSIGN_OR_RETURN(ExploredState initial, x.Start(graph, cost));
  // Ordered by cost, then insertion: begin() is popped next, the costliest are dropped when the
  // queue is over max_queue.
  struct Entry {
    double cost;
    uint64_t order;
    std::shared_ptr<ExploredState> state;
    bool operator<(const Entry& o) const {
      return cost != o.cost ? cost < o.cost : order < o.order;
    }
  };
  const int max_ops = static_cast<int>(options.max_growth * initial.active_ops);
  std::set<Entry> queue;
  std::unordered_set<uint64_t> seen{initial.graph.Hash()};
  uint64_t order = 0;
  int64_t dropped = 0;
  queue.insert(
      {initial.table.total_ms(), order++, std::make_shared<ExploredState>(std::move(initial))});
  StopReason reason = StopReason::kSaturated;
  while (!queue.empty()) {
    if (x.OutOfBudget()) {
      reason = StopReason::kBudget;
      break;
    }
    if (x.OutOfTime()) {
      reason = StopReason::kTimeLimit;
      break;
    }
    const std::shared_ptr<ExploredState> s = queue.begin()->state;
    queue.erase(queue.begin());
    ++x.result.iterations;
    StatusOr<std::vector<ExploredChild>> costed =
        ranker ? x.RankedChildren(*s, *ranker, static_cast<size_t>(ranking.top)) : x.Children(*s);
    if (!costed.ok()) {
      x.result.stats.Set("dropped", dropped);
      return x.StopOn(costed.status());
    }
    std::vector<ExploredChild>& children = *costed;
    for (ExploredChild& c : children) {
      if (c.cost_ms >= options.alpha * x.result.final_cost_ms) continue;
      if (c.active_ops > max_ops) continue;
      if (!seen.insert(c.graph.Hash()).second) continue;
      REWIRE_ASSIGN_OR_RETURN(ExploredState next, x.Enter(*s, std::move(c)));
      x.Keep(next);
      queue.insert(
          {next.table.total_ms(), order++, std::make_shared<ExploredState>(std::move(next))});
      if (queue.size() > std::max<size_t>(options.max_queue, 1)) {
        queue.erase(std::prev(queue.end()));
        ++dropped;
      }
    }
    x.Progress(queue.size());
  }
  x.result.stats.Set("dropped", dropped);
  return x.Finish(reason);
}

}  // namespace rewire

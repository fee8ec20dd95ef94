#include "env/advantage_search.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <unordered_set>

#include "env/explore.h"

namespace rewire {

void AdvantageSearch::DeclareOptions(OptionSet& set) {
  ranking.Declare(set, /*with_top=*/false);
  set.Add("top-fraction", &options.top_fraction,
          "Draw each candidate to cost among this fraction of the untried ones, best-ranked first "
          "(at least one)")
      .Above(0);
}

Status AdvantageSearch::Check(const SearchLimits& limits) const {
  REWIRE_RETURN_IF_ERROR(CheckExploreLimits(limits));
  if (!(options.top_fraction > 0 && options.top_fraction <= 1)) {
    return InvalidArgument("--top-fraction must be in (0, 1], got " +
                           std::to_string(options.top_fraction));
  }
  return ranking.Check();
}

StatusOr<SearchResult> AdvantageSearch::Run(const Graph& graph,
                                            const std::vector<rules::Rule>& rules, CostModel& cost,
                                            const SearchLimits& limits) {
  REWIRE_RETURN_IF_ERROR(Check(limits));
  REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<CandidateRanker> ranker, ranking.Make(limits.seed));
  // The draws within the pool are the search's own, apart from a uniform ranker's scores.
  std::mt19937_64 rng(limits.seed ^ 0x9e3779b97f4a7c15ULL);
  Explorer x(rules, limits);
  REWIRE_ASSIGN_OR_RETURN(ExploredState s, x.Start(graph, cost));
  REWIRE_ASSIGN_OR_RETURN(RankedCandidates ranked, x.Rank(s, *ranker));
  std::vector<size_t> order = TopIndices(ranked.scores, ranked.scores.size());  // best first
  std::unordered_set<size_t> tried;
  int64_t moves = 0, rejected = 0;
  auto set_stats = [&] {
    x.result.stats.Set("moves", moves);
    x.result.stats.Set("rejected", rejected);
  };
  auto finish = [&](StopReason reason) {
    set_stats();
    return x.Finish(reason);
  };
  for (;;) {
    if (x.OutOfBudget()) return finish(StopReason::kBudget);
    if (x.OutOfTime()) return finish(StopReason::kTimeLimit);
    std::vector<size_t> untried;
    for (size_t i : order) {
      if (!tried.count(i)) untried.push_back(i);
    }
    if (untried.empty()) return finish(StopReason::kSaturated);
    const size_t pool = std::max<size_t>(
        1, static_cast<size_t>(
               std::ceil(options.top_fraction * static_cast<double>(untried.size()) - 1e-9)));
    const size_t pick = untried[static_cast<size_t>(rng() % pool)];
    ++x.result.iterations;
    StatusOr<ExploredChild> child = x.Cost(s, ranked, pick);
    if (!child.ok()) {
      set_stats();
      return x.StopOn(child.status());
    }
    if (child->cost_ms < s.table.total_ms() - 1e-12) {
      REWIRE_ASSIGN_OR_RETURN(s, x.Enter(s, std::move(*child)));
      x.Keep(s);
      ++moves;
      tried.clear();
      REWIRE_ASSIGN_OR_RETURN(ranked, x.Rank(s, *ranker));
      order = TopIndices(ranked.scores, ranked.scores.size());
    } else {
      tried.insert(pick);
      ++rejected;
    }
    x.Progress(untried.size() - 1);
  }
}

}  // namespace rewire

#include "env/random_search.h"

#include <random>

#include "env/explore.h"

namespace rewire {

void RandomSearch::DeclareOptions(OptionSet& set) {
  set.Add("walk-length", &options.walk_length,
          "Rewrites per walk before starting again from the input")
      .AtLeast(1);
}

Status RandomSearch::Check(const SearchLimits& limits) const {
  REWIRE_RETURN_IF_ERROR(CheckExploreLimits(limits));
  if (options.walk_length < 1) return InvalidArgument("--walk-length must be at least 1");
  return Status::Ok();
}

StatusOr<SearchResult> RandomSearch::Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                                         CostModel& cost, const SearchLimits& limits) {
  REWIRE_RETURN_IF_ERROR(Check(limits));
  Explorer x(rules, limits);
  REWIRE_ASSIGN_OR_RETURN(const ExploredState initial, x.Start(graph, cost));
  std::mt19937_64 rng(limits.seed);
  ExploredState s = initial;
  int walk = 0;
  for (;;) {
    if (x.OutOfBudget()) return x.Finish(StopReason::kBudget);
    if (x.OutOfTime()) return x.Finish(StopReason::kTimeLimit);
    if (walk == options.walk_length) {
      s = initial;
      walk = 0;
    }
    const rules::CandidateSet set = x.Candidates(s);
    ++x.result.iterations;
    if (set.candidates.empty()) {
      if (walk == 0) return x.Finish(StopReason::kSaturated);  // the input has no candidate
      walk = options.walk_length;
      continue;
    }
    const rules::Candidate& c = set.candidates[rng() % set.candidates.size()];
    StatusOr<ExploredChild> child = x.Apply(s, c);
    if (!child.ok()) return x.StopOn(child.status());
    REWIRE_ASSIGN_OR_RETURN(s, x.Enter(s, std::move(*child)));
    x.Keep(s);
    ++walk;
    x.Progress(0);
  }
}

}  // namespace rewire

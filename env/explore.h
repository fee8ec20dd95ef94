#pragma once
// The machinery of the searches that walk explicit graphs (greedy, backtrack, random): a state
// is a graph with its cost table and the rewrites that led to it; its children are its
// candidates applied to copies and costed from their diffs in O(diff); the explorer keeps the
// cheapest state seen as the search's result.

#include <vector>

#include "cost/cost_model.h"
#include "env/candidate_ranker.h"
#include "env/search.h"
#include "graph/clock.h"
#include "graph/graph.h"
#include "graph/rules/candidates.h"
#include "graph/rules/rule.h"

namespace rewire {

/// One explored graph: the graph, its cost table and the rewrites that led to it.
struct ExploredState {
  Graph graph;
  CostTable table;
  std::vector<SearchStep> steps;
  int active_ops = 0;  // operators that run: not leaves, not weight-only (those are folded)
};

/// A candidate applied to a copy of a state's graph and costed from its diff.
struct ExploredChild {
  Graph graph;
  GraphDiff diff;
  double cost_ms = 0;
  rules::Match match;
  int active_ops = 0;
};

/// A state's candidates applied (not costed) and ranked.
struct RankedCandidates {
  rules::CandidateSet set;
  std::vector<EnvCandidate> applied;  // per candidate of `set`, ApplyUncosted
  std::vector<double> scores;         // the ranker's, per candidate
};

/// The explored graphs of one search run and its result so far. Besides the search's own, the
/// result's stats get "evaluations_to_best" (candidates costed when the best graph was found) and,
/// where a ranker ran, "ranked" (candidates scored) and "rank_seconds".
class Explorer {
 public:
  Explorer(const std::vector<rules::Rule>& rules, const SearchLimits& limits);

  /// The input's state (its cost table built), recorded as the best graph so far. Errors: the
  /// cost model cannot cost an operator of `graph`.
  StatusOr<ExploredState> Start(const Graph& graph, CostModel& cost);

  /// Matches only the rules `enabled` marks (per rule; empty: every rule).
  void RestrictRules(std::vector<uint8_t> enabled) { rules_enabled_ = std::move(enabled); }

  /// The candidates of `s` (at most limits.max_candidates).
  rules::CandidateSet Candidates(const ExploredState& s) const;
  /// Candidate `c` of `s` applied to a copy of its graph and costed (counted as evaluated).
  StatusOr<ExploredChild> Apply(const ExploredState& s, const rules::Candidate& c);
  /// Every candidate of `s`, applied and costed.
  StatusOr<std::vector<ExploredChild>> Children(const ExploredState& s);
  /// Every candidate of `s` applied and scored by `ranker`; none costed.
  StatusOr<RankedCandidates> Rank(const ExploredState& s, CandidateRanker& ranker);
  /// Candidate `i` of `ranked` (a ranking of `s`) costed (counted as evaluated).
  StatusOr<ExploredChild> Cost(const ExploredState& s, const RankedCandidates& ranked, size_t i);
  /// The `top` candidates of `s` that `ranker` scores highest, applied and costed, best-ranked
  /// first; the others are not costed.
  StatusOr<std::vector<ExploredChild>> RankedChildren(const ExploredState& s,
                                                      CandidateRanker& ranker, size_t top);
  /// The state `child` leads to from `parent`.
  StatusOr<ExploredState> Enter(const ExploredState& parent, ExploredChild child) const;
  /// Records `s` as the result when it is the cheapest graph so far.
  void Keep(const ExploredState& s);

  bool OutOfBudget() const { return result.iterations >= limits_.budget; }
  bool OutOfTime() const;
  void Progress(size_t queue_size) const;
  /// Ends the run: the reason and the seconds since construction.
  SearchResult Finish(StopReason reason);
  /// Ends the run on `error` from costing a graph: a spent measurement budget
  /// (ResourceExhausted) ends it as data, with the best graph so far (kMeasureBudget); any other
  /// error is returned.
  StatusOr<SearchResult> StopOn(const Status& error);

  SearchResult result;

 private:
  /// `child` (a candidate of `s` applied) costed from its diff, counted as evaluated.
  StatusOr<ExploredChild> Evaluate(const ExploredState& s, ExploredChild child);

  const std::vector<rules::Rule>& rules_;
  const SearchLimits& limits_;
  Clock::time_point start_;
  int64_t evaluations_to_best_ = 0;
  int64_t ranked_ = 0;
  double rank_seconds_ = 0;
  std::vector<uint8_t> rules_enabled_;
};

/// Checks the limits the explicit-graph searches share: a budget of at least 1 graph.
Status CheckExploreLimits(const SearchLimits& limits);

}  // namespace rewire

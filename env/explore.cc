#include "env/explore.h"

#include <unordered_map>

namespace rewire {
namespace {

bool Runs(const Node& n, bool weight_only) { return !n.IsLeaf() && !weight_only; }

int ActiveOps(const Graph& g, const CostTable& table) {
  int n = 0;
  for (NodeId id : g.NodeIds()) n += Runs(g.node(id), table.weight_only(id));
  return n;
}

/// Operators that run in `child` (weight-only status of added nodes follows their producers),
/// from the parent's count in O(diff).
int ChildActiveOps(const ExploredState& parent, const ExploredChild& child) {
  int n = parent.active_ops;
  for (NodeId id : child.diff.removed) {
    if (parent.table.Holds(id) && !parent.table.weight_only(id)) {
      // Removed nodes are gone from child.graph; the parent's graph still has them.
      n -= !parent.graph.node(id).IsLeaf();
    }
  }
  std::unordered_map<NodeId, bool> added_wo;
  for (NodeId id : child.diff.added) {
    const Node& node = child.graph.node(id);
    const bool wo = WeightOnlyFromInputs(node, [&](NodeId p) {
      auto it = added_wo.find(p);
      return it != added_wo.end() ? it->second : parent.table.weight_only(p);
    });
    added_wo[id] = wo;
    n += Runs(node, wo);
  }
  return n;
}

}  // namespace

Status CheckExploreLimits(const SearchLimits& limits) {
  if (limits.budget < 1) {
    return InvalidArgument("the search budget must be at least 1, got " +
                           std::to_string(limits.budget));
  }
  return Status::Ok();
}

Explorer::Explorer(const std::vector<rules::Rule>& rules, const SearchLimits& limits)
    : rules_(rules), limits_(limits), start_(Clock::now()) {}

StatusOr<ExploredState> Explorer::Start(const Graph& graph, CostModel& cost) {
  REWIRE_ASSIGN_OR_RETURN(CostTable table, CostTable::Build(cost, graph));
  result.best = graph;
  result.initial_cost_ms = result.final_cost_ms = table.total_ms();
  const int active = ActiveOps(graph, table);
  return ExploredState{graph, std::move(table), {}, active};
}

bool Explorer::OutOfTime() const {
  return limits_.time_limit_s > 0 && SecondsSince(start_) > limits_.time_limit_s;
}

rules::CandidateSet Explorer::Candidates(const ExploredState& s) const {
  rules::CandidateOptions opts;
  opts.max_candidates = limits_.max_candidates;
  opts.rules_enabled = rules_enabled_;
  return rules::EnumerateCandidates(s.graph, rules_, opts);
}

StatusOr<ExploredChild> Explorer::Apply(const ExploredState& s, const rules::Candidate& c) {
  ExploredChild child{s.graph, {}, 0, c.match};
  REWIRE_ASSIGN_OR_RETURN(child.diff,
                          rules::ApplyMatch(child.graph, rules_[c.match.rule], c.match));
  return Evaluate(s, std::move(child));
}

StatusOr<ExploredChild> Explorer::Evaluate(const ExploredState& s, ExploredChild child) {
  REWIRE_ASSIGN_OR_RETURN(child.cost_ms, s.table.CostAfterMs(child.graph, child.diff));
  child.active_ops = ChildActiveOps(s, child);
  ++result.candidates_evaluated;
  return child;
}

StatusOr<std::vector<ExploredChild>> Explorer::Children(const ExploredState& s) {
  const rules::CandidateSet set = Candidates(s);
  std::vector<ExploredChild> out;
  out.reserve(set.candidates.size());
  for (const auto& c : set.candidates) {
    REWIRE_ASSIGN_OR_RETURN(ExploredChild child, Apply(s, c));
    out.push_back(std::move(child));
  }
  return out;
}

StatusOr<RankedCandidates> Explorer::Rank(const ExploredState& s, CandidateRanker& ranker) {
  const auto t0 = Clock::now();
  RankedCandidates r{Candidates(s), {}, {}};
  REWIRE_ASSIGN_OR_RETURN(r.applied, ApplyUncosted(s.graph, s.table, rules_, r.set));
  REWIRE_ASSIGN_OR_RETURN(
      r.scores, ranker.Score({s.graph, s.table, result.initial_cost_ms, r.applied, rules_}));
  if (r.scores.size() != r.applied.size()) {
    return Internal("ranker " + ranker.Name() + " gave " + std::to_string(r.scores.size()) +
                    " scores for " + std::to_string(r.applied.size()) + " candidates");
  }
  ranked_ += static_cast<int64_t>(r.applied.size());
  rank_seconds_ += SecondsSince(t0);
  return r;
}

StatusOr<ExploredChild> Explorer::Cost(const ExploredState& s, const RankedCandidates& ranked,
                                       size_t i) {
  const EnvCandidate& e = ranked.applied[i];
  return Evaluate(s, ExploredChild{e.result, e.diff, 0, ranked.set.candidates[i].match});
}

StatusOr<std::vector<ExploredChild>> Explorer::RankedChildren(const ExploredState& s,
                                                              CandidateRanker& ranker, size_t top) {
  REWIRE_ASSIGN_OR_RETURN(const RankedCandidates ranked, Rank(s, ranker));
  std::vector<ExploredChild> out;
  for (size_t i : TopIndices(ranked.scores, top)) {
    REWIRE_ASSIGN_OR_RETURN(ExploredChild child, Cost(s, ranked, i));
    out.push_back(std::move(child));
  }
  return out;
}

StatusOr<ExploredState> Explorer::Enter(const ExploredState& parent, ExploredChild child) const {
  ExploredState next{std::move(child.graph), parent.table, parent.steps, child.active_ops};
  REWIRE_RETURN_IF_ERROR(next.table.Apply(next.graph, child.diff));
  next.steps.push_back({rules_[child.match.rule].name, child.cost_ms, std::move(child.match),
                        result.candidates_evaluated});
  return next;
}

void Explorer::Keep(const ExploredState& s) {
  if (s.table.total_ms() < result.final_cost_ms) {
    result.final_cost_ms = s.table.total_ms();
    evaluations_to_best_ = result.candidates_evaluated;
    result.best = s.graph;
    result.steps = s.steps;
  }
}

void Explorer::Progress(size_t queue_size) const {
  if (limits_.progress) {
    limits_.progress({result.iterations, limits_.budget, result.final_cost_ms,
                      result.initial_cost_ms, queue_size});
  }
}

StatusOr<SearchResult> Explorer::StopOn(const Status& error) {
  if (error.code() != StatusCode::kResourceExhausted) return error;
  return Finish(StopReason::kMeasureBudget);
}

SearchResult Explorer::Finish(StopReason reason) {
  result.reason = reason;
  result.seconds = SecondsSince(start_);
  result.stats.Set("evaluations_to_best", evaluations_to_best_);
  if (ranked_ > 0) {
    result.stats.Set("ranked", ranked_);
    result.stats.Set("rank_seconds", rank_seconds_);
  }
  return std::move(result);
}

}  // namespace rewire

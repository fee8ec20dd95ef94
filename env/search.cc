#include "env/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <random>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "env/eqsat/eqsat.h"
#include "graph/rules/candidates.h"

namespace rewire {
namespace {

using Clock = std::chrono::steady_clock;

/// One explored graph: the graph, its cost table and the rewrites that led to it.
struct State {
  Graph graph;
  CostTable table;
  std::vector<SearchStep> steps;
  int active_ops = 0;  // operators that run: not leaves, not weight-only (those are folded)
};

bool Runs(const Node& n, bool weight_only) { return !n.IsLeaf() && !weight_only; }

int ActiveOps(const Graph& g, const CostTable& table) {
  int n = 0;
  for (NodeId id : g.NodeIds()) n += Runs(g.node(id), table.weight_only(id));
  return n;
}

/// A candidate applied to a copy of the state's graph and costed from its diff.
struct Child {
  Graph graph;
  GraphDiff diff;
  double cost_ms;
  rules::Match match;
  int active_ops = 0;
};

/// Operators that run in `child` (weight-only status of added nodes follows their producers),
/// from the parent's count in O(diff).
int ChildActiveOps(const State& parent, const Child& child) {
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

class Searcher {
 public:
  Searcher(const std::vector<rules::Rule>& rules, CostModel& cost, const SearchOptions& o)
      : rules_(rules), cost_(cost), o_(o), start_(Clock::now()) {}

  SearchResult result;

  bool OutOfTime() const {
    return o_.time_limit_s > 0 &&
           std::chrono::duration<double>(Clock::now() - start_).count() > o_.time_limit_s;
  }

  /// Every unique candidate of `s`, applied and costed in O(diff) each.
  StatusOr<std::vector<Child>> Children(const State& s) {
    rules::CandidateOptions opts;
    opts.max_candidates = o_.max_candidates;
    const rules::CandidateSet set = rules::EnumerateCandidates(s.graph, rules_, opts);
    std::vector<Child> out;
    out.reserve(set.candidates.size());
    for (const auto& c : set.candidates) {
      Child child{s.graph, {}, 0, c.match};
      REWIRE_ASSIGN_OR_RETURN(child.diff,
                              rules::ApplyMatch(child.graph, rules_[c.match.rule], c.match));
      REWIRE_ASSIGN_OR_RETURN(child.cost_ms, s.table.CostAfterMs(child.graph, child.diff));
      child.active_ops = ChildActiveOps(s, child);
      ++result.candidates_evaluated;
      out.push_back(std::move(child));
    }
    return out;
  }

  StatusOr<State> Enter(const State& parent, Child child) {
    State next{std::move(child.graph), parent.table, parent.steps, child.active_ops};
    REWIRE_RETURN_IF_ERROR(next.table.Apply(next.graph, child.diff));
    next.steps.push_back({rules_[child.match.rule].name, child.cost_ms, std::move(child.match)});
    return next;
  }

  void Progress(int iteration, double best, size_t queue) {
    if (o_.progress) o_.progress({iteration, o_.budget, best, result.initial_cost_ms, queue});
  }

  void Keep(const State& s) {
    if (s.table.total_ms() < result.final_cost_ms) {
      result.final_cost_ms = s.table.total_ms();
      result.best = s.graph;
      result.steps = s.steps;
    }
  }

  Status Greedy(State s) {
    for (;;) {
      if (result.iterations >= o_.budget) return Stop(StopReason::kBudget);
      if (OutOfTime()) return Stop(StopReason::kTimeLimit);
      REWIRE_ASSIGN_OR_RETURN(std::vector<Child> children, Children(s));
      ++result.iterations;
      int best = -1;
      for (size_t i = 0; i < children.size(); ++i) {
        if (children[i].cost_ms < s.table.total_ms() - 1e-12 &&
            (best < 0 || children[i].cost_ms < children[best].cost_ms)) {
          best = static_cast<int>(i);
        }
      }
      if (best < 0) return Stop(StopReason::kSaturated);
      REWIRE_ASSIGN_OR_RETURN(s, Enter(s, std::move(children[best])));
      Keep(s);
      Progress(result.iterations, result.final_cost_ms, 0);
    }
  }

  Status Backtrack(State initial) {
    // Ordered by cost, then insertion: begin() is popped next, the costliest are dropped when
    // the queue is over max_queue.
    struct Entry {
      double cost;
      uint64_t order;
      std::shared_ptr<State> state;
      bool operator<(const Entry& o) const {
        return cost != o.cost ? cost < o.cost : order < o.order;
      }
    };
    const int max_ops = static_cast<int>(o_.max_growth * initial.active_ops);
    std::set<Entry> queue;
    std::unordered_set<uint64_t> seen{initial.graph.Hash()};
    uint64_t order = 0;
    queue.insert({initial.table.total_ms(), order++, std::make_shared<State>(std::move(initial))});
    while (!queue.empty()) {
      if (result.iterations >= o_.budget) return Stop(StopReason::kBudget);
      if (OutOfTime()) return Stop(StopReason::kTimeLimit);
      const std::shared_ptr<State> s = queue.begin()->state;
      queue.erase(queue.begin());
      ++result.iterations;
      REWIRE_ASSIGN_OR_RETURN(std::vector<Child> children, Children(*s));
      for (Child& c : children) {
        if (c.cost_ms >= o_.alpha * result.final_cost_ms) continue;
        if (c.active_ops > max_ops) continue;
        if (!seen.insert(c.graph.Hash()).second) continue;
        REWIRE_ASSIGN_OR_RETURN(State next, Enter(*s, std::move(c)));
        Keep(next);
        queue.insert({next.table.total_ms(), order++, std::make_shared<State>(std::move(next))});
        if (queue.size() > std::max<size_t>(o_.max_queue, 1)) {
          queue.erase(std::prev(queue.end()));
          ++result.dropped;
        }
      }
      Progress(result.iterations, result.final_cost_ms, queue.size());
    }
    return Stop(StopReason::kSaturated);
  }

  Status Random(const State& initial) {
    std::mt19937_64 rng(o_.seed);
    State s = initial;
    int walk = 0;
    for (;;) {
      if (result.iterations >= o_.budget) return Stop(StopReason::kBudget);
      if (OutOfTime()) return Stop(StopReason::kTimeLimit);
      if (walk == o_.walk_length) {
        s = initial;
        walk = 0;
      }
      rules::CandidateOptions opts;
      opts.max_candidates = o_.max_candidates;
      const rules::CandidateSet set = rules::EnumerateCandidates(s.graph, rules_, opts);
      ++result.iterations;
      if (set.candidates.empty()) {
        if (walk == 0) return Stop(StopReason::kSaturated);  // the input graph has no candidate
        walk = o_.walk_length;
        continue;
      }
      const auto& c = set.candidates[rng() % set.candidates.size()];
      Child child{s.graph, {}, 0, c.match};
      REWIRE_ASSIGN_OR_RETURN(child.diff,
                              rules::ApplyMatch(child.graph, rules_[c.match.rule], c.match));
      REWIRE_ASSIGN_OR_RETURN(child.cost_ms, s.table.CostAfterMs(child.graph, child.diff));
      child.active_ops = ChildActiveOps(s, child);
      ++result.candidates_evaluated;
      REWIRE_ASSIGN_OR_RETURN(s, Enter(s, std::move(child)));
      Keep(s);
      ++walk;
      Progress(result.iterations, result.final_cost_ms, 0);
    }
  }

  Status Stop(StopReason r) {
    result.reason = r;
    return Status::Ok();
  }

 private:
  const std::vector<rules::Rule>& rules_;
  CostModel& cost_;
  const SearchOptions& o_;
  Clock::time_point start_;
};

}  // namespace

const char* StopReasonName(StopReason r) {
  switch (r) {
    case StopReason::kSaturated:
      return "saturated";
    case StopReason::kBudget:
      return "budget";
    case StopReason::kTimeLimit:
      return "time limit";
    case StopReason::kNodeLimit:
      return "node limit";
    case StopReason::kIterationLimit:
      return "iteration limit";
  }
  return "?";
}

StatusOr<std::vector<Graph>> ReplaySteps(const Graph& input, const std::vector<rules::Rule>& rules,
                                         const std::vector<SearchStep>& steps,
                                         const std::vector<size_t>& prefixes) {
  size_t longest = 0;
  for (size_t k : prefixes) {
    if (k > steps.size()) {
      return InvalidArgument("cannot replay " + std::to_string(k) + " rewrites of a path of " +
                             std::to_string(steps.size()));
    }
    longest = std::max(longest, k);
  }
  std::vector<Graph> out(prefixes.size());
  Graph g = input;
  for (size_t done = 0;; ++done) {
    for (size_t i = 0; i < prefixes.size(); ++i) {
      if (prefixes[i] == done) out[i] = g;
    }
    if (done == longest) break;
    const rules::Match& m = steps[done].match;
    if (m.rule < 0 || static_cast<size_t>(m.rule) >= rules.size()) {
      return InvalidArgument("rewrite " + std::to_string(done + 1) + " (" + steps[done].rule +
                             ") recorded no match to replay");
    }
    REWIRE_RETURN_IF_ERROR(rules::ApplyMatch(g, rules[m.rule], m)
                               .status()
                               .WithContext("replaying rewrite " + std::to_string(done + 1) + " (" +
                                            steps[done].rule + ")"));
  }
  return out;
}

std::vector<size_t> SpreadPrefixes(size_t n, int count) {
  std::vector<size_t> out;
  for (int j = 0; j < count && n > 0; ++j) {
    const size_t k = static_cast<size_t>(
        std::llround(static_cast<double>(n) * (count - j) / static_cast<double>(count)));
    if (k >= 1 && std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  }
  return out;
}

const std::vector<std::string>& SearchAlgorithms() {
  static const std::vector<std::string> names = {"greedy", "backtrack", "random", "eqsat",
                                                 "mcts-eqsat"};
  return names;
}

StatusOr<SearchResult> RunSearch(const Graph& graph, const std::vector<rules::Rule>& rules,
                                 CostModel& cost, const SearchOptions& options) {
  const auto& names = SearchAlgorithms();
  if (std::find(names.begin(), names.end(), options.algorithm) == names.end()) {
    return InvalidArgument("unknown search '" + options.algorithm +
                           "' (known: greedy, backtrack, random, eqsat, mcts-eqsat)");
  }
  if (options.algorithm == "eqsat" || options.algorithm == "mcts-eqsat") {
    return eqsat::RunEqsatSearch(graph, rules, cost, options);
  }
  if (options.budget < 1)
    return InvalidArgument("the search budget must be at least 1, got " +
                           std::to_string(options.budget));
  if (options.alpha < 1.0) return InvalidArgument("alpha must be at least 1");
  const auto start = Clock::now();
  REWIRE_ASSIGN_OR_RETURN(CostTable table, CostTable::Build(cost, graph));
  Searcher s(rules, cost, options);
  s.result.best = graph;
  s.result.initial_cost_ms = s.result.final_cost_ms = table.total_ms();
  const int active = ActiveOps(graph, table);
  State initial{graph, std::move(table), {}, active};
  Status st;
  if (options.algorithm == "greedy")
    st = s.Greedy(std::move(initial));
  else if (options.algorithm == "backtrack")
    st = s.Backtrack(std::move(initial));
  else
    st = s.Random(initial);
  REWIRE_RETURN_IF_ERROR(st);
  s.result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return std::move(s.result);
}

}  // namespace rewire

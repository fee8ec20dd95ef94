#pragma once
// A search over rewrites: from an input graph, with the rules and a cost model, find a cheaper
// equivalent graph. Every search is a class behind one interface (Search), in a file of its own
// with its own options, and the optimise pipeline runs it by name from a SearchRegistry
// (env/search_registry.h) knowing none of them. The non-learned searches of env/ are the
// baselines the RL agent must beat:
//
//   greedy     env/greedy_search.h     the best improving rewrite until none improves
//   backtrack  env/backtrack_search.h  TASO's cost-bounded priority queue of graphs
//   random     env/random_search.h     random walks of rewrites, the best graph seen
//   eqsat      env/eqsat/eqsat_search.h  equality saturation (Tensat), then extraction
//   mcts-eqsat env/eqsat/eqsat_search.h  the e-graph built by tree search (MCTS-GEB)
//   advantage  env/advantage_search.h  progressive search guided by a candidate ranker
//                                      (env/candidate_ranker.h; the local advantage model)
//   passes     env/pass_searches.h     a pipeline of passes (rule classes, fold, dce, cse), and
//   pass-beam, pass-random             the searches over pass orders (env/passes.h)
//
// learner/ adds the searches that run a trained agent (learner/agent_searches.h). Adding a search
// is docs/architecture.md, "Adding a search".
//
// Stopping is data, not an error: a search returns why it stopped with its statistics.

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "cost/cost_model.h"
#include "graph/graph.h"
#include "graph/option_set.h"
#include "graph/rules/matcher.h"
#include "graph/rules/rule.h"

namespace rewire {

enum class StopReason {
  kSaturated,       // no candidate improves (greedy) / the queue ran dry (backtrack) / no rule
                    // changes the e-graph (eqsat)
  kBudget,          // the budget of explored graphs ran out
  kTimeLimit,       // the wall-clock limit ran out
  kNodeLimit,       // eqsat: the e-graph reached its node limit
  kIterationLimit,  // eqsat: the iteration limit ran out
  kMeasureBudget,   // the measured cost model's budget of real measurements ran out
  kLearnedStop,  // learned-eqsat: the builder's value or policy judged growing further not to pay
};
const char* StopReasonName(StopReason r);

struct SearchProgress {
  int iteration = 0;
  int budget = 0;
  double best_cost_ms = 0;
  double initial_cost_ms = 0;
  size_t queue_size = 0;
};

/// What every search is given besides its own options: the limits the pipeline sets for any
/// search (`rewire optimize --budget --time-limit --search-seed`) and where progress goes.
struct SearchLimits {
  /// Graphs explored at most, in the search's own unit (greedy steps, backtrack pops, random
  /// rewrites, graphs a guided search expands, candidates the advantage search costs); searches
  /// that build an e-graph have limits of their own.
  int budget = 100;
  /// Seconds (0: none).
  double time_limit_s = 0;
  /// The seed of whatever the search draws at random.
  uint64_t seed = 0;
  /// Candidates enumerated per graph at most (the environment's cap).
  size_t max_candidates = 500;
  /// Called after every iteration (e.g. to print progress); may be empty.
  std::function<void(const SearchProgress&)> progress;
};

struct SearchStep {
  std::string rule;
  double cost_ms = 0;  // cost of the graph after this rewrite
  /// The match applied (`match.rule` indexes the search's rules), so that ReplaySteps can
  /// rebuild the graphs along the path; match.rule is -1 where a search does not record it (the
  /// agent's searches).
  rules::Match match;
  /// Candidates the search had costed when it took this rewrite (SearchResult's
  /// candidates_evaluated then): how many evaluations reaching this cost took; -1 where a search
  /// does not count them.
  int64_t evaluations = -1;
};

/// A search's own figures, by name, in the order it reports them: counters (e-nodes, graphs
/// dropped), figures (milliseconds, seconds) and short texts (what produced the graph, a
/// solver's status). Reports print and serialise them as they are.
class SearchStats {
 public:
  using Value = std::variant<int64_t, double, std::string>;

  /// Sets `name` (in place when it is already there, else appended).
  void Set(const std::string& name, Value value);
  /// The value of `name`, or null.
  const Value* Find(const std::string& name) const;
  /// A counter or figure as a double; `fallback` when absent or a text.
  double Number(const std::string& name, double fallback = 0) const;
  /// A text; empty when absent or a number.
  std::string Text(const std::string& name) const;
  bool empty() const { return entries_.empty(); }
  const std::vector<std::pair<std::string, Value>>& entries() const { return entries_; }

 private:
  std::vector<std::pair<std::string, Value>> entries_;
};

struct SearchResult {
  Graph best;
  double initial_cost_ms = 0;
  double final_cost_ms = 0;
  std::vector<SearchStep> steps;  // rewrites from the input graph to `best`
  /// Why `steps` is empty although the graph may have changed (e.g. "the graph is extracted
  /// from the e-graph"); empty where `steps` is the path.
  std::string path_note;
  StopReason reason = StopReason::kSaturated;
  int iterations = 0;
  int64_t candidates_evaluated = 0;
  double seconds = 0;
  /// The search's own figures (SearchStats).
  SearchStats stats;
  /// Lines for a person, after the rewrites: (label, text), e.g. {"e-graph", "12345 e-nodes in
  /// 4321 e-classes ..."}.
  std::vector<std::pair<std::string, std::string>> summary;
};

/// One search. An instance holds its own options (declared by DeclareOptions, so that whoever
/// runs it can list and set them without knowing the search) and runs any number of times.
class Search {
 public:
  virtual ~Search() = default;

  /// Declares the search's own options, bound to the instance's fields (none by default). The
  /// set must not outlive the instance.
  virtual void DeclareOptions(OptionSet& options) {}

  /// Checks the options and `limits` before anything runs (the pipeline calls it when a request
  /// is prepared; Run checks again). Errors name the option.
  virtual Status Check(const SearchLimits& limits) const { return Status::Ok(); }

  /// Searches from `graph` with `rules` under `cost`. Errors: Check's, and a cost model that
  /// cannot cost an operator of the graph.
  virtual StatusOr<SearchResult> Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                                     CostModel& cost, const SearchLimits& limits) = 0;
};

/// The graph after the first k rewrites of `steps` from `input`, for each k of `prefixes`, by
/// replaying the recorded matches on `input` with `rules` (the search's own): the graph after
/// all of a search's steps is its `best`, node for node. Errors: a k beyond the steps, a step
/// that recorded no match, a match that no longer applies (other rules or another input).
StatusOr<std::vector<Graph>> ReplaySteps(const Graph& input, const std::vector<rules::Rule>& rules,
                                         const std::vector<SearchStep>& steps,
                                         const std::vector<size_t>& prefixes);

/// Up to `count` prefix lengths of a path of `n` rewrites, spread evenly and longest first:
/// n, then shorter ones down to about n / count; never 0 (the input itself). Empty for n = 0.
std::vector<size_t> SpreadPrefixes(size_t n, int count);

}  // namespace rewire

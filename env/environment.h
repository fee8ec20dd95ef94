#pragma once
// The RL environment (X-RLflow's, Gym-like): the state is the current graph; the actions are its
// candidate rewrites (every rule at every match, deduplicated, capped) plus a final No-Op; the
// reward of a step is 100 * (RT_{t-1} - RT_t) / RT_0 under the cost model; an episode ends on
// No-Op, when no candidate is left, or at the horizon. Candidates are offered as diffs against
// the current graph (with the graph each leads to, which shares the current graph's nodes), so
// a learner can encode only the changed region.
//
// The actions need not be single rewrites: an ActionSource (EnvOptions::actions) may offer other
// moves between graphs, e.g. whole passes run to a fixed point (env/passes.h), each a candidate
// like a rewrite's (its result graph and diff), so that agents and the acting loop are the same.
//
// Unmeasurable graphs (cost/cost_model.h: IsUnmeasurable, a measurement that crashed or hung):
// the environment goes on without them. With the sparse measured reward, an episode whose final
// graph is unmeasurable ends normally with a last reward of 0 (StepResult::unmeasurable); with a
// whole-graph cost model (e2e), a candidate that cannot be costed that way is dropped. Either
// way the graph's structural hash joins the environment's exclusions, and no later candidate
// leading to it is offered. An episode whose INPUT graph is unmeasurable cannot be played:
// Reset returns the error.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "graph/graph.h"
#include "graph/rewriter.h"
#include "graph/rules/matcher.h"
#include "graph/rules/rule.h"

namespace rewire {

/// How a step is rewarded (X-RLflow offers both).
enum class RewardMode {
  /// Every step: 100 * (RT_{t-1} - RT_t) / RT_0 under the cost model.
  kDense,
  /// 0 until the episode's last step, which gets 100 * (M_0 - M_T) / M_0 from the measured
  /// end-to-end runtimes M of the input and of the final graph (EnvOptions::measure).
  kSparseMeasured,
};

/// The end-to-end runtime of a graph in milliseconds, as it would run (weights folded).
using MeasureRuntime = std::function<StatusOr<double>(const Graph&)>;

struct EnvCandidate;
class ActionSource;

struct EnvOptions {
  EnvOptions() = default;
  EnvOptions(int horizon, size_t max_candidates)
      : horizon(horizon), max_candidates(max_candidates) {}

  int horizon = 100;            // steps per episode at most
  size_t max_candidates = 500;  // see graph/rules/candidates.h for the cap policy
  RewardMode reward = RewardMode::kDense;
  /// kSparseMeasured: measures a graph (the input once per distinct input graph, the final
  /// graph of every episode). Required in that mode.
  MeasureRuntime measure;
  /// Where the actions come from; null: every rule at every match (max_candidates applies).
  /// Shared by the environments that copy these options (a source may cache what it computes).
  std::shared_ptr<ActionSource> actions;
};

/// One action other than No-Op.
struct EnvCandidate {
  int rule = -1;       // index into the environment's rules; -1 for an action that is no rewrite
  std::string name;    // what the action is called: the rule's name, or the pass's
  GraphDiff diff;      // nodes removed from / added to the current graph
  Graph result;        // the graph after the rewrite (shares unchanged nodes)
  double cost_ms = 0;  // its cost, computed from the diff
  /// Surviving nodes whose inputs the rewrite re-pointed, with the old and new producers of
  /// those inputs (for the GNN's incremental encoding, env/features.h).
  std::vector<NodeId> touched;
  /// Cost-table entries the rewrite sets (added nodes, consumers whose weight-only status
  /// changed).
  std::vector<CostTable::NodeCost> cost_updates;
};

/// `match` (of rule `match.rule` of `rules`) applied to a copy of `graph`, with the consumers it
/// re-points recorded (`touched`); not costed (cost_ms 0, no cost_updates). Errors: the match
/// does not apply.
StatusOr<EnvCandidate> ApplyCandidate(const Graph& graph, const std::vector<rules::Rule>& rules,
                                      const rules::Match& match);

/// The actions of one graph from an ActionSource.
struct ActionSet {
  /// The graph the candidates' diffs are against: structurally the graph asked about, and
  /// possibly another instance of it (a source that caches results keeps one instance per
  /// structure); the environment continues from it.
  Graph state;
  /// Candidates with `result`, `diff`, `touched` and `name` filled; the environment costs them.
  std::vector<EnvCandidate> candidates;
};

/// Moves an environment offers besides the rewrites of its rules (EnvOptions::actions).
class ActionSource {
 public:
  virtual ~ActionSource() = default;
  /// E.g. "passes".
  virtual std::string Name() const = 0;
  /// The actions from `graph` (No-Op excluded). Errors: the source's own.
  virtual StatusOr<ActionSet> Actions(const Graph& graph) = 0;
};

struct Observation {
  const Graph* graph = nullptr;  // the current graph (owned by the environment)
  const std::vector<EnvCandidate>* candidates = nullptr;
  /// One entry per action: candidates first, then No-Op (always last, always allowed).
  std::vector<uint8_t> action_mask;
  size_t noop_action() const { return action_mask.size() - 1; }
  size_t num_actions() const { return action_mask.size(); }
};

struct StepResult {
  Observation observation;
  double reward = 0;
  bool done = false;
  std::string rule;  // the rewrite taken ("" for No-Op)
  double cost_ms = 0;
  /// kSparseMeasured, on the last step: the measured runtimes of the input and of the final
  /// graph (0 otherwise, and when measuring is off: see set_measuring).
  double measured_initial_ms = 0, measured_final_ms = 0;
  /// kSparseMeasured, on the last step: the final graph is unmeasurable (its measurement crashed
  /// or hung); the reward is 0 and measured_final_ms 0.
  bool unmeasurable = false;
};

class Environment {
 public:
  /// `rules` and `cost` must outlive the environment.
  Environment(const std::vector<rules::Rule>& rules, CostModel& cost, EnvOptions options = {});

  /// Starts an episode on `graph`. Errors: the cost model cannot cost the graph; with
  /// kSparseMeasured (measuring on), the graph cannot be measured - an unmeasurable input
  /// (IsUnmeasurable) included: nothing can be done with it.
  StatusOr<Observation> Reset(const Graph& graph);
  /// Starts at `graph` as step `steps` of an episode whose first graph cost `initial_cost_ms`
  /// (rewards and cost features are relative to it; the horizon counts from that episode's
  /// start): what a search over many states of one episode needs. Errors: as Reset, a
  /// non-positive initial cost, a negative step or one at or past the horizon, the sparse
  /// measured reward (whose episode input this would not know).
  StatusOr<Observation> ResetAt(const Graph& graph, double initial_cost_ms, int steps);
  /// Takes action `action` (an index below num_actions(); noop_action() stops). Errors: no
  /// episode, an episode that is done, an action out of range or masked; with kSparseMeasured,
  /// a graph that cannot be measured.
  StatusOr<StepResult> Step(size_t action);

  /// kSparseMeasured: with measuring off (a learner replaying a recorded episode, whose final
  /// reward was measured where it was played), the last step's reward is NaN and nothing is
  /// measured. On by default.
  void set_measuring(bool on) { measuring_ = on; }

  double initial_cost_ms() const { return initial_cost_ms_; }
  double cost_ms() const { return table_ ? table_->total_ms() : 0; }
  int steps() const { return steps_; }
  const Graph& graph() const { return graph_; }
  /// Cost table of the current graph (valid after Reset).
  const CostTable& table() const { return *table_; }
  const std::vector<EnvCandidate>& candidates() const { return candidates_; }
  const EnvOptions& options() const { return options_; }
  const std::vector<rules::Rule>& rules() const { return rules_; }
  bool done() const { return done_; }

  /// Where the environment's time went since construction (for profiles).
  struct Timings {
    double enumerate_s = 0;  // finding candidate matches
    double apply_s = 0;      // applying each candidate to a copy and costing its diff
    int64_t expansions = 0;
    int64_t candidates = 0;
    /// Graphs excluded as unmeasurable (their measurement crashed or hung), and candidates
    /// dropped because they led to one.
    int64_t unmeasurable = 0;
    int64_t dropped_candidates = 0;
  };
  const Timings& timings() const { return timings_; }

  /// The graphs excluded as unmeasurable: structural hash (Graph::Hash) -> why.
  const std::map<uint64_t, std::string>& excluded() const { return excluded_; }
  /// Excludes the graph of structural hash `hash` (Graph::Hash): no later candidate leading to it
  /// is offered. A hash already excluded keeps its first reason.
  void Exclude(uint64_t hash, const std::string& reason);

 private:
  Status Expand();  // fills candidates_ for graph_
  Observation Observe() const;

  const std::vector<rules::Rule>& rules_;
  CostModel& cost_;
  EnvOptions options_;
  Graph graph_;
  std::optional<CostTable> table_;
  std::vector<EnvCandidate> candidates_;
  /// kSparseMeasured: the measured runtime of each input graph seen, by structural hash.
  StatusOr<double> MeasuredInput(const Graph& graph);
  Status FinishSparse(StepResult& r);

  double initial_cost_ms_ = 0;
  int steps_ = 0;
  bool done_ = true;
  bool measuring_ = true;
  Graph input_copy_;  // kSparseMeasured: the episode's input graph (Reset's)
  std::map<uint64_t, double> measured_inputs_;
  std::map<uint64_t, std::string> excluded_;  // unmeasurable graphs: hash -> why
  Timings timings_;
};

}  // namespace rewire

#pragma once
// Matching rules against a graph and applying a match through the Rewriter.
//
// Matching and rewriting are separate steps. A match binds every source statement to a graph
// node and every free variable to a value; it is rejected when an interior value (not mapped
// in `outputs`) is used outside the match, when a free variable is produced by the match
// itself, when the rewrite would create a cycle, when a constraint fails, or when the target
// does not type-check on the bound shapes. A rejected match can say why (for debugging rules).
//
// What matching a rule means is shared with the e-graph matcher (env/eqsat/ematch.h) through
// graph/rules/pattern.h: the compiled rule, the search order, what expressions see of a match,
// the constraint checks and the target plan. This matcher adds what a single graph has:
// candidate nodes (by op, through a bound node's producer or users), interior values that escape,
// the cycle check, the diff key and the edit through the Rewriter.

#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/rewriter.h"
#include "graph/rules/rule.h"

namespace rewire::rules {

/// One way a rule applies to a graph.
struct Match {
  int rule = -1;                      // index into the rule list it came from
  std::vector<NodeId> nodes;          // graph node of each source statement
  std::vector<ValueRef> free_values;  // value bound to each free variable (Rule::free_vars order)
  /// Canonical key of the change this match makes, computed in O(match): the matched nodes and
  /// the structure of the target (ops, attributes, wiring to surviving values, which values it
  /// replaces). Two matches with equal keys produce the same graph, whatever rule they come from.
  uint64_t diff_key = 0;
  /// The target rebuilds exactly the replaced values (e.g. Add(x, x) commuted): no change.
  bool noop = false;
};

/// Per-graph lookup tables shared by all rules during one enumeration: nodes by op, and a
/// topological position per node (used to prune the cycle check). Build once per graph state.
class MatchIndex {
 public:
  explicit MatchIndex(const Graph& graph);
  const std::vector<NodeId>& NodesOf(OpType op) const { return by_op_[static_cast<size_t>(op)]; }
  int64_t Position(NodeId id) const { return id < position_.size() ? position_[id] : -1; }
  /// True when the node's outputs are computed from Weight and Constant nodes only.
  bool WeightOnly(NodeId id) const { return id < weight_only_.size() && weight_only_[id]; }

 private:
  std::vector<std::vector<NodeId>> by_op_;
  std::vector<int64_t> position_;
  std::vector<bool> weight_only_;
};

/// Why candidate matches were rejected, counted (cheap; filled only when asked for).
struct RejectStats {
  size_t escaping = 0;
  size_t cycle = 0;
  size_t constraint = 0;
  size_t target_invalid = 0;
  size_t self_input = 0;
};

/// Every valid match of `rule` (index `rule_index`) in `graph`, in a deterministic order.
std::vector<Match> FindMatches(const Graph& graph, const Rule& rule, int rule_index,
                               const MatchIndex& index, RejectStats* stats = nullptr);

/// Applies `match` of `rule`; returns the diff (nodes removed and added). On error the graph is
/// unchanged: the target is type-checked on the bound shapes before any edit.
StatusOr<GraphDiff> ApplyMatch(Graph& graph, const Rule& rule, const Match& match,
                               RewriteListener* listener = nullptr);

/// True when `v` is computed from Weight and Constant nodes only.
bool IsWeightOnly(const Graph& graph, ValueRef v);

}  // namespace rewire::rules

#pragma once
// rewire's rules (graph/rules/rule.h) as e-graph rewrites.
//
// A match binds every source statement to a usable e-node and every free variable to an e-class;
// applying it adds the target's e-nodes and merges each mapped source value's class with the
// class of its replacement (`outputs from -> to`). The old e-nodes stay: an e-graph holds every
// version at once, so the graph matcher's checks that protect a single graph (interior values
// that escape, the rewrite creating a cycle) do not apply here; cycles are the business of
// env/eqsat/cycles.h. What a match must still satisfy, with a fixed meaning over e-classes:
//
//   attributes      the e-node's canonical attributes, as the graph matcher reads a node's
//   shapes          dim/rank/shape/numel read the class's type (every member has it)
//   is_weight(x)    x's class holds a weight-only e-node (the class is foldable)
//   precedes(a, b)  the class of a has a smaller canonical id than the class of b: a fixed order
//                   that lets interchangeable statements match each set of classes once (and
//                   never a class with itself: merging a value with itself gains nothing)
//   multi-output    a statement `a, b = Split(x)` binds an e-node of a tuple class; `a` is the
//                   class of its Project(0) e-node
//   free variables  never the class of a matched statement (the value would read itself)
//   target          must type-check on the bound classes' types; mapped outputs keep their type
//
// A rule whose source has more than one sink (a statement no other source statement reads, e.g.
// two convolutions sharing an input) is a multi-pattern rule, Tensat's term: the saturation
// applies those on the first iterations only (env/eqsat/saturate.h).
//
// What matching a rule means is shared with the graph matcher through graph/rules/pattern.h:
// the compiled rule, the search order (here with ties broken by the op with the fewest e-nodes),
// what expressions see of a match, the constraint checks and the target plan. This file adds
// what an e-graph has: candidate e-nodes through classes, parents and projections, the
// read-itself check, the budgets, limits and skip set, and the edit (adding e-nodes, unions).

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "env/eqsat/egraph.h"
#include "graph/clock.h"
#include "graph/rules/pattern.h"
#include "graph/rules/rule.h"

namespace rewire::eqsat {

/// One way a rule's source matches the e-graph.
struct EMatch {
  int rule = -1;                      // index of the ERule it came from
  std::vector<ENodeId> nodes;         // the e-node of each source statement
  std::vector<ClassId> free_classes;  // the class of each free variable (Rule::free_vars order)
};

/// A rule prepared for e-matching: its compiled pattern (graph/rules/pattern.h, shared with the
/// graph matcher) and the facts the saturation needs.
class ERule {
 public:
  /// `rule` must outlive the ERule; `index` is what EMatch::rule records.
  ERule(const rules::Rule& rule, int index);

  const rules::Rule& rule() const { return *rule_; }
  const rules::Pattern& pattern() const { return *pattern_; }
  int index() const { return index_; }
  /// More than one source statement is read by no other source statement.
  bool multi_pattern() const { return pattern_->multi_pattern(); }
  /// E-nodes one application adds at most (target e-nodes and projections).
  size_t max_new_nodes() const { return max_new_nodes_; }

 private:
  const rules::Rule* rule_;
  int index_;
  std::shared_ptr<const rules::Pattern> pattern_;
  size_t max_new_nodes_ = 0;
};

/// Every rule of `rules` prepared, each with its index in `rules` (`rules` must outlive them).
std::vector<ERule> MakeERules(const std::vector<rules::Rule>& rules);

/// Bounds on the work of one FindEMatches call.
struct MatchBudget {
  /// E-nodes tried for a statement at most (0: no bound). A multi-pattern rule whose statements
  /// all read one class tries k^n bindings for k readers; this keeps one rule from taking
  /// minutes in a single round.
  size_t max_steps = 0;
  Clock::time_point deadline = Clock::time_point::max();
  /// Set when the search stopped early on either bound.
  bool exhausted = false;
};

/// Every match of `rule` in `egraph` over usable e-nodes (live, not blacklisted), in a
/// deterministic order, leaving out those whose EMatchKey is in `skip` (when given); stops after
/// `limit` matches when `limit` > 0, or when `budget` (when given) runs out.
std::vector<EMatch> FindEMatches(const EGraph& egraph, const ERule& rule, size_t limit = 0,
                                 const std::unordered_set<uint64_t>* skip = nullptr,
                                 MatchBudget* budget = nullptr);

/// Applies `match` (from FindEMatches on this e-graph, possibly unions ago): adds the target and
/// merges classes; the caller rebuilds. Returns whether the e-graph changed (an e-node added or
/// two classes merged). Errors: the target no longer type-checks (Internal: the types of a class
/// never change).
StatusOr<bool> ApplyEMatch(EGraph& egraph, const ERule& rule, const EMatch& match);

/// A key of what `match` adds and merges (its rule, e-nodes and canonical free classes): equal
/// keys, equal effects, so a match applied once need not be applied again.
uint64_t EMatchKey(const EGraph& egraph, const EMatch& match);

/// A key of the classes `match` binds its source statements to (and its rule): matches with
/// equal keys merge the same values, through other e-nodes of the same classes.
uint64_t EMatchClassKey(const EGraph& egraph, const EMatch& match);

/// The classes `match` would merge with its target's values (one per mapped output; a tuple's
/// class stands for an output whose Project e-node does not exist yet), and the classes its
/// target reads (the free variables').
void MatchBoundary(const EGraph& egraph, const ERule& rule, const EMatch& match,
                   std::vector<ClassId>* replaced, std::vector<ClassId>* inputs);

}  // namespace rewire::eqsat

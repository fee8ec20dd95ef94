#pragma once
// Cycle filtering, as Tensat does it: an e-graph may hold cycles (a rewrite that removes an
// operator, Transpose(Transpose(x)) -> x, puts the outer Transpose in x's own class), and so may
// a merge of two operators where one reads the other. Extraction must never choose a cycle, and
// an ILP over a cyclic e-graph cuts off cycle after cycle of its solutions (extract.h). So:
//
//   - before a multi-pattern rewrite is applied, it is skipped when one of the classes its target
//     reads reaches a class it would merge into (the merge would close a cycle): ReachChecker,
//     pruned by class levels computed at the start of the iteration;
//   - after every iteration, FilterCycles blacklists e-nodes until no cycle is reachable from the
//     roots: in each cycle found, the newest e-node (e-node ids are creation order), preferring
//     one whose class keeps another usable e-node, and never one of the *anchors*: the e-nodes
//     of extraction's greedy choice (extract.h) as the e-graph stands. Anchors form an acyclic
//     extraction (the input graph's e-nodes give every root one), so every cycle has another
//     e-node to blacklist and extraction always has a solution left. (Preferring a class that
//     keeps another usable e-node is not enough: that e-node may be blacklisted by a later
//     cycle, which left TT with the generated transformer rules without any extraction.)
//
// A weight-only class is extracted through weight-only e-nodes only, which read weight-only
// classes only, so no extracted cycle passes through one: both stop at weight-only classes (a
// Split of a Concat of two weights, put back in the first weight's class by a rule, is a cycle
// left alone).
//
// Blacklisted e-nodes are neither matched nor extracted (EGraph::Usable).

#include <vector>

#include "env/eqsat/egraph.h"

namespace rewire::eqsat {

/// Blacklists e-nodes until no cycle through usable e-nodes is reachable from the roots.
/// Returns the number of e-nodes blacklisted.
size_t FilterCycles(EGraph& egraph);

/// Answers "does a class reach another" (operand edges through usable e-nodes), pruned by each
/// class's level (the longest operand path below it) taken when the checker was built: a class
/// only reaches classes of lower level. Classes added after that are searched without pruning.
class ReachChecker {
 public:
  explicit ReachChecker(const EGraph& egraph);
  /// True when some class of `from` reaches (or is) some class of `to`.
  bool Reaches(const std::vector<ClassId>& from, const std::vector<ClassId>& to);

 private:
  uint32_t Level(ClassId c) const;

  const EGraph& eg_;
  std::vector<uint32_t> level_;
  std::vector<uint32_t> seen_;  // stamp per class
  uint32_t stamp_ = 0;
};

}  // namespace rewire::eqsat

#pragma once
// Filters of the rule generator that run after verification: rules whose source never matches a
// set of zoo models, and rules that the rules already in use make redundant.

#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/rules/matcher.h"
#include "graph/rules/rule.h"

namespace rewire {

/// The graphs a match filter tries: each zoo model of `models` built with one layer, and every
/// graph one `rules` rewrite away from it. InvalidArgument naming an unknown model.
StatusOr<std::vector<Graph>> MatchFilterGraphs(const std::vector<std::string>& models,
                                               const std::vector<rules::Rule>& rules);

/// Matches a rule against a fixed set of graphs (their match indexes built once).
class MatchFilter {
 public:
  explicit MatchFilter(std::vector<Graph> graphs);
  /// True when `rule` has a match that changes something in one of the graphs.
  bool Matches(const rules::Rule& rule) const;
  size_t size() const { return graphs_.size(); }

 private:
  std::vector<Graph> graphs_;
  std::vector<rules::MatchIndex> indexes_;
};

/// TASO's redundancy idea with rewrites as the test: a rule is redundant when its source and its
/// target (the rule applied to its source, built on its first check line) both reach one graph
/// in at most `depth` rewrites of the rules in the pool. Rules judged not redundant join the
/// pool, so that of two rules that make each other redundant the first stays.
class RedundancyFilter {
 public:
  RedundancyFilter(std::vector<rules::Rule> pool, int depth)
      : pool_(std::move(pool)), depth_(depth) {}
  /// True when `rule` is redundant; otherwise adds it to the pool and returns false. A rule that
  /// cannot be built or applied on its check line is not redundant.
  bool Redundant(rules::Rule rule);

 private:
  std::vector<rules::Rule> pool_;
  int depth_;
};

}  // namespace rewire

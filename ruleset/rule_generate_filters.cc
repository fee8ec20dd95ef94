#include "ruleset/rule_generate_filters.h"

#include <algorithm>
#include <limits>
#include <unordered_set>

#include "graph/models/zoo.h"
#include "graph/rules/candidates.h"
#include "ruleset/rule_verify.h"

namespace rewire {
namespace {

rules::CandidateOptions AllCandidates() {
  rules::CandidateOptions all;
  all.max_candidates = std::numeric_limits<size_t>::max();
  return all;
}

/// Hashes of every graph at most `depth` rewrites of `pool` away from `start`.
std::unordered_set<uint64_t> Reachable(const Graph& start, const std::vector<rules::Rule>& pool,
                                       int depth) {
  std::unordered_set<uint64_t> seen{start.Hash()};
  std::vector<Graph> frontier{start};
  for (int d = 0; d < depth && !frontier.empty(); ++d) {
    std::vector<Graph> next;
    for (const Graph& g : frontier) {
      for (const rules::Candidate& c :
           rules::EnumerateCandidates(g, pool, AllCandidates()).candidates) {
        Graph h = g;
        if (!rules::ApplyMatch(h, pool[c.match.rule], c.match).ok()) continue;
        if (seen.insert(h.Hash()).second) next.push_back(std::move(h));
      }
    }
    frontier = std::move(next);
  }
  return seen;
}

}  // namespace

StatusOr<std::vector<Graph>> MatchFilterGraphs(const std::vector<std::string>& models,
                                               const std::vector<rules::Rule>& rules) {
  std::vector<Graph> graphs;
  for (const std::string& name : models) {
    ModelParams params;
    params.layers = 1;
    auto g = BuildModel(name, params);
    if (!g.ok()) return InvalidArgument("--match-models: " + g.status().message());
    for (const rules::Candidate& c :
         rules::EnumerateCandidates(*g, rules, AllCandidates()).candidates) {
      Graph next = *g;
      if (rules::ApplyMatch(next, rules[c.match.rule], c.match).ok())
        graphs.push_back(std::move(next));
    }
    graphs.push_back(std::move(g).value());
  }
  return graphs;
}

MatchFilter::MatchFilter(std::vector<Graph> graphs) : graphs_(std::move(graphs)) {
  for (const Graph& g : graphs_) indexes_.emplace_back(g);
}

bool MatchFilter::Matches(const rules::Rule& rule) const {
  for (size_t i = 0; i < graphs_.size(); ++i) {
    for (const rules::Match& m : rules::FindMatches(graphs_[i], rule, 0, indexes_[i])) {
      if (!m.noop) return true;
    }
  }
  return false;
}

bool RedundancyFilter::Redundant(rules::Rule rule) {
  auto source = BuildRuleSource(rule, rule.checks.at(0));
  bool redundant = false;
  if (source.ok()) {
    const rules::MatchIndex index(*source);
    const std::vector<rules::Match> own = rules::FindMatches(*source, rule, 0, index);
    Graph target = *source;
    if (!own.empty() && rules::ApplyMatch(target, rule, own.front()).ok()) {
      const auto from_source = Reachable(*source, pool_, depth_);
      for (uint64_t h : Reachable(target, pool_, depth_)) {
        if (from_source.count(h)) {
          redundant = true;
          break;
        }
      }
    }
  }
  if (!redundant) pool_.push_back(std::move(rule));
  return redundant;
}

}  // namespace rewire

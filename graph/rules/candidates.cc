#include "graph/rules/candidates.h"

#include <unordered_set>

namespace rewire::rules {

CandidateSet EnumerateCandidates(const Graph& graph, const std::vector<Rule>& rules,
                                 const CandidateOptions& options) {
  CandidateSet out;
  const MatchIndex index(graph);
  std::unordered_set<uint64_t> seen;
  if (options.dedup == Dedup::kGraphHash) seen.insert(graph.Hash());  // no-op rewrites
  std::vector<std::vector<Candidate>> per_rule(rules.size());
  for (size_t r = 0; r < rules.size(); ++r) {
    if (r < options.rules_enabled.size() && !options.rules_enabled[r]) continue;
    for (Match& m : FindMatches(graph, rules[r], static_cast<int>(r), index, &out.rejects)) {
      ++out.matches;
      Candidate c{std::move(m), 0};
      if (options.dedup == Dedup::kDiffKey) {
        c.result_hash = c.match.diff_key;
        if (c.match.noop || !seen.insert(c.result_hash).second) {
          ++out.duplicates;
          continue;
        }
      } else if (options.dedup == Dedup::kGraphHash) {
        Graph copy = graph;
        if (!ApplyMatch(copy, rules[r], c.match).ok()) {
          ++out.rejects.target_invalid;
          continue;
        }
        c.result_hash = copy.Hash();
        if (!seen.insert(c.result_hash).second) {
          ++out.duplicates;
          continue;
        }
      }
      per_rule[r].push_back(std::move(c));
    }
  }
  size_t total = 0;
  for (const auto& v : per_rule) total += v.size();
  out.candidates.reserve(std::min(total, options.max_candidates));
  for (size_t round = 0; out.candidates.size() < options.max_candidates; ++round) {
    bool any = false;
    for (auto& v : per_rule) {
      if (round < v.size()) {
        any = true;
        if (out.candidates.size() < options.max_candidates)
          out.candidates.push_back(std::move(v[round]));
      }
    }
    if (!any) break;
  }
  out.dropped = total - out.candidates.size();
  return out;
}

}  // namespace rewire::rules

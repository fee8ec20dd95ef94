#pragma once
// Candidate enumeration: every rule at every match, deduplicated by the canonical hash of the
// graph each would produce, in a deterministic order, under a cap.
//
// Cap policy: matches are gathered per rule in rule order (and, within a rule, in the order the
// matcher finds them, which follows node ids). When more unique candidates exist than
// `max_candidates`, they are taken round-robin across rules - the first match of every rule,
// then the second of every rule, and so on - so that no rule is starved by another with many
// matches. The number dropped is reported; exceeding the cap is never an error.

#include <cstdint>
#include <vector>

#include "graph/rules/matcher.h"

namespace rewire::rules {

struct CandidateOptions {
  size_t max_candidates = 500;
  /// Deduplicate by the hash of the resulting graph (costs one copy + apply + hash each).
  bool deduplicate = true;
};

struct Candidate {
  Match match;
  uint64_t result_hash = 0;  // Graph::Hash() of the graph after applying (0 without dedup)
};

struct CandidateSet {
  std::vector<Candidate> candidates;
  size_t matches = 0;     // valid matches found before deduplication
  size_t duplicates = 0;  // matches whose result equalled an earlier candidate's
  size_t dropped = 0;     // unique candidates left out by the cap
  RejectStats rejects;
};

CandidateSet EnumerateCandidates(const Graph& graph, const std::vector<Rule>& rules,
                                 const CandidateOptions& options = {});

}  // namespace rewire::rules

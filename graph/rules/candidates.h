#pragma once
// Candidate enumeration: every rule at every match, deduplicated by a canonical hash of what
// each would produce, in a deterministic order, under a cap. Matches that change nothing are
// dropped. By default the hash is the match's diff key (the change, hashed in O(match)); the
// exact alternative hashes the whole resulting graph.
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

/// How candidates that lead to the same graph are recognised.
enum class Dedup {
  kNone,       // keep every match (no-op matches too)
  kDiffKey,    // equal Match::diff_key: O(match) each; the default
  kGraphHash,  // equal Graph::Hash() of the result: exact up to isomorphism, but one copy, apply
               // and full hash per match - O(graph) each
};

struct CandidateOptions {
  size_t max_candidates = 500;
  Dedup dedup = Dedup::kDiffKey;
  /// Per rule: 0 leaves it out (a pass matches the rules of one class, env/passes.h); empty:
  /// every rule.
  std::vector<uint8_t> rules_enabled;
};

struct Candidate {
  Match match;
  uint64_t result_hash = 0;  // kGraphHash: Graph::Hash() after applying; else the diff key
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

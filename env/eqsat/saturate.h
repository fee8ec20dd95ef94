#pragma once
// Equality saturation over rewire's rules: rounds of matching every rule on the e-graph,
// applying the matches, rebuilding and filtering cycles, until nothing changes or a limit stops
// it. Stopping is data (SaturationStop), as in env/search.h.
//
// Within a round, matches are applied round-robin across rules (the first match of every rule,
// then the second, ...) so that under the node limit no rule starves another; a match applied
// once is not applied again. Multi-pattern rules are matched in the first `multi_iterations`
// rounds only (Tensat's k_multi), and each of their matches is skipped when it would close a
// cycle (env/eqsat/cycles.h).

#include <chrono>
#include <cstdint>
#include <functional>
#include <unordered_set>
#include <vector>

#include "env/eqsat/egraph.h"
#include "env/eqsat/ematch.h"
#include "graph/clock.h"

namespace rewire::eqsat {

/// An e-graph being rewritten, with the matches already applied to it.
struct RewriteState {
  EGraph egraph;
  std::unordered_set<uint64_t> applied;  // EMatchKey of every match applied
};

struct RoundOptions {
  /// No match is applied that could take the e-graph past this many e-nodes.
  size_t node_limit = 50000;
  bool filter_cycles = true;
  /// Stop matching and applying at this time.
  Clock::time_point deadline = Clock::time_point::max();
  /// Per rule of the round (parallel to `which`; empty: none): more new matches than this is
  /// "over the limit" (0: no limit). Matching stops there.
  std::vector<size_t> match_limits;
  /// A rule over its limit has its first `limit` matches applied (true), or none (false: egg's
  /// backoff scheduler discards them and bans the rule).
  bool apply_up_to_limit = false;
  /// Bindings one rule's matching may try in a round (0: no bound); a rule that runs out is over
  /// its limit too.
  size_t match_steps = 1000000;
};

struct RoundResult {
  bool changed = false;     // an e-node was added or two classes merged
  bool node_limit = false;  // a match was left unapplied for the node limit
  bool time_limit = false;  // the deadline passed during the round
  size_t matches = 0;       // new matches found
  size_t applied = 0;
  size_t cycle_skips = 0;       // multi-pattern matches skipped because they would close a cycle
  size_t blacklisted = 0;       // e-nodes blacklisted by cycle filtering after the round
  std::vector<int> over_limit;  // rules that found more new matches than their limit
  /// Matches applied per rule of the round (parallel to `which`).
  std::vector<size_t> applied_per_rule;
};

/// A match found for a round, with its key (taken when it was found, before the round's unions).
struct PendingMatch {
  EMatch match;
  uint64_t key;
  uint64_t class_key;  // multi-pattern rules: the classes it binds (0 otherwise)
};

/// The new matches of some rules on one e-graph, found once so that several rounds on copies of
/// that e-graph (the learned builder's lookahead, each with its own set of rules) need not match
/// again: a copy keeps the e-graph's class ids and applied matches, so the matches hold there.
struct RoundMatches {
  std::vector<int> rules;                           // rule indices, in the order matched
  std::vector<std::vector<PendingMatch>> per_rule;  // parallel to `rules`
  std::vector<bool> over_limit;                     // parallel to `rules`
  bool time_limit = false;  // the deadline passed while matching (later rules are missing)
};

/// The new matches of the rules `which` on `state` (RoundOptions' match limits, step budget and
/// deadline apply as in a round).
RoundMatches FindRoundMatches(const RewriteState& state, const std::vector<ERule>& rules,
                              const std::vector<int>& which, const RoundOptions& options);

/// One round with the rules `which` (indices into `rules`).
StatusOr<RoundResult> RewriteRound(RewriteState& state, const std::vector<ERule>& rules,
                                   const std::vector<int>& which, const RoundOptions& options);
/// One round with the rules `which` applying the matches `found` on `state` or on an unchanged
/// copy of it (a rule of `which` not in `found` has none). Equal to the round above where
/// `found` is FindRoundMatches's for `which` or any superset of it.
StatusOr<RoundResult> RewriteRound(RewriteState& state, const std::vector<ERule>& rules,
                                   const std::vector<int>& which, const RoundOptions& options,
                                   const RoundMatches& found);

enum class SaturationStop { kSaturated, kNodeLimit, kIterationLimit, kTimeLimit };
const char* SaturationStopName(SaturationStop s);

struct SaturationOptions {
  RoundOptions round;
  int iteration_limit = 15;
  int multi_iterations = 1;
  /// egg's backoff scheduler (its defaults): a rule with more than match_limit << b new matches
  /// in a round (b: times it was banned) is banned for ban_length << b rounds and its matches are
  /// dropped, so that associativity and commutativity do not take the whole node budget. When a
  /// round changes nothing while rules are banned, the bans are cut short instead of stopping.
  /// 0: no backoff.
  size_t match_limit = 1000;
  int ban_length = 5;
  /// Called after every round with its number (from 1) and the e-graph; may be empty.
  std::function<void(int, const EGraph&)> progress;
};

struct SaturationReport {
  SaturationStop stop = SaturationStop::kSaturated;
  int iterations = 0;  // rounds run
  size_t matches = 0, applied = 0, cycle_skips = 0;
  size_t bans = 0;                      // rules banned by the backoff scheduler
  std::vector<size_t> applied_by_rule;  // matches applied, by rule index
  double seconds = 0;
};

/// Rounds until a round changes nothing with no rule banned (saturated) or a limit stops it.
StatusOr<SaturationReport> Saturate(RewriteState& state, const std::vector<ERule>& rules,
                                    const SaturationOptions& options);

}  // namespace rewire::eqsat

#include "env/eqsat/saturate.h"

#include <algorithm>
#include <limits>
#include <memory>

#include "env/eqsat/cycles.h"

namespace rewire::eqsat {

const char* SaturationStopName(SaturationStop s) {
  switch (s) {
    case SaturationStop::kSaturated:
      return "saturated";
    case SaturationStop::kNodeLimit:
      return "node limit";
    case SaturationStop::kIterationLimit:
      return "iteration limit";
    case SaturationStop::kTimeLimit:
      return "time limit";
  }
  return "?";
}

RoundMatches FindRoundMatches(const RewriteState& state, const std::vector<ERule>& rules,
                              const std::vector<int>& which, const RoundOptions& o) {
  RoundMatches out;
  out.rules.reserve(which.size());
  for (size_t i = 0; i < which.size(); ++i) {
    if (Clock::now() > o.deadline) {
      out.time_limit = true;
      break;
    }
    const size_t limit = i < o.match_limits.size() ? o.match_limits[i] : 0;
    std::vector<PendingMatch> fresh;
    const ERule& rule = rules[which[i]];
    std::unordered_set<uint64_t> class_keys;
    MatchBudget budget;
    budget.max_steps = o.match_steps;
    budget.deadline = o.deadline;
    for (EMatch& m :
         FindEMatches(state.egraph, rule, limit > 0 ? limit + 1 : 0, &state.applied, &budget)) {
      const uint64_t key = EMatchKey(state.egraph, m);
      uint64_t class_key = 0;
      if (rule.multi_pattern()) {
        // Once per set of classes: other e-nodes of the same classes are other forms of the
        // same values, and their combinations would multiply the matches.
        class_key = EMatchClassKey(state.egraph, m);
        if (state.applied.count(class_key) || !class_keys.insert(class_key).second) continue;
      }
      fresh.push_back({std::move(m), key, class_key});
    }
    if (Clock::now() > o.deadline) out.time_limit = true;
    bool over = false;
    if ((limit > 0 && fresh.size() > limit) || (budget.exhausted && !out.time_limit)) {
      over = true;
      if (!o.apply_up_to_limit) fresh.clear();
      if (limit > 0 && fresh.size() > limit) fresh.resize(limit);
    }
    out.rules.push_back(which[i]);
    out.per_rule.push_back(std::move(fresh));
    out.over_limit.push_back(over);
  }
  return out;
}

StatusOr<RoundResult> RewriteRound(RewriteState& state, const std::vector<ERule>& rules,
                                   const std::vector<int>& which, const RoundOptions& o) {
  return RewriteRound(state, rules, which, o, FindRoundMatches(state, rules, which, o));
}

StatusOr<RoundResult> RewriteRound(RewriteState& state, const std::vector<ERule>& rules,
                                   const std::vector<int>& which, const RoundOptions& o,
                                   const RoundMatches& found) {
  RoundResult out;
  EGraph& eg = state.egraph;
  out.time_limit = found.time_limit;
  // The found matches of each rule of `which`, in its order (none for a rule not matched).
  static const std::vector<PendingMatch> kNone;
  std::vector<const std::vector<PendingMatch>*> per_rule(which.size(), &kNone);
  for (size_t k = 0; k < which.size(); ++k) {
    for (size_t j = 0; j < found.rules.size(); ++j) {
      if (found.rules[j] != which[k]) continue;
      per_rule[k] = &found.per_rule[j];
      out.matches += found.per_rule[j].size();
      if (found.over_limit[j]) out.over_limit.push_back(which[k]);
      break;
    }
  }
  out.applied_per_rule.assign(which.size(), 0);
  std::unique_ptr<ReachChecker> reach;  // built on the first multi-pattern match
  std::vector<ClassId> replaced, inputs;
  bool stop = out.time_limit;
  size_t tried = 0;
  for (size_t i = 0; !stop; ++i) {
    bool any = false;
    for (size_t k = 0; k < per_rule.size() && !stop; ++k) {
      if (i >= per_rule[k]->size()) continue;
      any = true;
      const PendingMatch& p = (*per_rule[k])[i];
      const ERule& rule = rules[which[k]];
      if (eg.num_nodes() + rule.max_new_nodes() > o.node_limit) {
        out.node_limit = stop = true;
        break;
      }
      if ((++tried & 63) == 0 && Clock::now() > o.deadline) {
        out.time_limit = stop = true;
        break;
      }
      if (rule.multi_pattern() && o.filter_cycles) {
        if (!reach) reach = std::make_unique<ReachChecker>(eg);
        MatchBoundary(eg, rule, p.match, &replaced, &inputs);
        if (reach->Reaches(inputs, replaced)) {
          ++out.cycle_skips;
          continue;
        }
      }
      REWIRE_ASSIGN_OR_RETURN(const bool changed, ApplyEMatch(eg, rule, p.match));
      out.changed = out.changed || changed;
      state.applied.insert(p.key);
      if (p.class_key) state.applied.insert(p.class_key);
      ++out.applied;
      ++out.applied_per_rule[k];
    }
    if (!any) break;
  }
  eg.Rebuild();
  if (o.filter_cycles) out.blacklisted = FilterCycles(eg);
  return out;
}

StatusOr<SaturationReport> Saturate(RewriteState& state, const std::vector<ERule>& rules,
                                    const SaturationOptions& o) {
  const auto start = Clock::now();
  SaturationReport report;
  struct Ban {
    int until = 0;  // banned while the round number is below this
    int times = 0;
  };
  std::vector<Ban> bans(rules.size());
  report.applied_by_rule.assign(rules.size(), 0);
  for (;;) {
    if (report.iterations >= o.iteration_limit) {
      report.stop = SaturationStop::kIterationLimit;
      break;
    }
    const bool multi = report.iterations < o.multi_iterations;
    RoundOptions ro = o.round;
    std::vector<int> which;
    for (const ERule& r : rules) {
      if ((multi || !r.multi_pattern()) && bans[r.index()].until <= report.iterations) {
        which.push_back(r.index());
        ro.match_limits.push_back(o.match_limit << bans[r.index()].times);
      }
    }
    REWIRE_ASSIGN_OR_RETURN(RoundResult round, RewriteRound(state, rules, which, ro));
    for (int r : round.over_limit) {
      bans[r].until = report.iterations + 1 + (o.ban_length << bans[r].times);
      ++bans[r].times;
      ++report.bans;
    }
    ++report.iterations;
    report.matches += round.matches;
    report.applied += round.applied;
    report.cycle_skips += round.cycle_skips;
    for (size_t k = 0; k < which.size(); ++k) {
      report.applied_by_rule[which[k]] += round.applied_per_rule[k];
    }
    if (o.progress) o.progress(report.iterations, state.egraph);
    if (round.node_limit) {
      report.stop = SaturationStop::kNodeLimit;
      break;
    }
    if (round.time_limit) {
      report.stop = SaturationStop::kTimeLimit;
      break;
    }
    if (round.changed) continue;
    // Nothing changed: done, unless banned rules may still change something.
    int next = std::numeric_limits<int>::max();
    for (const ERule& r : rules) {
      const bool eligible = report.iterations < o.multi_iterations || !r.multi_pattern();
      if (eligible && bans[r.index()].until > report.iterations)
        next = std::min(next, bans[r.index()].until);
    }
    if (next == std::numeric_limits<int>::max()) {
      report.stop = SaturationStop::kSaturated;
      break;
    }
    for (Ban& b : bans) b.until = std::max(0, b.until - (next - report.iterations));
  }
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return report;
}

}  // namespace rewire::eqsat

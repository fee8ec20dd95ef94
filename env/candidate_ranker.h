#pragma once
// Ranking candidates before they are costed: the seam through which a learned model tells a
// search which rewrites are worth an evaluation (docs/advantage.md, "Searches"). Under a measured
// cost model every evaluation is a real run, so a search that costs only what a ranker puts first
// spends fewer of them.
//
// A ranker reads a state - its graph, cost table and candidates applied to copies but not costed
// (ApplyUncosted) - and scores every candidate, higher for a candidate likelier to pay. It must
// call no cost model. Rankers are made by name from a registry (Rankers()): env/ adds `uniform`
// (random scores, the unguided baseline); advantage_model/ adds the local advantage model's
// `model` and its rule prior `rule`, which read a model file (AddAdvantageRankers).
//
// RankingOptions are the flags a search declares to use one: --ranker, --advantage-model and,
// for searches that prune, --advantage-top.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "env/environment.h"
#include "graph/graph.h"
#include "graph/option_set.h"
#include "graph/registry.h"
#include "graph/rules/candidates.h"
#include "graph/rules/rule.h"

namespace rewire {

/// What a ranker reads of a state.
struct RankInput {
  const Graph& graph;
  const CostTable& table;  // the state's graph's
  /// The search's input cost: node cost features are relative to it, as in an episode.
  double initial_cost_ms;
  /// Every candidate, applied and not costed (ApplyUncosted): cost_ms is the state's cost and
  /// cost_updates carry weight-only flags at cost 0.
  const std::vector<EnvCandidate>& candidates;
  const std::vector<rules::Rule>& rules;  // candidates' `rule` indexes these
};

class CandidateRanker {
 public:
  virtual ~CandidateRanker() = default;
  /// For reports, e.g. "model(adv.pt)".
  virtual std::string Name() const = 0;
  /// One score per candidate, in order; higher: likelier to pay. Calls no cost model.
  virtual StatusOr<std::vector<double>> Score(const RankInput& input) = 0;
};

/// The candidates of `set` applied to copies of `graph`, each with the cost-table entries its
/// diff sets (CostTable::UncostedUpdates: flags, cost 0) and cost_ms = table.total_ms(): what a
/// ranker reads. Calls no cost model. Errors: a match that does not apply.
StatusOr<std::vector<EnvCandidate>> ApplyUncosted(const Graph& graph, const CostTable& table,
                                                  const std::vector<rules::Rule>& rules,
                                                  const rules::CandidateSet& set);

/// The indices of the `k` highest `scores` (all when fewer), highest first; ties: the lower index
/// first.
std::vector<size_t> TopIndices(const std::vector<double>& scores, size_t k);

class RankerRegistry {
 public:
  /// Makes a ranker from a model file (empty for rankers that read none) and a seed.
  using Maker = std::function<StatusOr<std::unique_ptr<CandidateRanker>>(const std::string& model,
                                                                         uint64_t seed)>;
  /// Adds ranker `name` (replacing one of that name); `needs_model`: it reads --advantage-model.
  void Add(const std::string& name, const std::string& summary, bool needs_model, Maker make);
  bool Has(const std::string& name) const { return entries_.Has(name); }
  std::vector<std::string> Names() const { return entries_.Names(); }
  /// Errors: an unknown name (listing the known ones), a ranker needing a model given none.
  Status Check(const std::string& name, const std::string& model) const;
  /// A new ranker. Errors: Check's, and the maker's own (a model file that does not load).
  StatusOr<std::unique_ptr<CandidateRanker>> Make(const std::string& name, const std::string& model,
                                                  uint64_t seed) const;

 private:
  struct Entry {
    std::string name;
    std::string summary;
    bool needs_model = false;
    Maker make;
  };
  NamedRegistry<Entry> entries_{"ranker"};
};

/// The process's rankers: `uniform` from the first call on; add others at start-up.
RankerRegistry& Rankers();

/// The flags of a search that ranks candidates, and the ranker they make.
struct RankingOptions {
  std::string ranker = "model";  // --ranker
  std::string model;             // --advantage-model
  /// --advantage-top: cost only the K best-ranked candidates of a state (0: cost them all, rank
  /// nothing). Declared by searches that prune (greedy, backtrack).
  int top = 0;

  /// Declares --ranker and --advantage-model, and --advantage-top when `with_top`.
  void Declare(OptionSet& set, bool with_top);
  /// Whether ranking is asked for (pruning searches: --advantage-top > 0).
  bool pruning() const { return top > 0; }
  /// Errors: a negative top, an unknown ranker, a ranker needing a model given none.
  Status Check() const;
  /// Rankers().Make(ranker, model, seed). Errors: Check's, and a model file that does not load.
  StatusOr<std::unique_ptr<CandidateRanker>> Make(uint64_t seed) const;
};

}  // namespace rewire

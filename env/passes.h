#pragma once
// Passes: what a compiler's pipeline is made of, over rewire's rules. A pass is a named
// transformation of a graph run to a fixed point:
//
//   a rule class   every rule of one class (Rule::rule_class: fusion, merge, layout, algebraic,
//                  transformer, conv, or an imported set's classes) applied by greedy search - the
//                  cheapest improving rewrite of the class under the cost model, until none
//                  improves (which also guarantees that it stops)
//   fold           weight-only subgraphs computed ahead of time (kernels/fold.h)
//   dce            operators no output depends on removed
//   cse            operators equal in type, attributes and inputs merged into one
//
// A PassSet holds the passes a rule set offers; a pipeline is a list of their names
// (`rewire optimize --passes fold,fusion,merge`). DefaultPipeline is the order a compiler writer
// would choose before any learning (docs/passes.md says why). The order is a decision: a pass can
// close a door another would have opened, and env/pass_searches.h searches over orders while an
// agent learns them through PassActions, an environment whose actions are passes.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "env/environment.h"
#include "graph/graph.h"
#include "graph/rules/rule.h"

namespace rewire {

/// What a pass did to a graph.
struct PassOutcome {
  /// The graph after the pass; it shares the input graph's unchanged nodes (their ids too).
  Graph graph;
  /// Rewrites applied (rule passes), operators folded (fold), removed (dce) or merged (cse).
  int changes = 0;
  /// The structural hash of `graph` (Graph::Hash).
  uint64_t hash = 0;
  bool changed() const { return changes > 0; }
};

/// One pass. Immutable once made: threads may run one pass at once.
class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string Name() const = 0;
  /// One line for listings (`rewire optimize --search passes --help`, errors).
  virtual std::string Summary() const = 0;
  /// Runs the pass on `graph` to its fixed point, under `cost` where it chooses by cost. Errors:
  /// the cost model cannot cost the graph; folding failed.
  virtual StatusOr<PassOutcome> Run(const Graph& graph, CostModel& cost) const = 0;
};

struct PassOptions {
  /// Rewrites one rule pass may apply at most (a safety bound: greedy stops by itself).
  int max_rewrites = 10000;
  /// Candidates a rule pass enumerates per graph at most (graph/rules/candidates.h).
  size_t max_candidates = 2000;
};

/// The passes of one rule set, by name: fold, dce, cse, then one per rule class in the order the
/// rules first use it.
class PassSet {
 public:
  /// The passes `rules` offer; `rules` must outlive the set. Errors: a rule class named like a
  /// non-rule pass.
  static StatusOr<std::shared_ptr<const PassSet>> Make(const std::vector<rules::Rule>& rules,
                                                       PassOptions options = {});

  size_t size() const { return passes_.size(); }
  const Pass& pass(size_t i) const { return *passes_[i]; }
  std::vector<std::string> Names() const;
  /// The index of pass `name`; -1 when there is none.
  int Find(const std::string& name) const;

  /// The pass indices of a pipeline written "fold,fusion,merge" (names separated by commas,
  /// spaces allowed; a pass may appear more than once). "default" is DefaultPipeline, "all" every
  /// pass in the set's order. Errors: an empty pipeline, an unknown pass (naming the known ones).
  StatusOr<std::vector<int>> ParsePipeline(const std::string& text) const;
  /// The default pipeline, as names of this set's passes (see docs/passes.md): clean-up (dce, cse),
  /// canonical forms (algebraic, layout), merges while operators are still plain (transformer,
  /// merge), then fusion and conv, and fold last for the weight-only subgraphs merges and
  /// fusions leave; classes the rules lack are left out, other classes go before fold.
  std::vector<int> DefaultPipeline() const;
  /// "fold, dce, ..." (every pass, for messages).
  std::string Known() const;
  /// "a,b,c" for pass indices.
  std::string PipelineText(const std::vector<int>& pipeline) const;

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
};

/// The diff that turns `before` into `after`, where `after` was made from a copy of `before` by
/// edits (node ids are never reused): the nodes only one of them holds, and in `touched` (when
/// given) the surviving nodes whose inputs were re-pointed, each followed by its new and old
/// producers - what EnvCandidate::touched records for a single rewrite.
GraphDiff DiffGraphs(const Graph& before, const Graph& after, std::vector<NodeId>* touched);

/// True when `a` and `b` hold the same node records under the same ids (one is a copy of the
/// other, neither edited since).
bool SameNodes(const Graph& a, const Graph& b);

/// Pass results by the structural hash of the graph they ran on, shared by the searches and
/// environments of a process: one canonical graph per hash (the first seen), and per pass what
/// running it on that graph gave, computed once. Results share the canonical graph's node ids.
/// Thread-safe (passes run under its lock). `cost` must outlive it.
class PassCache {
 public:
  PassCache(std::shared_ptr<const PassSet> passes, CostModel& cost, size_t max_graphs = 8192);

  const PassSet& passes() const { return *passes_; }
  CostModel& cost() const { return cost_; }

  /// The canonical graph of `graph`'s structure: `graph` itself when its structure is new.
  Graph Canonical(const Graph& graph);
  /// What passes gave on one graph.
  struct Results {
    Graph state;    // the canonical graph of the graph asked about
    uint64_t hash;  // its structural hash
    std::vector<std::shared_ptr<const PassOutcome>> outcomes;  // one per pass asked for
  };
  /// Each of `passes` run on the canonical graph of `graph` (Canonical's), its result the
  /// canonical graph of its structure when that is new. Errors: a pass index out of range, and
  /// the passes' own.
  StatusOr<Results> RunEach(const Graph& graph, const std::vector<int>& passes);
  /// Pass `pass` run on the canonical graph of `graph`. Errors: the pass's.
  StatusOr<std::shared_ptr<const PassOutcome>> Run(const Graph& graph, int pass);
  /// Runs `pipeline` from `graph`; the outcome of each pass in order.
  StatusOr<std::vector<std::shared_ptr<const PassOutcome>>> RunPipeline(
      const Graph& graph, const std::vector<int>& pipeline);

  /// Passes run (not answered from the cache), and answers from it.
  int64_t runs() const;
  int64_t hits() const;

 private:
  struct Entry {
    Graph graph;
    std::vector<std::shared_ptr<const PassOutcome>> results;  // by pass; null: not run yet
  };
  Entry& EntryOf(const Graph& graph, uint64_t hash);  // under mu_

  std::shared_ptr<const PassSet> passes_;
  CostModel& cost_;
  size_t max_graphs_;
  mutable std::mutex mu_;
  std::map<uint64_t, Entry> entries_;
  int64_t runs_ = 0, hits_ = 0;
};

/// An environment's actions as passes (EnvOptions::actions): from a graph, each pass of
/// `allowed` that changes it, as a candidate whose result is the graph after the pass and whose
/// diff is the pass's whole edit. A pass that would change nothing is not offered (the action
/// masking of passes that cannot act), nor a second pass reaching a graph one already offers.
/// States are the cache's canonical graphs, so that results computed once serve every episode.
class PassActions : public ActionSource {
 public:
  /// `masking` false offers every allowed pass, also one that changes nothing (its candidate
  /// leads back to the same graph, reward 0): the ablation of the masking.
  PassActions(std::shared_ptr<PassCache> cache, std::vector<int> allowed, bool masking = true);
  std::string Name() const override { return "passes"; }
  StatusOr<ActionSet> Actions(const Graph& graph) override;
  const PassCache& cache() const { return *cache_; }

 private:
  std::shared_ptr<PassCache> cache_;
  std::vector<int> allowed_;
  bool masking_;
};

/// PassActions over every pass of `rules` (or those `pipeline` names, in its syntax; empty: all),
/// with a cache of its own; `rules` and `cost` must outlive it. Errors: PassSet::Make's and
/// ParsePipeline's.
StatusOr<std::shared_ptr<PassActions>> MakePassActions(const std::vector<rules::Rule>& rules,
                                                       CostModel& cost,
                                                       const std::string& pipeline = "",
                                                       bool masking = true);

}  // namespace rewire

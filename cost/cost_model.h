#pragma once
// Cost models: what running an operator costs, summed over a graph (TASO's model), and kept up
// to date through graph diffs so that a candidate rewrite is costed in O(diff), not O(graph).
//
// One interface, several backends (README.md, "Cost models"; docs/results.md):
//   analytic  roofline from a device profile (cost/analytic_cost.h); deterministic
//   cpu       times each operator with the reference executor's LibTorch kernels (cpu_cost.h)
//   cuda      times each operator with cuDNN / cuBLAS / own kernels (cuda/cuda_cost.h)
// MakeCostModel (cost/cost_registry.h) builds one by name.
//
// What costs nothing, whatever the backend:
//   - leaves (Input, Weight, Constant);
//   - weight-only operators: computed from Weights and Constants only, they are folded ahead of
//     time (kernels/fold.h), with the meaning of rules::MatchIndex::WeightOnly;
//   - views, as in TASO: the ops of cost class View in graph/ops.def (Reshape, Squeeze, Unsqueeze,
//     Flatten, Identity, Dropout and Split; their outputs alias their input);
//   - a Conv2D's fused activation is part of the Conv2D's cost (one kernel), not a separate op.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/graph.h"
#include "graph/rewriter.h"

namespace rewire {

// ---------------------------------------------------------------------------- helpers

/// True for the ops that are views of their input and cost 0: cost class View (see above).
bool IsViewOp(OpType op);

/// The weight-only rule of rules::MatchIndex for one node, given the flags of its producers:
/// Weight and Constant are weight-only; Input, Opaque and input-less ops are not; any other op is
/// weight-only when every input's producer is.
template <typename ProducerFlag>
bool WeightOnlyFromInputs(const Node& node, ProducerFlag&& producer_is_weight_only) {
  if (node.op == OpType::kWeight || node.op == OpType::kConstant) return true;
  if (node.op == OpType::kInput || node.op == OpType::kOpaque || node.inputs.empty()) return false;
  for (const ValueRef& in : node.inputs) {
    if (!producer_is_weight_only(in.node)) return false;
  }
  return true;
}

/// Canonical text of an operator instance, the key under which measured costs are memoised and
/// cached: op (ONNX type for Opaque), every attribute in full (tensor attributes by content hash),
/// input and output types, and for an input produced by a Constant the hash of its data (an
/// Opaque op may read it, e.g. a shape). Equal for equal operators, whatever their node ids.
/// Example: "Relu||in=f32[1x64x56x56]|out=f32[1x64x56x56]".
std::string OpSignature(const Graph& graph, const Node& node);

// ---------------------------------------------------------------------------- CostModel

/// What a measured model has measured so far: the real runs it made (operators or whole graphs
/// timed), their seconds, and the costs it answered without running anything.
struct MeasurementCounts {
  int64_t measured = 0;    // real measurements
  double seconds = 0;      // spent measuring
  int64_t cache_hits = 0;  // answered from the persistent cost cache
  int64_t memo_hits = 0;   // answered from this process's memo (measured before in this run)
  /// Measurements the model may still make (-1: no budget).
  int64_t budget_left = -1;
  /// Graphs found unmeasurable (their measurement crashed or hung): never measured again.
  int64_t unmeasurable = 0;
};

/// A graph whose measurement crashed or hung (the runtime died, or ran past its deadline) is
/// unmeasurable: an Unavailable error whose message starts with this prefix. A whole-graph
/// model refuses it from then on at once with the same kind of error; the environment drops
/// such graphs from its candidates (env/environment.h).
inline constexpr char kUnmeasurablePrefix[] = "unmeasurable: ";
inline Status Unmeasurable(const std::string& reason) {
  return Unavailable(kUnmeasurablePrefix + reason);
}
inline bool IsUnmeasurable(const Status& s) {
  return s.code() == StatusCode::kUnavailable && s.message().rfind(kUnmeasurablePrefix, 0) == 0;
}

/// A graph found unmeasurable: its structural hash (Graph::Hash; an e2e model's is of the folded
/// graph) and why (the measurement's error).
struct UnmeasurableGraph {
  uint64_t hash = 0;
  std::string reason;
};

/// Estimates or measures what running a graph (and, for an additive model, one operator) costs,
/// in milliseconds. Measured backends memoise, so a model (and a CostTable using it) is not
/// thread-safe: use one per thread. AnalyticCostModel holds no mutable state and may be shared.
class CostModel {
 public:
  virtual ~CostModel() = default;

  /// Short description for reports, e.g. "analytic(h100)" or "cpu(cpu_dev, 2 threads)".
  virtual std::string Name() const = 0;

  /// The unit of its costs, for what reports print: "ms" for every model that estimates or
  /// measures time, what it counts for one that counts (`--cost operators`: "operators").
  virtual std::string unit() const { return "ms"; }

  /// True when a graph costs the sum of its operators' NodeCostMs (the default). A whole-graph
  /// model returns false and overrides GraphCostMs.
  virtual bool additive() const { return true; }

  /// What running the whole graph costs. Additive models: the sum of NodeCostMs over its nodes.
  /// Errors: an operator (or the graph) the model cannot cost; ResourceExhausted when a measured
  /// model's measurement budget is spent (searches stop there: StopReason::kMeasureBudget).
  virtual StatusOr<double> GraphCostMs(const Graph& graph);

  /// True when an operator's cost depends on its neighbours as well (which operators feed it and
  /// use it: what a runtime's fusions depend on), not on the operator alone. CostTable then
  /// re-costs, besides what a diff adds, every operator within two hops of it (views looked
  /// through), so that its totals stay those of Build.
  virtual bool context_dependent() const { return false; }

  /// The real measurements made so far (all zero for a model that measures nothing).
  virtual MeasurementCounts measurements() const { return {}; }

  /// Cost of node `id` of `graph` on its own: 0 for leaves, views and weight-only operators, the
  /// backend's cost otherwise. Whether `id` is weight-only is found by walking its ancestors
  /// (rules::IsWeightOnly): to cost many nodes, use CostTable, which carries that flag.
  /// Errors: `id` is not a live node, or the backend cannot cost the operator.
  StatusOr<double> NodeCostMs(const Graph& graph, NodeId id);

  /// As above, with the weight-only flag supplied by the caller (CostTable does).
  StatusOr<double> NodeCostMs(const Graph& graph, NodeId id, bool weight_only);

 protected:
  /// Cost of operator `node` of `graph`, which is neither a leaf, a view nor weight-only.
  /// Additive models implement it; the default (for whole-graph models) is Unimplemented.
  virtual StatusOr<double> OpCostMs(const Graph& graph, const Node& node);
};

/// model.GraphCostMs(graph).
StatusOr<double> GraphCostMs(CostModel& model, const Graph& graph);

// ---------------------------------------------------------------------------- CostTable

/// Per-node costs of one graph, kept current through the diffs of its rewrites, so that a
/// candidate's cost is total - removed + added in O(|diff|).
///
/// Use: Build on the current graph G. For a candidate, copy G, apply the rewrite to the copy
/// (rules::ApplyMatch returns its GraphDiff) and ask CostAfterMs(copy, diff). When the search
/// moves to the candidate, Apply(copy, diff) and keep the copy as the current graph.
///
/// Exactness: a rewrite re-points consumers without changing their input types, so only added
/// nodes and consumers whose weight-only status changed need costing; the latter are found by
/// following the users of added nodes (transitively while the status keeps changing). A rewrite
/// that re-points a consumer to an *existing* value of different weight-only status (never the
/// case for a semantics-preserving rule on real inputs) is not seen: Build afresh after such edits.
///
/// With a model that is not additive, node entries hold 0 ms (and the weight-only flags) and the
/// total is the model's GraphCostMs: a candidate is costed whole. With a context-dependent model
/// (CostModel::context_dependent), the operators near the diff are re-costed as well: the table
/// keeps each node's producers to find the neighbours of what a diff removes.
class CostTable {
 public:
  /// Costs every node of `graph`. `model` must outlive the table.
  static StatusOr<CostTable> Build(CostModel& model, const Graph& graph);

  /// Total cost of the graph the table describes (sum of node costs, or the whole-graph cost).
  double total_ms() const { return total_ms_; }
  /// Cost recorded for node `id`; 0 for an id the table does not hold.
  double node_ms(NodeId id) const { return Holds(id) ? cost_[id] : 0.0; }
  /// Weight-only flag recorded for `id`; false for an id the table does not hold.
  bool weight_only(NodeId id) const { return Holds(id) && state_[id] == kWeightOnly; }
  /// True when the table holds node `id`.
  bool Holds(NodeId id) const { return id < state_.size() && state_[id] != kAbsent; }
  /// Number of nodes held.
  size_t size() const { return size_; }
  CostModel& model() const { return *model_; }

  /// Change in total cost when the table's graph becomes `after` through `diff` (the diff of the
  /// edits that turned a copy of the table's graph into `after`): added - removed, costing only
  /// the nodes of the diff (and consumers whose weight-only status changed). The table is
  /// unchanged. Errors: a diff that does not fit the table (a removed node it does not hold, an
  /// added node it holds or that `after` lacks), or a node the model cannot cost.
  StatusOr<double> DiffCostMs(const Graph& after, const GraphDiff& diff) const;

  /// A node whose cost entry a diff sets: an added node, or a consumer whose weight-only status
  /// changed.
  struct NodeCost {
    NodeId id;
    double cost_ms;
    bool weight_only;
  };
  /// As DiffCostMs, and lists the entries the diff sets (in `updates`, replacing its contents).
  StatusOr<double> DiffCostMs(const Graph& after, const GraphDiff& diff,
                              std::vector<NodeCost>* updates) const;

  /// The entries DiffCostMs would list, with their weight-only flags but every cost 0, costing
  /// nothing: what a candidate's structure says before it is evaluated (a ranker of candidates
  /// reads it, env/candidate_ranker.h). Errors: a diff that does not fit the table.
  StatusOr<std::vector<NodeCost>> UncostedUpdates(const Graph& after, const GraphDiff& diff) const;

  /// total_ms() + DiffCostMs(after, diff).
  StatusOr<double> CostAfterMs(const Graph& after, const GraphDiff& diff) const;

  /// Makes the table describe `after` (see DiffCostMs). On error the table is unchanged.
  Status Apply(const Graph& after, const GraphDiff& diff);

 private:
  enum State : uint8_t { kAbsent = 0, kPresent = 1, kWeightOnly = 2 };
  using Update = NodeCost;
  struct Change {
    double delta = 0;
    std::vector<Update> updates;  // added nodes and re-costed consumers
  };

  explicit CostTable(CostModel& model) : model_(&model) {}
  /// With `cost` false, nothing is costed: the updates carry their flags and cost 0.
  StatusOr<Change> ComputeChange(const Graph& after, const GraphDiff& diff, bool cost = true) const;
  /// A context-dependent model's re-costing of the held operators near `diff` (see the class
  /// comment) into `change`; `updated` indexes change.updates by node.
  Status RecostContext(const Graph& after, const GraphDiff& diff, Change& change,
                       std::unordered_map<NodeId, size_t>& updated) const;
  void RecordProducers(const Graph& graph, NodeId id);

  CostModel* model_;
  std::vector<double> cost_;    // by NodeId
  std::vector<uint8_t> state_;  // State by NodeId
  /// A context-dependent model's: each held node's producers, by NodeId.
  std::vector<std::vector<NodeId>> producers_;
  size_t size_ = 0;
  double total_ms_ = 0;
};

}  // namespace rewire

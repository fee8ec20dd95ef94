#pragma once
// An e-graph over rewire's IR: hash-consed e-nodes grouped into e-classes by a union-find, kept
// congruent by egg's deferred rebuilding (Willsey et al., POPL'21).
//
// An e-class is one value (a tensor of fixed type) or, for an operator with several outputs
// (Split, a multi-output Opaque), a *tuple*: its outputs are read through Project e-nodes (one
// value class per output index), so that every operand of an e-node is exactly one e-class.
// E-node kinds:
//   leaf     an Input, Weight or Constant of the input graph (by node id)
//   op       an operator with canonical attributes (interned) over operand classes
//   opaque   an Opaque node of the input graph (by node id): kept distinct, never rewritten
//   project  output `index` of a tuple class
//
// Analysis kept per class: the output types (equal for every member; unions of different types
// are refused by the callers) and *weight-only*: the class holds an e-node computed from Weights
// and Constants only (the meaning of rules::MatchIndex::WeightOnly), which is what `is_weight`
// reads and what extraction folds.
//
// Blacklisted e-nodes (cycle filtering, env/eqsat/cycles.h) stay in the e-graph but are neither
// matched nor extracted. Not thread-safe: Find() compresses paths.

#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/graph.h"

namespace rewire::eqsat {

using ClassId = uint32_t;
using ENodeId = uint32_t;
inline constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

enum class ENodeKind : uint8_t { kLeaf, kOp, kOpaque, kProject };

struct ENode {
  ENodeKind kind = ENodeKind::kOp;
  OpType op = OpType::kOpaque;  // kLeaf: Input/Weight/Constant; kOp: the operator
  uint32_t attrs = 0;           // kOp: index into EGraph::attrs()
  uint32_t aux = 0;             // kLeaf, kOpaque: the input graph's node id; kProject: output index
  std::vector<ClassId> children;
};

class EGraph {
 public:
  /// One class per value of `graph` (identical operators share one e-node); the graph's outputs
  /// are the roots. Errors: a graph that does not validate.
  static StatusOr<EGraph> FromGraph(const Graph& graph);

  /// Adds `seed`, a graph another search reached from the input (it computes the same outputs):
  /// its operators join the e-graph (identical ones share e-nodes with the input's) and each of
  /// its outputs' classes is merged with the input's root of that name, so that the e-graph
  /// starts where that search went as well as from the input. Rebuilds. Errors: a seed that does
  /// not validate, has a leaf or opaque operator that is not the input's (same node id, op, name
  /// and types: rewrites keep them), an output the input does not have, or a type that differs.
  Status AddSeed(const Graph& seed);

  // ---------------------------------------------------------------- adding and merging
  /// Adds op(children; attrs): attributes are canonicalised and the output types inferred from
  /// the children's types. Returns the class of the value (one output) or of the tuple (several).
  /// An e-node already present is not added again. Errors: a tuple child, a type error.
  StatusOr<ClassId> AddOp(OpType op, Attrs attrs, const std::vector<ClassId>& children);
  /// The value class of output `index` of tuple class `tuple`, added when absent. Errors: `tuple`
  /// is not a tuple or has no such output.
  StatusOr<ClassId> AddProject(ClassId tuple, uint32_t index);
  /// The class holding Project(index, tuple), or kNone.
  ClassId FindProject(ClassId tuple, uint32_t index) const;
  /// Merges two classes (their types must be equal; callers check). False when already one.
  /// The e-graph is congruent again only after Rebuild().
  bool Union(ClassId a, ClassId b);
  /// Restores congruence (e-nodes whose operands became equal are merged) and the weight-only
  /// analysis after unions.
  void Rebuild();

  // ---------------------------------------------------------------- queries
  /// The canonical id of class `c`.
  ClassId Find(ClassId c) const;
  /// Live e-nodes (duplicates merged by rebuilding are dead).
  size_t num_nodes() const { return live_nodes_; }
  /// Canonical classes.
  size_t num_classes() const { return live_classes_; }
  /// One past the largest e-node id (ids are creation order: a larger id is newer).
  ENodeId node_bound() const { return static_cast<ENodeId>(nodes_.size()); }
  /// One past the largest class id.
  ClassId class_bound() const { return static_cast<ClassId>(classes_.size()); }
  const ENode& node(ENodeId n) const { return nodes_[n]; }
  bool Live(ENodeId n) const { return live_[n]; }
  /// The canonical class of e-node `n`.
  ClassId ClassOf(ENodeId n) const { return Find(node_class_[n]); }
  /// Live e-nodes of canonical class `c` (call Find first).
  const std::vector<ENodeId>& Nodes(ClassId c) const { return classes_[c].nodes; }
  /// E-nodes reading class `c` (canonical), possibly dead or repeated: filter with Live().
  const std::vector<ENodeId>& Parents(ClassId c) const { return classes_[c].parents; }
  /// Output types of class `c` (one for a value class).
  const std::vector<TensorType>& Types(ClassId c) const { return classes_[Find(c)].types; }
  bool IsTuple(ClassId c) const { return classes_[Find(c)].tuple; }
  bool WeightOnly(ClassId c) const { return classes_[Find(c)].weight_only; }
  /// E-node `n` is computed from Weights and Constants only (its operand classes are).
  bool NodeWeightOnly(ENodeId n) const;
  /// Every op e-node of type `op` ever added (filter with Live()).
  const std::vector<ENodeId>& NodesOfOp(OpType op) const { return by_op_[static_cast<size_t>(op)]; }
  const Attrs& attrs(uint32_t id) const { return attrs_[id]; }
  /// Canonical classes in increasing id order.
  std::vector<ClassId> Classes() const;

  /// The graph the e-graph was built from (leaves and opaque nodes refer to it).
  const Graph& input() const { return input_; }
  struct Root {
    std::string name;
    ClassId cls;
  };
  /// The graph's outputs, in order (classes possibly not canonical: Find them).
  const std::vector<Root>& roots() const { return roots_; }
  /// The input graph node an op e-node was built from, or kNoNode for one a rewrite added.
  NodeId Origin(ENodeId n) const { return origin_[n]; }

  // ---------------------------------------------------------------- blacklist
  bool Blacklisted(ENodeId n) const { return blacklisted_[n]; }
  void Blacklist(ENodeId n);
  size_t num_blacklisted() const { return num_blacklisted_; }
  /// Live, not blacklisted.
  bool Usable(ENodeId n) const { return live_[n] && !blacklisted_[n]; }

  // ---------------------------------------------------------------- costs
  /// Cost of running e-node `n` as its operator on its classes' types (not counting the
  /// weight-only rule), once set by SetNodeCost; negative until then. Copied with the e-graph.
  double NodeCost(ENodeId n) const { return cost_[n]; }
  void SetNodeCost(ENodeId n, double ms) { cost_[n] = ms; }

  /// An estimate of the memory the e-graph holds, in bytes.
  size_t MemoryBytes() const;

 private:
  struct ClassData {
    std::vector<ENodeId> nodes;
    std::vector<ENodeId> parents;
    std::vector<TensorType> types;
    bool tuple = false;
    bool weight_only = false;
    bool dirty = false;  // nodes may hold dead e-nodes
  };

  uint64_t HashOf(const ENode& n) const;
  ENodeId Lookup(const ENode& n) const;
  void EraseHash(ENodeId n);
  uint32_t InternAttrs(Attrs attrs);
  /// Adds `n` (operands canonical, not present yet) in a new class of the given types.
  ClassId Insert(ENode n, std::vector<TensorType> types, NodeId origin);
  void Repair(ClassId c, std::vector<ClassId>* touched);
  Status AddGraphNode(const Graph& graph, const Node& node,
                      std::unordered_map<uint64_t, ClassId>* values);
  /// Records the class of each output of graph node `node` (its own for one output, a Project
  /// of it for each of several) in `values`, by ValueKey.
  Status BindOutputs(const Node& node, ClassId cls, std::unordered_map<uint64_t, ClassId>* values);

  Graph input_;
  std::vector<Root> roots_;
  std::vector<ENode> nodes_;
  std::vector<ClassId> node_class_;
  std::vector<bool> live_;
  std::vector<bool> blacklisted_;
  std::vector<NodeId> origin_;
  std::vector<double> cost_;
  mutable std::vector<ClassId> parent_;  // union-find
  std::vector<ClassData> classes_;
  std::unordered_multimap<uint64_t, ENodeId> hashcons_;
  std::vector<Attrs> attrs_;
  std::unordered_multimap<uint64_t, uint32_t> attrs_index_;
  std::vector<std::vector<ENodeId>> by_op_;
  std::vector<ClassId> pending_;  // classes merged since the last rebuild
  size_t live_nodes_ = 0;
  size_t live_classes_ = 0;
  size_t num_blacklisted_ = 0;
};

}  // namespace rewire::eqsat

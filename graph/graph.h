#pragma once
// The tensor-graph IR: a DAG of operator nodes whose edges carry typed tensors.
//
// A Graph is a value: copying one shares its immutable node records (copy-on-write), so a copy
// costs one pointer per node. Nodes are built through Graph::Add*, which validates the operator
// and infers its output types; the graph is unchanged when an Add* fails. Existing nodes are
// changed only through graph::Rewriter (graph/rewriter.h), which records the diff.

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/attrs.h"
#include "graph/op.h"
#include "graph/status.h"
#include "graph/types.h"

namespace rewire {

using NodeId = uint32_t;
inline constexpr NodeId kNoNode = std::numeric_limits<NodeId>::max();

/// One output of one node: the source of an edge.
struct ValueRef {
  NodeId node = kNoNode;
  uint32_t index = 0;

  bool valid() const { return node != kNoNode; }
  bool operator==(const ValueRef& o) const { return node == o.node && index == o.index; }
  bool operator!=(const ValueRef& o) const { return !(*this == o); }
  bool operator<(const ValueRef& o) const {
    return node != o.node ? node < o.node : index < o.index;
  }
};

/// One consumer of a value: node `node` reads it as its input number `operand`.
struct Use {
  NodeId node;
  uint32_t operand;
  bool operator==(const Use& o) const { return node == o.node && operand == o.operand; }
};

/// How a Weight without data is filled when its data is first needed: uniform in [lo, hi] from
/// a deterministic generator seeded by `seed` (see graph/weights.h).
struct WeightInit {
  float lo = -0.1f;
  float hi = 0.1f;
  uint64_t seed = 0;
};

/// One operator instance. Immutable once shared between graphs.
struct Node {
  NodeId id = kNoNode;
  OpType op = OpType::kOpaque;
  std::string name;
  Attrs attrs;
  std::vector<ValueRef> inputs;
  std::vector<TensorType> outputs;
  /// Payload of Weight and Constant nodes; null for a Weight that is initialised lazily.
  HostTensorPtr data;
  /// Consumers of each output, in the order they were connected.
  std::vector<std::vector<Use>> users;

  bool IsLeaf() const {
    return inputs.empty() &&
           (op == OpType::kInput || op == OpType::kWeight || op == OpType::kConstant);
  }
  /// For an Opaque node, its ONNX type; otherwise the op's rewire name.
  std::string TypeName() const;
};

/// A named graph output.
struct GraphOutput {
  std::string name;
  ValueRef value;
};

class Rewriter;

class Graph {
 public:
  Graph() = default;
  /// Shares the node records; leaves room for the nodes a rewrite adds, so that editing a copy
  /// costs what the edit touches, not a reallocation of the node table.
  Graph(const Graph& other);
  Graph& operator=(const Graph& other);
  Graph(Graph&&) noexcept = default;
  Graph& operator=(Graph&&) noexcept = default;

  // ---------------------------------------------------------------- construction
  /// Adds a graph input of the given type. Names of inputs must be unique.
  StatusOr<NodeId> AddInput(const std::string& name, TensorType type);
  /// Adds a Weight whose data is generated on first use from `init`.
  StatusOr<NodeId> AddWeight(const std::string& name, Shape shape, WeightInit init);
  /// Adds a Weight with the given data (e.g. an ONNX initializer).
  StatusOr<NodeId> AddWeightData(const std::string& name, HostTensorPtr data);
  /// Adds a Constant with the given data.
  StatusOr<NodeId> AddConstant(const std::string& name, HostTensorPtr data);
  /// Adds an operator. Validates arity and attributes and infers the output types; on error
  /// the graph is unchanged and the Status names the op and the reason.
  StatusOr<NodeId> AddOp(OpType op, const std::vector<ValueRef>& inputs, Attrs attrs = {},
                         const std::string& name = "");
  /// Adds an op imported from ONNX that rewire does not model; its output types are given.
  StatusOr<NodeId> AddOpaque(const std::string& onnx_op, const std::string& onnx_domain,
                             const std::vector<ValueRef>& inputs, Attrs attrs,
                             std::vector<TensorType> output_types, const std::string& name = "");
  /// Marks `value` as a graph output called `name` (unique).
  Status AddOutput(const std::string& name, ValueRef value);

  // ---------------------------------------------------------------- queries
  /// True when `id` names a node that exists (was added and not removed).
  bool Contains(NodeId id) const { return id < nodes_.size() && nodes_[id] != nullptr; }
  /// The node `id`; `id` must be Contains().
  const Node& node(NodeId id) const;
  /// Type of a value; `v` must refer to an existing node and output.
  const TensorType& type(ValueRef v) const;
  /// Number of live nodes.
  size_t num_nodes() const { return live_nodes_; }
  /// One past the largest node id ever used; ids of removed nodes are not reused.
  NodeId id_bound() const { return static_cast<NodeId>(nodes_.size()); }
  /// Ids of live nodes in increasing order.
  std::vector<NodeId> NodeIds() const;
  /// Graph inputs (Input nodes) in the order they were added.
  const std::vector<NodeId>& inputs() const { return inputs_; }
  const std::vector<GraphOutput>& outputs() const { return outputs_; }
  /// Finds a live node by name (leaves first, then operators); kNoNode when none.
  NodeId FindNode(const std::string& name) const;

  /// Live nodes in a topological order (producers first), deterministic for equal graphs.
  std::vector<NodeId> TopologicalOrder() const;
  /// Number of live nodes of each op type (opaque ops counted as kOpaque).
  std::map<OpType, int> OpCounts() const;
  /// Number of non-leaf nodes (the operators that run).
  int NumOperators() const;
  /// Total elements in Weight nodes.
  int64_t NumParameters() const;

  /// Re-checks every invariant: arities, edge types against re-inferred types, user lists,
  /// acyclicity, unique names of inputs and outputs. Ok for every graph built through the API.
  Status Validate() const;

  /// Canonical structural hash: independent of node ids and insertion order; depends on ops,
  /// attributes, types, wiring, leaf names and output names. Dead nodes do not contribute.
  uint64_t Hash() const;

 private:
  friend class Rewriter;
  StatusOr<NodeId> Insert(Node node);
  Node& Mutable(NodeId id);  // copy-on-write
  Status CheckValue(ValueRef v, const char* what) const;
  Status CheckLeafName(const std::string& name) const;
  void SetLeafName(const std::string& name, NodeId id);  // copy-on-write
  NodeId FindLeaf(const std::string& name) const;

  std::vector<std::shared_ptr<Node>> nodes_;
  std::vector<NodeId> inputs_;
  std::vector<GraphOutput> outputs_;
  size_t live_nodes_ = 0;
  /// Leaf name -> node, shared between copies until one of them adds or removes a leaf.
  std::shared_ptr<std::unordered_map<std::string, NodeId>> leaf_names_;
};

/// Infers the output types of `op` from its attributes and input types, validating both.
/// The error message says what is wrong with which input or attribute.
StatusOr<std::vector<TensorType>> InferOutputTypes(OpType op, const Attrs& attrs,
                                                   const std::vector<TensorType>& inputs);

/// As InferOutputTypes, and rewrites `attrs` into canonical form (defaults filled, negative axes
/// normalised, Reshape shapes resolved, unknown attributes rejected), so that equal operators
/// have equal attributes whatever way they were written.
StatusOr<std::vector<TensorType>> InferAndCanonicalize(OpType op, Attrs* attrs,
                                                       const std::vector<TensorType>& inputs);

/// Graphviz DOT text for the graph: one box per operator, edges labelled with shapes.
std::string ToDot(const Graph& graph, const std::string& title = "rewire");

}  // namespace rewire

#pragma once
// The one API through which existing graph nodes change. Every edit is recorded as a diff
// (nodes removed and added) and reported to an optional listener.

#include <vector>

#include "graph/graph.h"

namespace rewire {

/// What one or more edits changed. A node that was added and then removed within the same diff
/// appears in neither list.
struct GraphDiff {
  std::vector<NodeId> removed;
  std::vector<NodeId> added;
  bool empty() const { return removed.empty() && added.empty(); }
};

/// Observes edits as they happen (e.g. incremental cost or GNN encoding).
class RewriteListener {
 public:
  virtual ~RewriteListener() = default;
  virtual void OnNodeAdded(const Graph& graph, NodeId id) {}
  /// Called just before `node` leaves the graph; it is still readable.
  virtual void OnNodeRemoved(const Graph& graph, const Node& node) {}
  /// Called after input `operand` of `user` was re-pointed to another value.
  virtual void OnInputChanged(const Graph& graph, NodeId user, uint32_t operand) {}
};

class Rewriter {
 public:
  explicit Rewriter(Graph& graph, RewriteListener* listener = nullptr)
      : graph_(graph), listener_(listener) {}

  const Graph& graph() const { return graph_; }

  /// Adds an operator as Graph::AddOp does, recording it in the diff.
  StatusOr<NodeId> AddOp(OpType op, const std::vector<ValueRef>& inputs, Attrs attrs = {},
                         const std::string& name = "");
  /// Adds a Constant or a Weight holding `data`, recorded in the diff.
  StatusOr<NodeId> AddConstant(const std::string& name, HostTensorPtr data);
  StatusOr<NodeId> AddWeightData(const std::string& name, HostTensorPtr data);

  /// Re-points every consumer of `from` (and graph outputs) to `to`. The types must be equal
  /// and `to` must not depend on `from`'s consumers (that would create a cycle); on error the
  /// graph is unchanged. The cycle check walks the ancestors of `to`; a caller that has already
  /// proven the edit acyclic (the rule matcher does, in time bounded by the match) passes
  /// `check_cycles = false` to keep the edit proportional to the number of uses.
  Status ReplaceAllUses(ValueRef from, ValueRef to, bool check_cycles = true);
  /// Re-points one input of one node. Same checks as ReplaceAllUses.
  Status SetInput(NodeId user, uint32_t operand, ValueRef to, bool check_cycles = true);
  /// Removes a node that has no consumers and is not a graph output or graph input.
  Status RemoveNode(NodeId id);
  /// Removes `id` if unused, then every producer that became unused through that, transitively.
  /// Graph inputs are never removed.
  void RemoveIfDead(NodeId id);

  /// The diff accumulated since construction or the last TakeDiff().
  GraphDiff TakeDiff();
  const GraphDiff& diff() const { return diff_; }

 private:
  bool DependsOn(NodeId node, NodeId ancestor) const;

  Graph& graph_;
  RewriteListener* listener_;
  GraphDiff diff_;
};

}  // namespace rewire

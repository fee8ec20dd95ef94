#include "kernels/fold.h"

#include <map>

#include <fmt/format.h>

#include "graph/hash.h"
#include "graph/rules/matcher.h"
#include "graph/weights.h"
#include "kernels/executor.h"

namespace rewire {
namespace {

bool IsLeaf(const Node& n) {
  return n.op == OpType::kWeight || n.op == OpType::kConstant || n.op == OpType::kInput;
}

}  // namespace

StatusOr<FoldResult> FoldWeightSubgraphs(Graph& graph, RewriteListener* listener) {
  const rules::MatchIndex index(graph);
  // Frontier: outputs of weight-only operators read by something that is not weight-only (or
  // that are graph outputs).
  std::vector<ValueRef> frontier;
  for (NodeId id : graph.TopologicalOrder()) {
    const Node& n = graph.node(id);
    if (IsLeaf(n) || !index.WeightOnly(id)) continue;
    for (uint32_t o = 0; o < n.outputs.size(); ++o) {
      bool escapes = false;
      for (const Use& u : n.users[o]) escapes = escapes || !index.WeightOnly(u.node);
      for (const GraphOutput& go : graph.outputs())
        escapes = escapes || go.value == ValueRef{id, o};
      if (escapes) frontier.push_back(ValueRef{id, o});
    }
  }
  FoldResult result;
  if (frontier.empty()) return result;

  // One graph holding the weight-only ancestors of the frontier, evaluated in one run.
  Graph sub;
  std::map<NodeId, NodeId> to_sub;
  std::vector<NodeId> stack;
  for (const ValueRef& v : frontier) stack.push_back(v.node);
  std::vector<NodeId> needed;
  std::map<NodeId, bool> seen;
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    if (seen[id]) continue;
    seen[id] = true;
    needed.push_back(id);
    for (const ValueRef& in : graph.node(id).inputs) stack.push_back(in.node);
  }
  std::map<NodeId, bool> is_needed;
  for (NodeId id : needed) is_needed[id] = true;
  for (NodeId id : graph.TopologicalOrder()) {
    if (!is_needed.count(id)) continue;
    const Node& n = graph.node(id);
    StatusOr<NodeId> added = Status();
    if (n.op == OpType::kWeight) {
      added = sub.AddWeightData(n.name, MaterializeData(n));
    } else if (n.op == OpType::kConstant) {
      added = sub.AddConstant(n.name, n.data);
    } else {
      std::vector<ValueRef> ins;
      for (const ValueRef& in : n.inputs) ins.push_back(ValueRef{to_sub.at(in.node), in.index});
      added = sub.AddOp(n.op, ins, n.attrs, n.name);
    }
    if (!added.ok()) return added.status().WithContext("folding weights");
    to_sub[id] = *added;
  }
  for (size_t i = 0; i < frontier.size(); ++i) {
    REWIRE_RETURN_IF_ERROR(sub.AddOutput("f" + std::to_string(i),
                                         ValueRef{to_sub.at(frontier[i].node), frontier[i].index}));
  }
  REWIRE_ASSIGN_OR_RETURN(TensorMap values, RunGraph(sub, {}));

  const int ops_before = graph.NumOperators();
  Rewriter rw(graph, listener);
  for (size_t i = 0; i < frontier.size(); ++i) {
    const HostTensorPtr data = values.at("f" + std::to_string(i));
    const Node& producer = graph.node(frontier[i].node);
    // A name derived from what was folded, unique in this graph.
    std::string name =
        fmt::format("folded.{}.{:016x}",
                    producer.name.empty() ? std::string(OpName(producer.op)) : producer.name,
                    HashCombine(graph.Hash(), i));
    StatusOr<NodeId> w = data->type.dtype == DType::kFloat32 ? rw.AddWeightData(name, data)
                                                             : rw.AddConstant(name, data);
    if (!w.ok()) return w.status().WithContext("folding weights");
    REWIRE_RETURN_IF_ERROR(rw.ReplaceAllUses(frontier[i], ValueRef{*w, 0}, /*check_cycles=*/false));
    ++result.new_weights;
  }
  for (const ValueRef& v : frontier) rw.RemoveIfDead(v.node);
  result.folded_ops = ops_before - graph.NumOperators();
  return result;
}

}  // namespace rewire

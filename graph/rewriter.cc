#include "graph/rewriter.h"

#include <algorithm>
#include <unordered_set>

namespace rewire {

namespace {
void Erase(std::vector<NodeId>& v, NodeId id) {
  v.erase(std::remove(v.begin(), v.end(), id), v.end());
}
}  // namespace

StatusOr<NodeId> Rewriter::AddOp(OpType op, const std::vector<ValueRef>& inputs, Attrs attrs,
                                 const std::string& name) {
  REWIRE_ASSIGN_OR_RETURN(NodeId id, graph_.AddOp(op, inputs, std::move(attrs), name));
  diff_.added.push_back(id);
  if (listener_) listener_->OnNodeAdded(graph_, id);
  return id;
}

StatusOr<NodeId> Rewriter::AddConstant(const std::string& name, HostTensorPtr data) {
  REWIRE_ASSIGN_OR_RETURN(NodeId id, graph_.AddConstant(name, std::move(data)));
  diff_.added.push_back(id);
  if (listener_) listener_->OnNodeAdded(graph_, id);
  return id;
}

StatusOr<NodeId> Rewriter::AddWeightData(const std::string& name, HostTensorPtr data) {
  REWIRE_ASSIGN_OR_RETURN(NodeId id, graph_.AddWeightData(name, std::move(data)));
  diff_.added.push_back(id);
  if (listener_) listener_->OnNodeAdded(graph_, id);
  return id;
}

bool Rewriter::DependsOn(NodeId node, NodeId ancestor) const {
  if (node == ancestor) return true;
  std::vector<NodeId> stack{node};
  std::unordered_set<NodeId> seen{node};
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    for (const ValueRef& in : graph_.node(id).inputs) {
      if (in.node == ancestor) return true;
      if (seen.insert(in.node).second) stack.push_back(in.node);
    }
  }
  return false;
}

Status Rewriter::SetInput(NodeId user, uint32_t operand, ValueRef to, bool check_cycles) {
  if (!graph_.Contains(user)) return InvalidArgument("SetInput: node does not exist");
  const Node& u = graph_.node(user);
  if (operand >= u.inputs.size())
    return InvalidArgument("SetInput: node has no input " + std::to_string(operand));
  REWIRE_RETURN_IF_ERROR(graph_.CheckValue(to, "SetInput target"));
  const ValueRef from = u.inputs[operand];
  if (from == to) return Status::Ok();
  if (graph_.type(from) != graph_.type(to)) {
    return InvalidArgument("SetInput: type " + graph_.type(to).ToString() + " differs from " +
                           graph_.type(from).ToString());
  }
  if (check_cycles && DependsOn(to.node, user)) {
    return InvalidArgument("SetInput: the edit would create a cycle");
  }
  auto& old_uses = graph_.Mutable(from.node).users[from.index];
  old_uses.erase(std::remove(old_uses.begin(), old_uses.end(), Use{user, operand}), old_uses.end());
  graph_.Mutable(to.node).users[to.index].push_back(Use{user, operand});
  graph_.Mutable(user).inputs[operand] = to;
  if (listener_) listener_->OnInputChanged(graph_, user, operand);
  return Status::Ok();
}

Status Rewriter::ReplaceAllUses(ValueRef from, ValueRef to, bool check_cycles) {
  REWIRE_RETURN_IF_ERROR(graph_.CheckValue(from, "ReplaceAllUses source"));
  REWIRE_RETURN_IF_ERROR(graph_.CheckValue(to, "ReplaceAllUses target"));
  if (from == to) return Status::Ok();
  if (graph_.type(from) != graph_.type(to)) {
    return InvalidArgument("ReplaceAllUses: type " + graph_.type(to).ToString() + " differs from " +
                           graph_.type(from).ToString());
  }
  const std::vector<Use> uses = graph_.node(from.node).users[from.index];
  if (check_cycles) {
    for (const Use& u : uses) {
      if (DependsOn(to.node, u.node))
        return InvalidArgument("ReplaceAllUses: the edit would create a cycle");
    }
  }
  for (const Use& u : uses)
    REWIRE_RETURN_IF_ERROR(SetInput(u.node, u.operand, to, /*check_cycles=*/false));
  for (GraphOutput& o : graph_.outputs_) {
    if (o.value == from) o.value = to;
  }
  return Status::Ok();
}

Status Rewriter::RemoveNode(NodeId id) {
  if (!graph_.Contains(id)) return InvalidArgument("RemoveNode: node does not exist");
  const Node& n = graph_.node(id);
  if (n.op == OpType::kInput) return InvalidArgument("RemoveNode: graph inputs are never removed");
  for (const auto& uses : n.users) {
    if (!uses.empty()) return InvalidArgument("RemoveNode: node '" + n.name + "' still has users");
  }
  for (const GraphOutput& o : graph_.outputs()) {
    if (o.value.node == id)
      return InvalidArgument("RemoveNode: node is graph output '" + o.name + "'");
  }
  if (listener_) listener_->OnNodeRemoved(graph_, n);
  for (uint32_t k = 0; k < n.inputs.size(); ++k) {
    const ValueRef in = n.inputs[k];
    auto& uses = graph_.Mutable(in.node).users[in.index];
    uses.erase(std::remove(uses.begin(), uses.end(), Use{id, k}), uses.end());
  }
  graph_.nodes_[id].reset();
  --graph_.live_nodes_;
  if (std::find(diff_.added.begin(), diff_.added.end(), id) != diff_.added.end()) {
    Erase(diff_.added, id);
  } else {
    diff_.removed.push_back(id);
  }
  return Status::Ok();
}

void Rewriter::RemoveIfDead(NodeId id) {
  std::vector<NodeId> work{id};
  while (!work.empty()) {
    const NodeId cur = work.back();
    work.pop_back();
    if (!graph_.Contains(cur)) continue;
    const Node& n = graph_.node(cur);
    std::vector<NodeId> producers;
    for (const ValueRef& in : n.inputs) producers.push_back(in.node);
    if (RemoveNode(cur).ok()) {
      for (NodeId p : producers) work.push_back(p);
    }
  }
}

GraphDiff Rewriter::TakeDiff() {
  GraphDiff d = std::move(diff_);
  diff_ = GraphDiff{};
  return d;
}

}  // namespace rewire

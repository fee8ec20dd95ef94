#include "cost/cost_model.h"

#include <functional>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "graph/hash.h"
#include "graph/rules/matcher.h"

namespace rewire {

// ---------------------------------------------------------------------------- helpers

bool IsViewOp(OpType op) { return GetOpInfo(op).cost == CostClass::kView; }

namespace {

std::string Hex(uint64_t v) { return fmt::format("{:016x}", v); }

std::string FloatText(float f) { return fmt::format("{:.9g}", static_cast<double>(f)); }

uint64_t TensorHash(const HostTensor& t) {
  return HashCombine(HashBytes(t.bytes.data(), t.bytes.size()),
                     HashBytes(t.type.shape.data(), t.type.shape.size() * sizeof(int64_t),
                               static_cast<uint64_t>(t.type.dtype)));
}

/// Full (never elided) text of an attribute value.
void AppendAttrValue(const AttrValue& v, std::string* out) {
  if (const auto* i = std::get_if<int64_t>(&v)) {
    *out += std::to_string(*i);
  } else if (const auto* f = std::get_if<float>(&v)) {
    *out += FloatText(*f);
  } else if (const auto* s = std::get_if<std::string>(&v)) {
    *out += '"';
    *out += *s;
    *out += '"';
  } else if (const auto* is = std::get_if<Ints>(&v)) {
    *out += '[';
    for (size_t k = 0; k < is->size(); ++k) *out += (k ? "," : "") + std::to_string((*is)[k]);
    *out += ']';
  } else if (const auto* fs = std::get_if<Floats>(&v)) {
    *out += '[';
    for (size_t k = 0; k < fs->size(); ++k) *out += (k ? "," : "") + FloatText((*fs)[k]);
    *out += ']';
  } else if (const auto* t = std::get_if<HostTensorPtr>(&v)) {
    *out += *t ? (*t)->type.ToString() + "#" + Hex(TensorHash(**t)) : std::string("null");
  }
}

}  // namespace

std::string OpSignature(const Graph& graph, const Node& node) {
  std::string key = node.TypeName();
  key += '|';
  bool first = true;
  for (const auto& [name, value] : node.attrs.items()) {
    if (!first) key += ',';
    first = false;
    key += name;
    key += '=';
    AppendAttrValue(value, &key);
  }
  key += "|in=";
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (i) key += ',';
    const ValueRef in = node.inputs[i];
    key += graph.type(in).ToString();
    const Node& producer = graph.node(in.node);
    if (producer.op == OpType::kConstant && producer.data)
      key += "#" + Hex(TensorHash(*producer.data));
  }
  key += "|out=";
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (i) key += ',';
    key += node.outputs[i].ToString();
  }
  return key;
}

// ---------------------------------------------------------------------------- CostModel

StatusOr<double> CostModel::NodeCostMs(const Graph& graph, NodeId id) {
  if (!graph.Contains(id))
    return InvalidArgument("no node " + std::to_string(id) + " in the graph");
  const Node& node = graph.node(id);
  if (node.IsLeaf() || IsViewOp(node.op)) return 0.0;
  return NodeCostMs(graph, id, rules::IsWeightOnly(graph, ValueRef{id, 0}));
}

StatusOr<double> CostModel::NodeCostMs(const Graph& graph, NodeId id, bool weight_only) {
  if (!graph.Contains(id))
    return InvalidArgument("no node " + std::to_string(id) + " in the graph");
  const Node& node = graph.node(id);
  if (node.IsLeaf() || IsViewOp(node.op) || weight_only) return 0.0;
  StatusOr<double> cost = OpCostMs(graph, node);
  if (!cost.ok()) {
    return cost.status().WithContext("cost of node '" + node.name + "' (" + node.TypeName() + ")");
  }
  if (!(*cost >= 0.0)) {  // also rejects NaN
    return Internal(Name() + " gave cost " + std::to_string(*cost) + " ms for node '" + node.name +
                    "'");
  }
  return cost;
}

StatusOr<double> CostModel::GraphCostMs(const Graph& graph) {
  REWIRE_ASSIGN_OR_RETURN(CostTable table, CostTable::Build(*this, graph));
  return table.total_ms();
}

StatusOr<double> CostModel::OpCostMs(const Graph&, const Node& node) {
  return Unimplemented(Name() + " costs whole graphs, not single operators (" + node.TypeName() +
                       ")");
}

StatusOr<double> GraphCostMs(CostModel& model, const Graph& graph) {
  return model.GraphCostMs(graph);
}

// ---------------------------------------------------------------------------- CostTable

namespace {
/// A whole-graph model's cost of `graph`, checked as NodeCostMs checks an operator's.
StatusOr<double> WholeGraphCostMs(CostModel& model, const Graph& graph) {
  REWIRE_ASSIGN_OR_RETURN(const double cost, model.GraphCostMs(graph));
  if (!(cost >= 0.0)) {  // also rejects NaN
    return Internal(model.Name() + " gave cost " + std::to_string(cost) + " ms for a graph");
  }
  return cost;
}
}  // namespace

StatusOr<CostTable> CostTable::Build(CostModel& model, const Graph& graph) {
  CostTable table(model);
  const rules::MatchIndex index(graph);
  table.cost_.assign(graph.id_bound(), 0.0);
  table.state_.assign(graph.id_bound(), kAbsent);
  const bool additive = model.additive();
  for (NodeId id : graph.NodeIds()) {
    const bool weight_only = index.WeightOnly(id);
    double cost = 0;
    if (additive) {
      REWIRE_ASSIGN_OR_RETURN(cost, model.NodeCostMs(graph, id, weight_only));
    }
    table.cost_[id] = cost;
    table.state_[id] = weight_only ? kWeightOnly : kPresent;
    table.total_ms_ += cost;
    ++table.size_;
    if (model.context_dependent()) table.RecordProducers(graph, id);
  }
  if (!additive) {
    REWIRE_ASSIGN_OR_RETURN(table.total_ms_, WholeGraphCostMs(model, graph));
  }
  return table;
}

StatusOr<CostTable::Change> CostTable::ComputeChange(const Graph& after, const GraphDiff& diff,
                                                     bool cost) const {
  Change change;
  for (NodeId id : diff.removed) {
    if (!Holds(id)) {
      return InvalidArgument("diff removes node " + std::to_string(id) +
                             ", which the cost table does not hold");
    }
    if (after.Contains(id)) {
      return InvalidArgument("diff removes node " + std::to_string(id) +
                             ", which the graph still has");
    }
    change.delta -= cost_[id];
  }

  // Weight-only flags as they are in `after`: updated entries first, then the table.
  std::unordered_map<NodeId, size_t> updated;  // id -> index into change.updates
  for (NodeId id : diff.added) {
    if (Holds(id))
      return InvalidArgument("diff adds node " + std::to_string(id) +
                             ", which the cost table already holds");
    if (!after.Contains(id))
      return InvalidArgument("diff adds node " + std::to_string(id) + ", which the graph lacks");
    updated.emplace(id, SIZE_MAX);  // pending
  }
  Status error;
  // Resolves an added node's flag from its producers (added producers first, recursively; the
  // recursion is bounded by the diff's size).
  std::function<bool(NodeId)> flag = [&](NodeId id) -> bool {
    auto it = updated.find(id);
    if (it == updated.end()) return weight_only(id);
    if (it->second != SIZE_MAX) return change.updates[it->second].weight_only;
    const Node& node = after.node(id);
    it->second = SIZE_MAX - 1;  // in progress: a cycle would read "not weight-only"
    const bool wo = WeightOnlyFromInputs(node, [&](NodeId p) {
      auto pit = updated.find(p);
      if (pit != updated.end() && pit->second == SIZE_MAX - 1) return false;
      return flag(p);
    });
    change.updates.push_back(Update{id, 0.0, wo});
    updated[id] = change.updates.size() - 1;
    return wo;
  };
  for (NodeId id : diff.added) flag(id);
  const bool additive = cost && model_->additive();
  for (Update& u : change.updates) {
    if (!additive) continue;
    REWIRE_ASSIGN_OR_RETURN(u.cost_ms, model_->NodeCostMs(after, u.id, u.weight_only));
    change.delta += u.cost_ms;
  }

  // Consumers of added (or re-flagged) nodes whose weight-only status changed.
  std::vector<NodeId> work;
  auto push_users = [&](NodeId id) {
    for (const auto& users : after.node(id).users) {
      for (const Use& use : users) {
        if (!updated.count(use.node)) work.push_back(use.node);
      }
    }
  };
  for (NodeId id : diff.added) push_users(id);
  while (!work.empty()) {
    const NodeId id = work.back();
    work.pop_back();
    if (updated.count(id)) continue;
    if (!Holds(id))
      return InvalidArgument("node " + std::to_string(id) +
                             " is neither in the cost table nor in the diff");
    const bool wo = WeightOnlyFromInputs(after.node(id), [&](NodeId p) {
      auto it = updated.find(p);
      return it == updated.end() ? weight_only(p) : change.updates[it->second].weight_only;
    });
    if (wo == weight_only(id)) continue;
    double node_ms = 0;
    if (additive) {
      REWIRE_ASSIGN_OR_RETURN(node_ms, model_->NodeCostMs(after, id, wo));
    }
    change.delta += node_ms - cost_[id];
    change.updates.push_back(Update{id, node_ms, wo});
    updated[id] = change.updates.size() - 1;
    push_users(id);
  }
  if (cost && !model_->additive()) {
    REWIRE_ASSIGN_OR_RETURN(const double whole, WholeGraphCostMs(*model_, after));
    change.delta = whole - total_ms_;
  }
  if (additive && model_->context_dependent()) {
    REWIRE_RETURN_IF_ERROR(RecostContext(after, diff, change, updated));
  }
  return change;
}

void CostTable::RecordProducers(const Graph& graph, NodeId id) {
  if (producers_.size() < graph.id_bound()) producers_.resize(graph.id_bound());
  std::vector<NodeId>& p = producers_[id];
  p.clear();
  for (const ValueRef& in : graph.node(id).inputs) p.push_back(in.node);
}

Status CostTable::RecostContext(const Graph& after, const GraphDiff& diff, Change& change,
                                std::unordered_map<NodeId, size_t>& updated) const {
  // Breadth-first from the diff, undirected; a step onto a view costs no hop (bounded), so that
  // MatMul -> Reshape -> Add counts as neighbours, as a fusion sees them.
  std::unordered_map<NodeId, int> hops_left;
  std::vector<std::pair<NodeId, int>> queue;
  auto visit = [&](NodeId id, int hops) {
    if (!after.Contains(id)) return;
    auto it = hops_left.find(id);
    if (it != hops_left.end() && it->second >= hops) return;
    hops_left[id] = hops;
    queue.emplace_back(id, hops);
  };
  for (NodeId id : diff.added) visit(id, 2);
  for (NodeId id : diff.removed) {
    if (id < producers_.size())
      for (NodeId p : producers_[id]) visit(p, 1);
  }
  for (size_t q = 0; q < queue.size(); ++q) {
    const auto [id, hops] = queue[q];
    if (hops_left[id] != hops) continue;  // reached again with more hops left
    const Node& node = after.node(id);
    auto step = [&](NodeId next) {
      const int left = IsViewOp(after.node(next).op) ? hops : hops - 1;
      if (left >= 0) visit(next, left);
    };
    for (const ValueRef& in : node.inputs) step(in.node);
    for (const auto& users : node.users)
      for (const Use& u : users) step(u.node);
  }
  for (const auto& [id, hops] : hops_left) {
    (void)hops;
    if (updated.count(id)) continue;  // added, or re-costed for its weight-only flag
    if (!Holds(id)) continue;
    const bool wo = weight_only(id);
    REWIRE_ASSIGN_OR_RETURN(const double node_ms, model_->NodeCostMs(after, id, wo));
    if (node_ms == cost_[id]) continue;
    change.delta += node_ms - cost_[id];
    change.updates.push_back(Update{id, node_ms, wo});
    updated[id] = change.updates.size() - 1;
  }
  return Status::Ok();
}

StatusOr<double> CostTable::DiffCostMs(const Graph& after, const GraphDiff& diff) const {
  REWIRE_ASSIGN_OR_RETURN(Change change, ComputeChange(after, diff));
  return change.delta;
}

StatusOr<double> CostTable::DiffCostMs(const Graph& after, const GraphDiff& diff,
                                       std::vector<NodeCost>* updates) const {
  REWIRE_ASSIGN_OR_RETURN(Change change, ComputeChange(after, diff));
  if (updates) *updates = std::move(change.updates);
  return change.delta;
}

StatusOr<std::vector<CostTable::NodeCost>> CostTable::UncostedUpdates(const Graph& after,
                                                                      const GraphDiff& diff) const {
  REWIRE_ASSIGN_OR_RETURN(Change change, ComputeChange(after, diff, /*cost=*/false));
  return std::move(change.updates);
}

StatusOr<double> CostTable::CostAfterMs(const Graph& after, const GraphDiff& diff) const {
  REWIRE_ASSIGN_OR_RETURN(double delta, DiffCostMs(after, diff));
  return total_ms_ + delta;
}

Status CostTable::Apply(const Graph& after, const GraphDiff& diff) {
  REWIRE_ASSIGN_OR_RETURN(Change change, ComputeChange(after, diff));
  if (after.id_bound() > cost_.size()) {
    cost_.resize(after.id_bound(), 0.0);
    state_.resize(after.id_bound(), kAbsent);
  }
  for (NodeId id : diff.removed) {
    cost_[id] = 0.0;
    state_[id] = kAbsent;
    --size_;
  }
  for (const Update& u : change.updates) {
    if (state_[u.id] == kAbsent) ++size_;
    cost_[u.id] = u.cost_ms;
    state_[u.id] = u.weight_only ? kWeightOnly : kPresent;
  }
  total_ms_ += change.delta;
  if (model_->context_dependent()) {
    // Producers as they are now: of added nodes, and of every live node near the diff (a
    // re-pointed consumer's changed); cheap next to the re-costing above.
    for (NodeId id : diff.removed)
      if (id < producers_.size()) producers_[id].clear();
    std::unordered_set<NodeId> near(diff.added.begin(), diff.added.end());
    for (NodeId id : diff.added)
      for (const auto& users : after.node(id).users)
        for (const Use& u : users) near.insert(u.node);
    for (NodeId id : near)
      if (after.Contains(id)) RecordProducers(after, id);
  }
  return Status::Ok();
}

}  // namespace rewire

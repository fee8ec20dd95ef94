#include "env/features.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "env/environment.h"

namespace rewire {
namespace {

int ActivationIndex(const Node& n) {
  if (!HasFusedActivation(n.op)) return 0;
  const std::string a = n.attrs.GetString("activation", "none");
  if (a == "relu") return 1;
  if (a == "sigmoid") return 2;
  if (a == "tanh") return 3;
  if (a == "gelu") return 4;
  return 0;
}

/// Interns tensor types into rows of scale-free shape features.
class ShapeTable {
 public:
  explicit ShapeTable(std::vector<float>& rows) : rows_(rows) {}

  int32_t Index(const TensorType& t) {
    std::string key;
    key.reserve(8 * (t.shape.size() + 1));
    key.push_back(static_cast<char>(t.dtype));
    for (int64_t d : t.shape) key.append(reinterpret_cast<const char*>(&d), sizeof d);
    auto [it, inserted] = index_.emplace(std::move(key), static_cast<int32_t>(index_.size()));
    if (inserted) Append(t);
    return it->second;
  }

 private:
  void Append(const TensorType& t) {
    const size_t base = rows_.size();
    rows_.resize(base + kShapeFeatures, 0.0f);
    float* row = rows_.data() + base;
    const int rank = static_cast<int>(t.shape.size());
    row[std::min(rank, kMaxFeatureRank)] = 1.0f;
    int64_t largest = 1;
    for (int64_t d : t.shape) largest = std::max(largest, d);
    const int kept = std::min(rank, kMaxFeatureRank);
    for (int i = 0; i < kept; ++i) {
      // Right-aligned: the last dim of every tensor sits in the same column.
      const int64_t d = t.shape[rank - kept + i];
      const int col = kMaxFeatureRank - kept + i;
      row[kMaxFeatureRank + 1 + col] = static_cast<float>(d) / static_cast<float>(largest);
      row[2 * kMaxFeatureRank + 1 + col] = d == 1 ? 1.0f : 0.0f;
    }
    const int dtype = t.dtype == DType::kFloat32 ? 0 : t.dtype == DType::kInt64 ? 1 : 2;
    row[3 * kMaxFeatureRank + 1 + dtype] = 1.0f;
  }

  std::vector<float>& rows_;
  std::unordered_map<std::string, int32_t> index_;
};

NodeRecord MakeRecord(const Node& n, double cost_ms, bool weight_only, bool is_output,
                      double initial_ms) {
  NodeRecord r;
  r.op = static_cast<uint8_t>(GetOpInfo(n.op).index);
  r.activation = static_cast<uint8_t>(ActivationIndex(n));
  r.flags =
      static_cast<uint8_t>((weight_only ? kWeightOnlyFlag : 0) | (is_output ? kOutputFlag : 0));
  r.cost_pct = initial_ms > 0 ? static_cast<float>(100.0 * cost_ms / initial_ms) : 0.0f;
  return r;
}

std::unordered_set<NodeId> OutputNodes(const Graph& g) {
  std::unordered_set<NodeId> s;
  for (const GraphOutput& o : g.outputs()) s.insert(o.value.node);
  return s;
}

/// Calls f(src, kind, operand, type) for every message into `id` in `g`: one from the producer
/// of each input (forward), one from each consumer of each output (backward).
template <typename F>
void ForEachMessageInto(const Graph& g, NodeId id, F&& f) {
  const Node& n = g.node(id);
  for (uint32_t i = 0; i < n.inputs.size(); ++i) {
    f(n.inputs[i].node, kForwardMessage, i, g.type(n.inputs[i]));
  }
  for (uint32_t out = 0; out < n.users.size(); ++out) {
    for (const Use& u : n.users[out]) f(u.node, kBackwardMessage, u.operand, n.outputs[out]);
  }
}

/// Calls f(neighbour) for every neighbour of `id` in `g` (producers and consumers).
template <typename F>
void ForEachNeighbour(const Graph& g, NodeId id, F&& f) {
  const Node& n = g.node(id);
  for (const ValueRef& in : n.inputs) f(in.node);
  for (const auto& uses : n.users) {
    for (const Use& u : uses) f(u.node);
  }
}

uint8_t OperandSlot(uint32_t operand) {
  return static_cast<uint8_t>(std::min<uint32_t>(operand, 3));
}

/// Dense indices of a graph's live nodes (position in NodeIds() order).
struct DenseIndex {
  std::vector<NodeId> ids;
  std::vector<int32_t> of;  // by NodeId; -1 when absent
  explicit DenseIndex(const Graph& g) : ids(g.NodeIds()), of(g.id_bound(), -1) {
    for (size_t i = 0; i < ids.size(); ++i) of[ids[i]] = static_cast<int32_t>(i);
  }
  int32_t operator()(NodeId id) const { return id < of.size() ? of[id] : -1; }
};

void EncodeFullGraph(const Graph& g, const DenseIndex& dense, const CostTable& table,
                     double initial_ms, ShapeTable& shapes, ObservationFeatures& f) {
  const std::unordered_set<NodeId> outputs = OutputNodes(g);
  f.nodes.reserve(dense.ids.size());
  for (NodeId id : dense.ids) {
    f.nodes.push_back(MakeRecord(g.node(id), table.node_ms(id), table.weight_only(id),
                                 outputs.count(id) > 0, initial_ms));
  }
  for (size_t i = 0; i < dense.ids.size(); ++i) {
    ForEachMessageInto(
        g, dense.ids[i], [&](NodeId src, MessageKind kind, uint32_t operand, const TensorType& t) {
          f.messages.push_back(MessageRecord{dense(src), static_cast<int32_t>(i), shapes.Index(t),
                                             static_cast<uint8_t>(kind), OperandSlot(operand)});
        });
  }
}

/// The region of one candidate (see features.h) and its messages.
CandidateFeatures EncodeCandidate(const Graph& g, const DenseIndex& dense, const CostTable& table,
                                  const std::unordered_set<NodeId>& outputs_before,
                                  const EnvCandidate& c, int hops, double initial_ms,
                                  double current_ms, ShapeTable& shapes) {
  const Graph& after = c.result;
  CandidateFeatures cf;
  cf.reward = static_cast<float>(100.0 * (current_ms - c.cost_ms) / initial_ms);
  const std::unordered_set<NodeId> added(c.diff.added.begin(), c.diff.added.end());
  auto survives = [&](NodeId id) {
    return after.Contains(id) && g.Contains(id) && !added.count(id);
  };

  // Costs and flags as they are in the candidate graph.
  std::unordered_map<NodeId, const CostTable::NodeCost*> updated;
  for (const CostTable::NodeCost& u : c.cost_updates) updated[u.id] = &u;
  const std::unordered_set<NodeId> outputs_after = OutputNodes(after);
  auto record = [&](NodeId id) {
    auto it = updated.find(id);
    const double cost = it != updated.end() ? it->second->cost_ms : table.node_ms(id);
    const bool wo = it != updated.end() ? it->second->weight_only : table.weight_only(id);
    return MakeRecord(after.node(id), cost, wo, outputs_after.count(id) > 0, initial_ms);
  };

  // Layer 0 changes: added nodes and survivors whose features changed.
  std::vector<NodeId> frontier;
  std::unordered_map<NodeId, int32_t> slot;
  auto add_slot = [&](NodeId id) {
    if (slot.emplace(id, static_cast<int32_t>(cf.slot_node.size())).second) {
      cf.slot_node.push_back(added.count(id) ? -1 : dense(id));
      frontier.push_back(id);
    }
  };
  for (NodeId id : c.diff.added) add_slot(id);
  for (const CostTable::NodeCost& u : c.cost_updates) {
    if (survives(u.id)) add_slot(u.id);
  }
  for (NodeId id : outputs_before) {
    if (survives(id) && !outputs_after.count(id)) add_slot(id);
  }
  for (NodeId id : outputs_after) {
    if (survives(id) && !outputs_before.count(id)) add_slot(id);
  }

  // Survivors whose neighbourhood changed: their layer-1 embedding changes.
  std::vector<NodeId> rewired;
  for (NodeId id : c.touched) rewired.push_back(id);
  for (NodeId id : c.diff.removed) {
    for (const ValueRef& in : g.node(id).inputs) rewired.push_back(in.node);
  }
  for (NodeId id : c.diff.added) {
    if (after.Contains(id)) {
      for (const ValueRef& in : after.node(id).inputs) rewired.push_back(in.node);
    }
  }

  // Layer l changes: layer l-1 changes, their neighbours, and (at l = 1) the re-wired nodes.
  for (int l = 1; l <= hops; ++l) {
    std::vector<NodeId> previous;
    previous.swap(frontier);
    for (NodeId id : previous) ForEachNeighbour(after, id, [&](NodeId nb) { add_slot(nb); });
    if (l == 1) {
      for (NodeId id : rewired) {
        if (survives(id)) add_slot(id);
      }
    }
    // Nodes added to the region at this layer are the next frontier (add_slot appended them).
  }

  cf.slot_record.reserve(cf.slot_node.size());
  std::vector<NodeId> slot_ids(cf.slot_node.size());
  for (const auto& [id, s] : slot) slot_ids[s] = id;
  for (size_t s = 0; s < slot_ids.size(); ++s) {
    const NodeId id = slot_ids[s];
    cf.slot_record.push_back(record(id));
    ForEachMessageInto(
        after, id, [&](NodeId src, MessageKind kind, uint32_t operand, const TensorType& t) {
          auto it = slot.find(src);
          const int32_t from = it != slot.end() ? -(it->second + 1) : dense(src);
          cf.messages.push_back(MessageRecord{from, static_cast<int32_t>(s), shapes.Index(t),
                                              static_cast<uint8_t>(kind), OperandSlot(operand)});
        });
  }
  cf.removed.reserve(c.diff.removed.size());
  for (NodeId id : c.diff.removed) cf.removed.push_back(dense(id));
  return cf;
}

}  // namespace

size_t ObservationFeatures::bytes() const {
  size_t b = shapes.size() * sizeof(float) + nodes.size() * sizeof(NodeRecord) +
             messages.size() * sizeof(MessageRecord);
  for (const CandidateFeatures& c : candidates) {
    b += c.slot_node.size() * sizeof(int32_t) + c.slot_record.size() * sizeof(NodeRecord) +
         c.messages.size() * sizeof(MessageRecord) + c.removed.size() * sizeof(int32_t) + sizeof c;
  }
  return b;
}

void NodeFeatureRow(const NodeRecord& r, float* out) {
  std::fill(out, out + kNodeFeatures, 0.0f);
  out[r.op] = 1.0f;
  out[kNumOpTypes + r.activation] = 1.0f;
  out[kNumOpTypes + kNumActivations] = (r.flags & kWeightOnlyFlag) ? 1.0f : 0.0f;
  out[kNumOpTypes + kNumActivations + 1] = (r.flags & kOutputFlag) ? 1.0f : 0.0f;
  out[kNumOpTypes + kNumActivations + 2] = r.cost_pct;
  out[kNumOpTypes + kNumActivations + 3] = std::log1p(std::max(r.cost_pct, 0.0f));
}

ObservationFeatures EncodeGraph(const Graph& graph, const CostTable& table,
                                double initial_cost_ms) {
  ObservationFeatures f;
  ShapeTable shapes(f.shapes);
  const DenseIndex dense(graph);
  EncodeFullGraph(graph, dense, table, initial_cost_ms, shapes, f);
  return f;
}

ObservationFeatures EncodeState(const Graph& g, const CostTable& table, double initial_cost_ms,
                                const std::vector<EnvCandidate>& candidates, int hops,
                                float step_fraction) {
  ObservationFeatures f;
  ShapeTable shapes(f.shapes);
  const DenseIndex dense(g);
  EncodeFullGraph(g, dense, table, initial_cost_ms, shapes, f);
  const std::unordered_set<NodeId> outputs = OutputNodes(g);
  f.candidates.reserve(candidates.size());
  for (const EnvCandidate& c : candidates) {
    f.candidates.push_back(EncodeCandidate(g, dense, table, outputs, c, hops, initial_cost_ms,
                                           table.total_ms(), shapes));
  }
  f.step_fraction = step_fraction;
  return f;
}

ObservationFeatures EncodeObservation(const Environment& env, int hops) {
  return EncodeState(
      env.graph(), env.table(), env.initial_cost_ms(), env.candidates(), hops,
      env.options().horizon > 0 ? static_cast<float>(env.steps()) / env.options().horizon : 0.0f);
}

// ---------------------------------------------------------------------------- formats

std::string ObservationFormat::ToString() const {
  std::string s = name + " v" + std::to_string(version);
  if (name == kGnnFeatures) s += ", " + std::to_string(hops) + " hops";
  return s;
}

int ObservationFormatVersion(const std::string& name) {
  if (name == kGnnFeatures) return 1;
  if (name == kCandidateRewards) return 1;
  return 0;
}

Status CheckObservationFormat(const ObservationFormat& f) {
  const int version = ObservationFormatVersion(f.name);
  if (version == 0) {
    return InvalidArgument("unknown observation format '" + f.name + "' (known: " + kGnnFeatures +
                           ", " + kCandidateRewards + ")");
  }
  if (f.version != version) {
    return InvalidArgument("observation format " + f.ToString() + ": this build encodes " + f.name +
                           " v" + std::to_string(version));
  }
  if (f.hops < 0) return InvalidArgument("observation format " + f.ToString() + ": hops < 0");
  return Status::Ok();
}

ObservationFeatures EncodeObservation(const Environment& env, const ObservationFormat& format) {
  if (format.name == kGnnFeatures) return EncodeObservation(env, format.hops);
  // candidate-rewards: the action set and each candidate's immediate reward.
  ObservationFeatures f;
  const double initial = env.initial_cost_ms();
  f.candidates.resize(env.candidates().size());
  for (size_t i = 0; i < f.candidates.size(); ++i) {
    f.candidates[i].reward =
        initial > 0
            ? static_cast<float>(100.0 * (env.cost_ms() - env.candidates()[i].cost_ms) / initial)
            : 0.0f;
  }
  f.step_fraction =
      env.options().horizon > 0 ? static_cast<float>(env.steps()) / env.options().horizon : 0.0f;
  return f;
}

ObservationFeatures EncodeGraphObservation(const Graph& graph, const CostTable& table,
                                           double initial_cost_ms,
                                           const ObservationFormat& format) {
  if (format.name == kGnnFeatures) return EncodeGraph(graph, table, initial_cost_ms);
  return ObservationFeatures{};
}

}  // namespace rewire

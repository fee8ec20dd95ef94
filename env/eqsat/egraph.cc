#include "env/eqsat/egraph.h"

#include <algorithm>

#include "graph/weights.h"

namespace rewire::eqsat {
namespace {

uint64_t ValueKey(ValueRef v) { return (static_cast<uint64_t>(v.node) << 32) | v.index; }

bool SameENode(const ENode& a, const ENode& b) {
  return a.kind == b.kind && a.op == b.op && a.attrs == b.attrs && a.aux == b.aux &&
         a.children == b.children;
}

template <typename T>
size_t VectorBytes(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

}  // namespace

// ---------------------------------------------------------------------------- building

StatusOr<EGraph> EGraph::FromGraph(const Graph& graph) {
  REWIRE_RETURN_IF_ERROR(graph.Validate().WithContext("building the e-graph"));
  EGraph eg;
  eg.input_ = graph;
  eg.by_op_.resize(kNumOpTypes);
  std::unordered_map<uint64_t, ClassId> values;
  for (NodeId id : graph.TopologicalOrder()) {
    REWIRE_RETURN_IF_ERROR(eg.AddGraphNode(graph, graph.node(id), &values));
  }
  for (const GraphOutput& out : graph.outputs()) {
    eg.roots_.push_back({out.name, values.at(ValueKey(out.value))});
  }
  return eg;
}

Status EGraph::AddGraphNode(const Graph& graph, const Node& node,
                            std::unordered_map<uint64_t, ClassId>* values) {
  ENode n;
  n.op = node.op;
  for (const ValueRef& in : node.inputs) n.children.push_back(Find(values->at(ValueKey(in))));
  ClassId cls;
  if (node.IsLeaf() || node.op == OpType::kOpaque) {
    n.kind = node.IsLeaf() ? ENodeKind::kLeaf : ENodeKind::kOpaque;
    n.aux = node.id;
    cls = Insert(std::move(n), node.outputs, node.id);
  } else {
    n.kind = ENodeKind::kOp;
    n.attrs = InternAttrs(node.attrs);
    const ENodeId existing = Lookup(n);
    cls = existing != kNone ? ClassOf(existing) : Insert(std::move(n), node.outputs, node.id);
  }
  return BindOutputs(node, cls, values);
}

Status EGraph::BindOutputs(const Node& node, ClassId cls,
                           std::unordered_map<uint64_t, ClassId>* values) {
  if (node.outputs.size() == 1) {
    (*values)[ValueKey({node.id, 0})] = cls;
    return Status::Ok();
  }
  for (uint32_t k = 0; k < node.outputs.size(); ++k) {
    REWIRE_ASSIGN_OR_RETURN((*values)[ValueKey({node.id, k})], AddProject(cls, k));
  }
  return Status::Ok();
}

Status EGraph::AddSeed(const Graph& seed) {
  REWIRE_RETURN_IF_ERROR(seed.Validate().WithContext("seeding the e-graph"));
  std::unordered_map<uint64_t, ClassId> values;
  for (NodeId id : seed.TopologicalOrder()) {
    const Node& node = seed.node(id);
    std::vector<ClassId> children;
    for (const ValueRef& in : node.inputs) children.push_back(Find(values.at(ValueKey(in))));
    ClassId cls = kNone;
    if (node.IsLeaf() || node.op == OpType::kOpaque) {
      const bool same = input_.Contains(id) && input_.node(id).op == node.op &&
                        input_.node(id).name == node.name &&
                        input_.node(id).outputs == node.outputs;
      ENode n;
      n.op = node.op;
      n.kind = node.IsLeaf() ? ENodeKind::kLeaf : ENodeKind::kOpaque;
      n.aux = id;
      n.children = std::move(children);
      const ENodeId e = same ? Lookup(n) : kNone;
      if (e == kNone) {
        return InvalidArgument("seeding the e-graph: the seed's " + node.TypeName() + " '" +
                               node.name + "' (node " + std::to_string(id) +
                               ") is not the input graph's");
      }
      cls = ClassOf(e);
    } else {
      REWIRE_ASSIGN_OR_RETURN(cls, AddOp(node.op, node.attrs, children));
    }
    REWIRE_RETURN_IF_ERROR(BindOutputs(node, cls, &values));
  }
  for (const GraphOutput& out : seed.outputs()) {
    const ClassId c = values.at(ValueKey(out.value));
    auto root = std::find_if(roots_.begin(), roots_.end(),
                             [&](const Root& r) { return r.name == out.name; });
    if (root == roots_.end()) {
      return InvalidArgument("seeding the e-graph: the seed has an output '" + out.name +
                             "' the input graph does not have");
    }
    if (Types(c) != Types(root->cls)) {
      return InvalidArgument("seeding the e-graph: the seed's output '" + out.name +
                             "' has another type than the input's");
    }
    Union(root->cls, c);
  }
  Rebuild();
  return Status::Ok();
}

uint32_t EGraph::InternAttrs(Attrs attrs) {
  const uint64_t h = attrs.Hash();
  auto range = attrs_index_.equal_range(h);
  for (auto it = range.first; it != range.second; ++it) {
    if (attrs_[it->second] == attrs) return it->second;
  }
  attrs_.push_back(std::move(attrs));
  const uint32_t id = static_cast<uint32_t>(attrs_.size() - 1);
  attrs_index_.emplace(h, id);
  return id;
}

uint64_t EGraph::HashOf(const ENode& n) const {
  uint64_t h = HashCombine(static_cast<uint64_t>(n.kind), static_cast<uint64_t>(n.op));
  h = HashCombine(h, n.attrs);
  h = HashCombine(h, n.aux);
  for (ClassId c : n.children) h = HashCombine(h, c);
  return h;
}

ENodeId EGraph::Lookup(const ENode& n) const {
  auto range = hashcons_.equal_range(HashOf(n));
  for (auto it = range.first; it != range.second; ++it) {
    if (SameENode(nodes_[it->second], n)) return it->second;
  }
  return kNone;
}

void EGraph::EraseHash(ENodeId n) {
  auto range = hashcons_.equal_range(HashOf(nodes_[n]));
  for (auto it = range.first; it != range.second; ++it) {
    if (it->second == n) {
      hashcons_.erase(it);
      return;
    }
  }
}

ClassId EGraph::Insert(ENode n, std::vector<TensorType> types, NodeId origin) {
  const ENodeId id = static_cast<ENodeId>(nodes_.size());
  const ClassId c = static_cast<ClassId>(classes_.size());
  for (ClassId ch : n.children) classes_[ch].parents.push_back(id);
  if (n.kind == ENodeKind::kOp) by_op_[static_cast<size_t>(n.op)].push_back(id);
  hashcons_.emplace(HashOf(n), id);
  nodes_.push_back(std::move(n));
  node_class_.push_back(c);
  live_.push_back(true);
  blacklisted_.push_back(false);
  origin_.push_back(origin);
  cost_.push_back(-1.0);
  parent_.push_back(c);
  ClassData d;
  d.nodes = {id};
  d.tuple = types.size() != 1;
  d.types = std::move(types);
  classes_.push_back(std::move(d));
  classes_[c].weight_only = NodeWeightOnly(id);
  ++live_nodes_;
  ++live_classes_;
  return c;
}

StatusOr<ClassId> EGraph::AddOp(OpType op, Attrs attrs, const std::vector<ClassId>& children) {
  ENode n;
  n.kind = ENodeKind::kOp;
  n.op = op;
  std::vector<TensorType> in_types;
  in_types.reserve(children.size());
  for (ClassId c : children) {
    const ClassId k = Find(c);
    if (classes_[k].tuple) {
      return InvalidArgument(std::string(OpName(op)) + ": operand class " + std::to_string(k) +
                             " is a tuple, not a value");
    }
    n.children.push_back(k);
    in_types.push_back(classes_[k].types[0]);
  }
  REWIRE_ASSIGN_OR_RETURN(std::vector<TensorType> types,
                          InferAndCanonicalize(op, &attrs, in_types));
  n.attrs = InternAttrs(std::move(attrs));
  const ENodeId existing = Lookup(n);
  if (existing != kNone) return ClassOf(existing);
  return Insert(std::move(n), std::move(types), kNoNode);
}

StatusOr<ClassId> EGraph::AddProject(ClassId tuple, uint32_t index) {
  const ClassId t = Find(tuple);
  if (!classes_[t].tuple || index >= classes_[t].types.size()) {
    return InvalidArgument("class " + std::to_string(t) + " has no output " +
                           std::to_string(index) + " to project");
  }
  ENode n;
  n.kind = ENodeKind::kProject;
  n.aux = index;
  n.children = {t};
  const ENodeId existing = Lookup(n);
  if (existing != kNone) return ClassOf(existing);
  return Insert(std::move(n), {classes_[t].types[index]}, kNoNode);
}

ClassId EGraph::FindProject(ClassId tuple, uint32_t index) const {
  ENode n;
  n.kind = ENodeKind::kProject;
  n.aux = index;
  n.children = {Find(tuple)};
  const ENodeId existing = Lookup(n);
  return existing == kNone ? kNone : ClassOf(existing);
}

// ---------------------------------------------------------------------------- union and rebuild

ClassId EGraph::Find(ClassId c) const {
  while (parent_[c] != c) {
    parent_[c] = parent_[parent_[c]];
    c = parent_[c];
  }
  return c;
}

bool EGraph::Union(ClassId a, ClassId b) {
  a = Find(a);
  b = Find(b);
  if (a == b) return false;
  const size_t size_a = classes_[a].nodes.size() + classes_[a].parents.size();
  const size_t size_b = classes_[b].nodes.size() + classes_[b].parents.size();
  // The larger class stays the root (fewer moves); ties keep the older id.
  if (size_b > size_a || (size_b == size_a && b < a)) std::swap(a, b);
  ClassData& root = classes_[a];
  ClassData& other = classes_[b];
  parent_[b] = a;
  root.nodes.insert(root.nodes.end(), other.nodes.begin(), other.nodes.end());
  root.parents.insert(root.parents.end(), other.parents.begin(), other.parents.end());
  root.weight_only = root.weight_only || other.weight_only;
  root.dirty = root.dirty || other.dirty;
  other = ClassData{};
  --live_classes_;
  pending_.push_back(a);
  return true;
}

void EGraph::Repair(ClassId c, std::vector<ClassId>* touched) {
  std::vector<ENodeId> parents = std::move(classes_[c].parents);
  classes_[c].parents.clear();
  std::vector<ENodeId> kept;
  kept.reserve(parents.size());
  for (ENodeId p : parents) {
    if (!live_[p]) continue;
    EraseHash(p);
    for (ClassId& ch : nodes_[p].children) ch = Find(ch);
    const ENodeId existing = Lookup(nodes_[p]);
    if (existing != kNone && existing != p) {
      // Congruent to `existing`: one e-node stays, their classes become one.
      // The survivor stays usable when either copy was.
      if (blacklisted_[existing] && !blacklisted_[p]) {
        blacklisted_[existing] = false;
        --num_blacklisted_;
      }
      if (blacklisted_[p]) --num_blacklisted_;
      live_[p] = false;
      blacklisted_[p] = false;
      --live_nodes_;
      const ClassId pc = Find(node_class_[p]);
      classes_[pc].dirty = true;
      touched->push_back(pc);
      Union(pc, node_class_[existing]);
      continue;
    }
    hashcons_.emplace(HashOf(nodes_[p]), p);
    kept.push_back(p);
  }
  for (ENodeId p : kept) {
    const ClassId pc = Find(node_class_[p]);
    if (!classes_[pc].weight_only && NodeWeightOnly(p)) {
      classes_[pc].weight_only = true;
      pending_.push_back(pc);  // its readers may become weight-only in turn
    }
  }
  std::sort(kept.begin(), kept.end());
  kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
  std::vector<ENodeId>& now = classes_[Find(c)].parents;
  now.insert(now.end(), kept.begin(), kept.end());
}

void EGraph::Rebuild() {
  std::vector<ClassId> touched;
  while (!pending_.empty()) {
    std::vector<ClassId> merged;  // classes merged since the last pass, each once
    merged.swap(pending_);
    for (ClassId& c : merged) c = Find(c);
    std::sort(merged.begin(), merged.end());
    merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
    for (ClassId c : merged) Repair(Find(c), &touched);
  }
  for (ClassId c : touched) {
    ClassData& d = classes_[Find(c)];
    if (!d.dirty) continue;
    d.nodes.erase(
        std::remove_if(d.nodes.begin(), d.nodes.end(), [&](ENodeId n) { return !live_[n]; }),
        d.nodes.end());
    d.dirty = false;
  }
}

// ---------------------------------------------------------------------------- queries

bool EGraph::NodeWeightOnly(ENodeId id) const {
  const ENode& n = nodes_[id];
  switch (n.kind) {
    case ENodeKind::kLeaf:
      return n.op == OpType::kWeight || n.op == OpType::kConstant;
    case ENodeKind::kOpaque:
      return false;
    case ENodeKind::kProject:
      return WeightOnly(n.children[0]);
    case ENodeKind::kOp:
      if (n.children.empty()) return false;
      return std::all_of(n.children.begin(), n.children.end(),
                         [&](ClassId c) { return WeightOnly(c); });
  }
  return false;
}

std::vector<ClassId> EGraph::Classes() const {
  std::vector<ClassId> out;
  out.reserve(live_classes_);
  for (ClassId c = 0; c < classes_.size(); ++c) {
    if (parent_[c] == c) out.push_back(c);
  }
  return out;
}

void EGraph::Blacklist(ENodeId n) {
  if (blacklisted_[n]) return;
  blacklisted_[n] = true;
  ++num_blacklisted_;
}

size_t EGraph::MemoryBytes() const {
  size_t bytes = VectorBytes(nodes_) + VectorBytes(node_class_) + live_.capacity() / 8 +
                 blacklisted_.capacity() / 8 + VectorBytes(origin_) + VectorBytes(cost_) +
                 VectorBytes(parent_) + VectorBytes(classes_) + VectorBytes(attrs_);
  for (const ENode& n : nodes_) bytes += VectorBytes(n.children);
  for (const ClassData& d : classes_) {
    bytes += VectorBytes(d.nodes) + VectorBytes(d.parents) + VectorBytes(d.types);
    for (const TensorType& t : d.types) bytes += VectorBytes(t.shape);
  }
  // Hash tables: a node per entry (key, value, next pointer, cached hash) plus the buckets.
  bytes += (hashcons_.size() + attrs_index_.size()) * 32 +
           (hashcons_.bucket_count() + attrs_index_.bucket_count()) * sizeof(void*);
  for (const auto& ids : by_op_) bytes += VectorBytes(ids);
  return bytes;
}

}  // namespace rewire::eqsat

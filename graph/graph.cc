#include "graph/graph.h"

#include <algorithm>
#include <deque>
#include <unordered_set>
#include <vector>

#include "graph/hash.h"

namespace rewire {

std::string Node::TypeName() const {
  if (op == OpType::kOpaque) return attrs.GetString("onnx_op", "Opaque");
  return std::string(OpName(op));
}

// ---------------------------------------------------------------------------- construction

namespace {
constexpr size_t kCopySlack = 64;  // node slots reserved in a copy for the edits that follow
}  // namespace

Graph::Graph(const Graph& other)
    : inputs_(other.inputs_),
      outputs_(other.outputs_),
      live_nodes_(other.live_nodes_),
      leaf_names_(other.leaf_names_) {
  nodes_.reserve(other.nodes_.size() + kCopySlack);
  nodes_.assign(other.nodes_.begin(), other.nodes_.end());
}

Graph& Graph::operator=(const Graph& other) {
  if (this != &other) *this = Graph(other);
  return *this;
}

StatusOr<NodeId> Graph::Insert(Node node) {
  const NodeId id = static_cast<NodeId>(nodes_.size());
  node.id = id;
  node.users.assign(node.outputs.size(), {});
  for (uint32_t operand = 0; operand < node.inputs.size(); ++operand) {
    const ValueRef in = node.inputs[operand];
    Mutable(in.node).users[in.index].push_back(Use{id, operand});
  }
  if (node.IsLeaf()) SetLeafName(node.name, id);
  nodes_.push_back(std::make_shared<Node>(std::move(node)));
  ++live_nodes_;
  return id;
}

Status Graph::CheckLeafName(const std::string& name) const {
  if (name.empty()) return InvalidArgument("inputs, weights and constants need a name");
  if (FindLeaf(name) != kNoNode) {
    return InvalidArgument("duplicate name '" + name +
                           "': names of inputs, weights and constants must be unique");
  }
  return Status::Ok();
}

void Graph::SetLeafName(const std::string& name, NodeId id) {
  if (!leaf_names_) {
    leaf_names_ = std::make_shared<std::unordered_map<std::string, NodeId>>();
  } else if (leaf_names_.use_count() > 1) {
    leaf_names_ = std::make_shared<std::unordered_map<std::string, NodeId>>(*leaf_names_);
  }
  (*leaf_names_)[name] = id;
}

Node& Graph::Mutable(NodeId id) {
  REWIRE_CHECK(Contains(id));
  std::shared_ptr<Node>& p = nodes_[id];
  if (p.use_count() > 1) p = std::make_shared<Node>(*p);  // copy-on-write
  return *p;
}

const Node& Graph::node(NodeId id) const {
  REWIRE_CHECK(Contains(id));
  return *nodes_[id];
}

const TensorType& Graph::type(ValueRef v) const {
  const Node& n = node(v.node);
  REWIRE_CHECK(v.index < n.outputs.size());
  return n.outputs[v.index];
}

Status Graph::CheckValue(ValueRef v, const char* what) const {
  if (!Contains(v.node)) {
    return InvalidArgument(std::string(what) + " refers to a node that does not exist");
  }
  if (v.index >= nodes_[v.node]->outputs.size()) {
    return InvalidArgument(std::string(what) + " refers to output " + std::to_string(v.index) +
                           " of node '" + nodes_[v.node]->name + "', which has " +
                           std::to_string(nodes_[v.node]->outputs.size()) + " outputs");
  }
  return Status::Ok();
}

namespace {
Status CheckShape(const Shape& shape, const std::string& name) {
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (d <= 0)
      return InvalidArgument("'" + name + "' has shape [" + ShapeToString(shape) +
                             "]: dimensions must be positive");
    if (__builtin_mul_overflow(elements, d, &elements) || elements > (int64_t{1} << 48)) {
      return InvalidArgument("'" + name + "' has shape [" + ShapeToString(shape) +
                             "]: too many elements");
    }
  }
  return Status::Ok();
}
}  // namespace

StatusOr<NodeId> Graph::AddInput(const std::string& name, TensorType type) {
  REWIRE_RETURN_IF_ERROR(CheckLeafName(name));
  REWIRE_RETURN_IF_ERROR(CheckShape(type.shape, name));
  Node n;
  n.op = OpType::kInput;
  n.name = name;
  n.outputs = {std::move(type)};
  REWIRE_ASSIGN_OR_RETURN(NodeId id, Insert(std::move(n)));
  inputs_.push_back(id);
  return id;
}

StatusOr<NodeId> Graph::AddWeight(const std::string& name, Shape shape, WeightInit init) {
  REWIRE_RETURN_IF_ERROR(CheckLeafName(name));
  REWIRE_RETURN_IF_ERROR(CheckShape(shape, name));
  if (!(init.lo <= init.hi)) return InvalidArgument("weight '" + name + "': init range is empty");
  Node n;
  n.op = OpType::kWeight;
  n.name = name;
  n.outputs = {TensorType{DType::kFloat32, std::move(shape)}};
  n.attrs.Set("init_lo", init.lo);
  n.attrs.Set("init_hi", init.hi);
  n.attrs.Set("init_seed", static_cast<int64_t>(init.seed));
  return Insert(std::move(n));
}

namespace {
Status CheckData(const HostTensorPtr& data, const std::string& name) {
  if (!data) return InvalidArgument("'" + name + "' has no data");
  for (int64_t d : data->type.shape) {
    if (d < 0) return InvalidArgument("'" + name + "' has a negative dimension");
  }
  const size_t want =
      static_cast<size_t>(NumElements(data->type.shape)) * DTypeSize(data->type.dtype);
  if (data->bytes.size() != want) {
    return InvalidArgument("'" + name + "' holds " + std::to_string(data->bytes.size()) +
                           " bytes but " + data->type.ToString() + " needs " +
                           std::to_string(want));
  }
  return Status::Ok();
}
}  // namespace

StatusOr<NodeId> Graph::AddWeightData(const std::string& name, HostTensorPtr data) {
  REWIRE_RETURN_IF_ERROR(CheckLeafName(name));
  REWIRE_RETURN_IF_ERROR(CheckData(data, name));
  if (data->type.dtype != DType::kFloat32) {
    return InvalidArgument("weight '" + name + "' must be float32 (use a Constant for " +
                           DTypeName(data->type.dtype) + ")");
  }
  Node n;
  n.op = OpType::kWeight;
  n.name = name;
  n.outputs = {data->type};
  n.data = std::move(data);
  return Insert(std::move(n));
}

StatusOr<NodeId> Graph::AddConstant(const std::string& name, HostTensorPtr data) {
  REWIRE_RETURN_IF_ERROR(CheckLeafName(name));
  REWIRE_RETURN_IF_ERROR(CheckData(data, name));
  Node n;
  n.op = OpType::kConstant;
  n.name = name;
  n.outputs = {data->type};
  n.data = std::move(data);
  return Insert(std::move(n));
}

StatusOr<NodeId> Graph::AddOp(OpType op, const std::vector<ValueRef>& inputs, Attrs attrs,
                              const std::string& name) {
  const std::string where = std::string(OpName(op)) + (name.empty() ? "" : " '" + name + "'");
  if (!GetOpInfo(op).add_op) {
    return InvalidArgument(where + ": use the dedicated Graph::Add* call for this op");
  }
  std::vector<TensorType> in_types;
  in_types.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    REWIRE_RETURN_IF_ERROR(
        CheckValue(inputs[i], ("input " + std::to_string(i)).c_str()).WithContext(where));
    in_types.push_back(type(inputs[i]));
  }
  auto out = InferAndCanonicalize(op, &attrs, in_types);
  if (!out.ok()) {
    return Status(out.status().code(),
                  (name.empty() ? "" : "node '" + name + "': ") + out.status().message());
  }
  Node n;
  n.op = op;
  n.name = name;
  n.attrs = std::move(attrs);
  n.inputs = inputs;
  n.outputs = std::move(out).value();
  return Insert(std::move(n));
}

StatusOr<NodeId> Graph::AddOpaque(const std::string& onnx_op, const std::string& onnx_domain,
                                  const std::vector<ValueRef>& inputs, Attrs attrs,
                                  std::vector<TensorType> output_types, const std::string& name) {
  const std::string where = "opaque op " + onnx_op + (name.empty() ? "" : " '" + name + "'");
  if (onnx_op.empty()) return InvalidArgument("opaque op needs an ONNX op type");
  if (output_types.empty()) return InvalidArgument(where + ": needs at least one output");
  for (size_t i = 0; i < inputs.size(); ++i) {
    REWIRE_RETURN_IF_ERROR(
        CheckValue(inputs[i], ("input " + std::to_string(i)).c_str()).WithContext(where));
  }
  for (const TensorType& t : output_types) {
    for (int64_t d : t.shape) {
      if (d < 0) return InvalidArgument(where + ": output type " + t.ToString() + " is not static");
    }
  }
  attrs.Set("onnx_op", onnx_op);
  attrs.Set("onnx_domain", onnx_domain);
  Node n;
  n.op = OpType::kOpaque;
  n.name = name;
  n.attrs = std::move(attrs);
  n.inputs = inputs;
  n.outputs = std::move(output_types);
  return Insert(std::move(n));
}

Status Graph::AddOutput(const std::string& name, ValueRef value) {
  if (name.empty()) return InvalidArgument("graph outputs need a name");
  REWIRE_RETURN_IF_ERROR(CheckValue(value, ("output '" + name + "'").c_str()));
  for (const GraphOutput& o : outputs_) {
    if (o.name == name) return InvalidArgument("duplicate graph output name '" + name + "'");
  }
  outputs_.push_back({name, value});
  return Status::Ok();
}

// ---------------------------------------------------------------------------- queries

std::vector<NodeId> Graph::NodeIds() const {
  std::vector<NodeId> ids;
  ids.reserve(live_nodes_);
  for (NodeId i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i]) ids.push_back(i);
  }
  return ids;
}

NodeId Graph::FindLeaf(const std::string& name) const {
  if (!leaf_names_) return kNoNode;
  auto it = leaf_names_->find(name);
  // Entries of removed leaves stay in the shared index (removal never copies it); they are
  // recognised here as stale.
  if (it == leaf_names_->end() || !Contains(it->second) || nodes_[it->second]->name != name)
    return kNoNode;
  return it->second;
}

NodeId Graph::FindNode(const std::string& name) const {
  if (const NodeId leaf = FindLeaf(name); leaf != kNoNode) return leaf;
  for (NodeId i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i] && nodes_[i]->name == name) return i;
  }
  return kNoNode;
}

std::vector<NodeId> Graph::TopologicalOrder() const {
  std::vector<int> pending(nodes_.size(), 0);
  std::deque<NodeId> ready;
  for (NodeId i = 0; i < nodes_.size(); ++i) {
    if (!nodes_[i]) continue;
    pending[i] = static_cast<int>(nodes_[i]->inputs.size());
    if (pending[i] == 0) ready.push_back(i);
  }
  std::vector<NodeId> order;
  order.reserve(live_nodes_);
  while (!ready.empty()) {
    const NodeId id = ready.front();
    ready.pop_front();
    order.push_back(id);
    for (const auto& uses : nodes_[id]->users) {
      for (const Use& u : uses) {
        if (--pending[u.node] == 0) ready.push_back(u.node);
      }
    }
  }
  return order;
}

std::map<OpType, int> Graph::OpCounts() const {
  std::map<OpType, int> counts;
  for (const auto& p : nodes_) {
    if (p) ++counts[p->op];
  }
  return counts;
}

int Graph::NumOperators() const {
  int n = 0;
  for (const auto& p : nodes_) {
    if (p && !p->IsLeaf()) ++n;
  }
  return n;
}

int64_t Graph::NumParameters() const {
  int64_t n = 0;
  for (const auto& p : nodes_) {
    if (p && p->op == OpType::kWeight) n += NumElements(p->outputs[0].shape);
  }
  return n;
}

Status Graph::Validate() const {
  std::unordered_set<std::string> leaf_names;
  size_t live = 0;
  for (NodeId id = 0; id < nodes_.size(); ++id) {
    if (!nodes_[id]) continue;
    ++live;
    const Node& n = *nodes_[id];
    const std::string where = "node " + std::to_string(id) + " (" + n.TypeName() +
                              (n.name.empty() ? "" : " '" + n.name + "'") + ")";
    if (n.id != id) return Internal(where + ": stored id " + std::to_string(n.id));
    if (n.users.size() != n.outputs.size())
      return Internal(where + ": user lists do not match outputs");
    if (n.IsLeaf()) {
      if (!leaf_names.insert(n.name).second)
        return InvalidArgument(where + ": duplicate leaf name");
      if (n.op != OpType::kInput && !n.data && n.op != OpType::kWeight) {
        return InvalidArgument(where + ": constant without data");
      }
    }
    std::vector<TensorType> in_types;
    for (uint32_t k = 0; k < n.inputs.size(); ++k) {
      REWIRE_RETURN_IF_ERROR(CheckValue(n.inputs[k], "input").WithContext(where));
      const auto& uses = nodes_[n.inputs[k].node]->users[n.inputs[k].index];
      if (std::find(uses.begin(), uses.end(), Use{id, k}) == uses.end()) {
        return Internal(where + ": input " + std::to_string(k) +
                        " is missing from its producer's users");
      }
      in_types.push_back(type(n.inputs[k]));
    }
    for (uint32_t o = 0; o < n.users.size(); ++o) {
      for (const Use& u : n.users[o]) {
        if (!Contains(u.node) || u.operand >= nodes_[u.node]->inputs.size() ||
            nodes_[u.node]->inputs[u.operand] != ValueRef{id, o}) {
          return Internal(where + ": stale user entry");
        }
      }
    }
    if (!n.IsLeaf() && n.op != OpType::kOpaque) {
      Attrs attrs = n.attrs;
      auto out = InferAndCanonicalize(n.op, &attrs, in_types);
      if (!out.ok()) return out.status().WithContext(where);
      if (*out != n.outputs)
        return InvalidArgument(where + ": stored output types differ from inferred ones");
      if (attrs != n.attrs) return InvalidArgument(where + ": attributes are not canonical");
    }
  }
  if (live != live_nodes_) return Internal("live node count is stale");
  if (TopologicalOrder().size() != live_nodes_) return InvalidArgument("graph has a cycle");
  std::unordered_set<std::string> out_names;
  for (const GraphOutput& o : outputs_) {
    REWIRE_RETURN_IF_ERROR(CheckValue(o.value, ("output '" + o.name + "'").c_str()));
    if (!out_names.insert(o.name).second)
      return InvalidArgument("duplicate output name '" + o.name + "'");
  }
  for (NodeId in : inputs_) {
    if (!Contains(in) || nodes_[in]->op != OpType::kInput)
      return Internal("stale graph input list");
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------- canonical hash
// A Merkle hash over the DAG, so node ids and insertion order do not matter, only what each value
// is computed from.

namespace {

constexpr size_t kSmallConstantBytes = 256;  // constants this small hash by content

uint64_t HashType(uint64_t h, const TensorType& t) {
  h = HashCombine(h, static_cast<uint64_t>(t.dtype));
  h = HashCombine(h, t.shape.size());
  for (int64_t d : t.shape) h = HashCombine(h, static_cast<uint64_t>(d));
  return h;
}

}  // namespace

uint64_t Graph::Hash() const {
  std::vector<uint64_t> node_hash(nodes_.size(), 0);
  for (NodeId id : TopologicalOrder()) {
    const Node& n = *nodes_[id];
    uint64_t h = HashCombine(0x72657769726eULL, static_cast<uint64_t>(GetOpInfo(n.op).id));
    for (const TensorType& t : n.outputs) h = HashType(h, t);
    if (n.IsLeaf()) {
      // Leaves are identified by name (ids are not canonical); lazy-init attributes are not
      // part of a leaf's identity, so a Weight hashes the same before and after an export.
      h = HashCombine(h, HashBytes(n.name.data(), n.name.size()));
      if (n.op == OpType::kConstant && n.data && n.data->bytes.size() <= kSmallConstantBytes) {
        h = HashCombine(h, HashBytes(n.data->bytes.data(), n.data->bytes.size()));
      }
    } else {
      h = HashCombine(h, n.attrs.Hash());
      for (const ValueRef& in : n.inputs) {
        h = HashCombine(h, HashCombine(node_hash[in.node], in.index));
      }
    }
    node_hash[id] = h;
  }
  uint64_t g = 0x6772617068ULL;
  for (const GraphOutput& o : outputs_) {
    g = HashCombine(g, HashBytes(o.name.data(), o.name.size()));
    g = HashCombine(g, HashCombine(node_hash[o.value.node], o.value.index));
  }
  return g;
}

}  // namespace rewire

// rewire Graph -> ONNX (opset 17). Weights become raw_data initializers, Constants become
// Constant nodes, rewire's static operands (Reshape's shape, Slice's starts, ...) become constant
// inputs as opset 17 wants them.
//
// By default the file is standard ONNX that any runtime loads: node names are unique, only the
// default domain is used (besides the domains of opaque ops imported from another file), and
// rewire's fused forms are lowered: a fused activation becomes the operator followed by the
// activation node, Gelu its Erf form, ScalarMul a Mul by a scalar initializer, Enlarge and
// MergeGConv of a known weight a new initializer (of a computed weight: Pad / Mul + Concat).
// With custom_ops, an op whose attributes have no place in its ONNX twin and the ops without a
// twin go to the "ai.rewire" domain with their attributes verbatim, so that importing the file
// gives back the same graph.

#include <onnx/defs/schema.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <unordered_set>

#include "graph/onnx/onnx_importer.h"
#include "graph/onnx/onnx_io.h"
#include "graph/weights.h"

namespace rewire {
namespace onnx_io {
namespace {

constexpr int kExportOpset = 17;
constexpr int kExportIrVersion = 8;

/// rewire attributes that opset 17 takes as inputs instead, in input order (input 1 onwards):
/// those marked `@` in graph/ops.def.
const std::vector<std::string>& AttrsAsInputs(OpType op) {
  static const auto* table = [] {
    auto* t = new std::vector<std::vector<std::string>>(kNumOpTypes);
    for (int i = 0; i < kNumOpTypes; ++i) {
      for (const OpAttr& a : OpAttrs(static_cast<OpType>(i))) {
        if (a.onnx_input) (*t)[i].push_back(a.name);
      }
    }
    return t;
  }();
  return (*table)[static_cast<size_t>(op)];
}

/// rewire attributes that ONNX lacks but that are implied when they hold this value: a fused
/// activation of "none".
bool ImpliedDefault(OpType op, const std::string& name, const AttrValue& v) {
  if (HasFusedActivation(op) && name == "activation") {
    const auto* s = std::get_if<std::string>(&v);
    return s && *s == "none";
  }
  return false;
}

onnx::AttributeProto::AttributeType AttrType(const AttrValue& v) {
  switch (v.index()) {
    case 0:
      return onnx::AttributeProto::INT;
    case 1:
      return onnx::AttributeProto::FLOAT;
    case 2:
      return onnx::AttributeProto::STRING;
    case 3:
      return onnx::AttributeProto::INTS;
    case 4:
      return onnx::AttributeProto::FLOATS;
    default:
      return onnx::AttributeProto::TENSOR;
  }
}

Status SetAttr(onnx::NodeProto* node, const std::string& name, const AttrValue& v) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(AttrType(v));
  if (const auto* i = std::get_if<int64_t>(&v)) {
    a->set_i(*i);
  } else if (const auto* f = std::get_if<float>(&v)) {
    a->set_f(*f);
  } else if (const auto* s = std::get_if<std::string>(&v)) {
    a->set_s(*s);
  } else if (const auto* is = std::get_if<Ints>(&v)) {
    for (int64_t x : *is) a->add_ints(x);
  } else if (const auto* fs = std::get_if<Floats>(&v)) {
    for (float x : *fs) a->add_floats(x);
  } else if (const auto* t = std::get_if<HostTensorPtr>(&v)) {
    if (!*t) return InvalidArgument("attribute '" + name + "' holds no tensor");
    HostToTensor(**t, "", a->mutable_t());
  }
  return Status::Ok();
}

void SetType(onnx::ValueInfoProto* vi, const std::string& name, const TensorType& t) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(t.dtype));
  auto* shape = tt->mutable_shape();
  for (int64_t d : t.shape) shape->add_dim()->set_dim_value(d);
}

/// The dimensions of `vi` that `dims` (per value name: each dimension's symbol, or empty) names
/// become those symbols.
void SetDimParams(onnx::ValueInfoProto* vi,
                  const std::map<std::string, std::vector<std::string>>& dims) {
  auto it = dims.find(vi->name());
  if (it == dims.end()) return;
  auto* shape = vi->mutable_type()->mutable_tensor_type()->mutable_shape();
  for (int i = 0; i < shape->dim_size() && i < static_cast<int>(it->second.size()); ++i) {
    if (!it->second[i].empty()) shape->mutable_dim(i)->set_dim_param(it->second[i]);
  }
}

/// Enlarge's result on a known weight: zero-padded kernel, centred as the executor does.
StatusOr<HostTensor> EnlargeWeight(const HostTensor& w, const Ints& ks) {
  if (w.type.shape.size() != 4 || ks.size() != 2)
    return InvalidArgument("Enlarge needs a 4-D weight");
  const Shape& s = w.type.shape;
  const int64_t dh = ks[0] - s[2], dw = ks[1] - s[3];
  if (dh < 0 || dw < 0)
    return InvalidArgument("Enlarge: kernel_shape is smaller than the weight's");
  HostTensor out(w.type.dtype, {s[0], s[1], ks[0], ks[1]});
  const size_t es = DTypeSize(w.type.dtype);
  for (int64_t oc = 0; oc < s[0] * s[1]; ++oc) {
    for (int64_t y = 0; y < s[2]; ++y) {
      const int64_t src = (oc * s[2] + y) * s[3];
      const int64_t dst = (oc * ks[0] + y + dh / 2) * ks[1] + dw / 2;
      std::memcpy(out.bytes.data() + dst * es, w.bytes.data() + src * es, s[3] * es);
    }
  }
  return out;
}

/// MergeGConv's result on a known weight (block diagonal; see graph/ops.def).
StatusOr<HostTensor> MergeGConvWeight(const HostTensor& w, int64_t count, int64_t groups) {
  const Shape& s = w.type.shape;
  if (s.size() != 4 || count < 1 || groups < 1 || groups % count || s[0] % groups) {
    return InvalidArgument("MergeGConv: weight shape and group/count do not agree");
  }
  const int64_t per_group = s[0] / groups, ipg = s[1], k = s[2] * s[3];
  HostTensor out(w.type.dtype, {s[0], ipg * count, s[2], s[3]});
  const size_t es = DTypeSize(w.type.dtype);
  for (int64_t o = 0; o < s[0]; ++o) {
    const int64_t block = (o / per_group) % count;
    std::memcpy(out.bytes.data() + ((o * ipg * count) + block * ipg) * k * es,
                w.bytes.data() + o * ipg * k * es, ipg * k * es);
  }
  return out;
}

/// A rank-0 tensor of `dtype` (float32 or int64) holding `v`.
HostTensor Scalar(DType dtype, double v) {
  HostTensor t(dtype, {});
  if (dtype == DType::kInt64)
    *t.data<int64_t>() = static_cast<int64_t>(v);
  else
    *t.data<float>() = static_cast<float>(v);
  return t;
}

/// The static operands of `node` (in `attrs`) in a form that holds at other sizes of the
/// dynamic axes where rewire's shapes allow it: a Reshape target copies (0) the leading
/// dimensions that equal its input's and infers (-1) the first other one; a Slice end at or past
/// its axis's size runs to the end. Both mean the same at the sizes the graph has.
void GeneraliseShapes(const Node& node, const Graph& g, Attrs& attrs) {
  if (node.inputs.empty()) return;
  const Shape& in = g.type(node.inputs[0]).shape;
  if (node.op == OpType::kReshape && !node.outputs.empty()) {
    const Shape& out = node.outputs[0].shape;
    Ints target(out.begin(), out.end());
    size_t i = 0;
    for (; i < target.size() && i < in.size() && target[i] == in[i]; ++i) target[i] = 0;
    const bool empty = std::find(out.begin(), out.end(), 0) != out.end();
    if (i < target.size() && !empty) target[i] = -1;
    attrs.Set("shape", target);
  } else if (node.op == OpType::kSlice) {
    Ints ends = attrs.GetInts("ends");
    Ints axes = attrs.GetInts("axes");
    const Ints steps = attrs.GetInts("steps");
    if (axes.empty())
      for (size_t k = 0; k < ends.size(); ++k) axes.push_back(static_cast<int64_t>(k));
    for (size_t k = 0; k < ends.size() && k < axes.size(); ++k) {
      const int64_t axis = axes[k] < 0 ? axes[k] + static_cast<int64_t>(in.size()) : axes[k];
      const int64_t step = k < steps.size() ? steps[k] : 1;
      if (axis < 0 || axis >= static_cast<int64_t>(in.size()) || step <= 0) continue;
      if (ends[k] >= in[axis]) ends[k] = std::numeric_limits<int64_t>::max();
    }
    attrs.Set("ends", ends);
  }
}

class Exporter {
 public:
  Exporter(const Graph& graph, const OnnxExportOptions& options,
           ExternalDataWriter* external = nullptr)
      : external_(external),
        g_(graph),
        custom_(options.custom_ops),
        by_id_(options.node_names_by_id),
        dynamic_(options.dynamic_axes && !options.dynamic_axes->empty() ? options.dynamic_axes
                                                                        : nullptr) {}
  StatusOr<onnx::ModelProto> Run();

 private:
  std::string Unique(const std::string& base);
  /// A node name not used yet (ONNX Runtime rejects duplicates).
  std::string NodeName(const std::string& base);
  /// Adds a node of the default domain (or `domain`); returns it.
  onnx::NodeProto* AddNode(const std::string& op_type, const std::string& name,
                           const std::vector<std::string>& inputs,
                           const std::vector<std::string>& outputs, const std::string& domain = "");
  /// Adds an initializer holding `t`, named after `base`; returns its name.
  std::string Initializer(const HostTensor& t, const std::string& base);
  /// Adds the initializer `name` holding `t`: in the external data where it goes there.
  void AddInitializer(const HostTensor& t, const std::string& name) {
    if (!external_ || !external_->Write(t, name, graph_->add_initializer())) {
      if (external_) graph_->mutable_initializer()->RemoveLast();
      HostToTensor(t, name, graph_->add_initializer());
    }
  }
  ExternalDataWriter* external_;
  /// Makes `t` the value `name` (already reserved): an initializer, or a Constant node when
  /// `name` is a graph output.
  void ConstantValue(const HostTensor& t, const std::string& name, bool graph_output);
  /// Standard-ONNX lowering of one op (default export).
  Status EmitLowered(const Node& node, const std::string& base,
                     const std::vector<std::string>& inputs,
                     const std::vector<std::string>& outputs);
  /// The op in its ONNX twin's form: static operands as constant inputs; `attrs` without the
  /// ones implied by default. `all_constant` marks a node that import must not fold.
  Status EmitTwin(const Node& node, Attrs attrs, const std::string& base,
                  std::vector<std::string> inputs, const std::vector<std::string>& outputs,
                  bool all_constant);
  /// y = activation(x) as standard nodes.
  Status EmitActivation(const std::string& act, const std::string& x, const std::string& y,
                        const std::string& base, DType dtype);
  /// Exact GELU, x * (1 + erf(x / sqrt 2)) * 0.5, as standard nodes (the pattern that ONNX
  /// Runtime fuses back into its Gelu kernel).
  void EmitGelu(const std::string& x, const std::string& y, const std::string& base, DType dtype);
  /// With dynamic axes, a Reshape target that copying (0) and one inferred dimension (-1) do
  /// not cover: read at run time from the shape of an earlier value whose leading dimensions
  /// are the target's (Shape(start=0, end=k) then the rest of the target, its first dimension
  /// inferred). Returns its name, or empty where the 0/-1 form will do or no value fits.
  std::string DynamicReshapeTarget(const Node& node, const std::string& base);
  /// Emits a Constant node holding `t`; returns the name of its output.
  std::string ConstantInput(const HostTensor& t, const std::string& base);
  /// True when every attribute of `node` has a place in its ONNX twin at opset 17.
  bool FitsStandard(const Node& node) const;
  Status EmitLeaf(const Node& node);
  Status EmitOp(const Node& node);
  Status EmitOutputs();

  const Graph& g_;
  const bool custom_;
  const bool by_id_;
  const OnnxDynamicAxes* dynamic_;  // null: static shapes throughout
  onnx::ModelProto model_;
  onnx::GraphProto* graph_ = nullptr;
  std::unordered_set<std::string> used_;
  std::map<ValueRef, std::string> names_;
  std::map<ValueRef, std::string> preferred_;  // op outputs named after a graph output
  std::set<std::string> domains_;              // non-standard domains used
  std::unordered_set<std::string> leaf_names_;
  std::unordered_set<std::string> node_names_;
};

std::string Exporter::NodeName(const std::string& base) {
  std::string name = base.empty() ? "n" : base;
  for (int i = 1; node_names_.count(name); ++i) name = base + "_" + std::to_string(i);
  node_names_.insert(name);
  return name;
}

onnx::NodeProto* Exporter::AddNode(const std::string& op_type, const std::string& name,
                                   const std::vector<std::string>& inputs,
                                   const std::vector<std::string>& outputs,
                                   const std::string& domain) {
  onnx::NodeProto* n = graph_->add_node();
  n->set_op_type(op_type);
  if (!domain.empty()) n->set_domain(domain);
  n->set_name(NodeName(name));
  for (const std::string& in : inputs) n->add_input(in);
  for (const std::string& out : outputs) n->add_output(out);
  return n;
}

std::string Exporter::Initializer(const HostTensor& t, const std::string& base) {
  const std::string name = Unique(base);
  AddInitializer(t, name);
  return name;
}

void Exporter::ConstantValue(const HostTensor& t, const std::string& name, bool graph_output) {
  if (!graph_output) {
    AddInitializer(t, name);
    return;
  }
  onnx::NodeProto* c = AddNode("Constant", name, {}, {name});
  onnx::AttributeProto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  HostToTensor(t, "", a->mutable_t());
}

std::string Exporter::Unique(const std::string& base) {
  std::string name = base.empty() ? "v" : base;
  for (int i = 1; used_.count(name); ++i) name = base + "_" + std::to_string(i);
  used_.insert(name);
  return name;
}

std::string Exporter::ConstantInput(const HostTensor& t, const std::string& base) {
  const std::string name = Unique(base);
  onnx::NodeProto* c = AddNode("Constant", name, {}, {name});
  onnx::AttributeProto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  HostToTensor(t, "", a->mutable_t());
  return name;
}

bool Exporter::FitsStandard(const Node& node) const {
  const OpInfo& info = GetOpInfo(node.op);
  if (info.onnx_name.empty() || !info.domain.empty()) return false;
  if (node.op == OpType::kIdentity) return false;  // a standard Identity is aliased on import
  const onnx::OpSchema* schema =
      onnx::OpSchemaRegistry::Schema(std::string(info.onnx_name), kExportOpset, "");
  if (!schema) return false;
  const auto& as_inputs = AttrsAsInputs(node.op);
  for (const auto& [name, value] : node.attrs.items()) {
    if (std::find(as_inputs.begin(), as_inputs.end(), name) != as_inputs.end()) continue;
    if (ImpliedDefault(node.op, name, value)) continue;
    auto it = schema->attributes().find(name);
    if (it == schema->attributes().end() || it->second.type != AttrType(value)) return false;
  }
  return true;
}

Status Exporter::EmitLeaf(const Node& node) {
  const ValueRef v{node.id, 0};
  names_[v] = node.name;
  if (node.op == OpType::kInput) {
    SetType(graph_->add_input(), node.name, node.outputs[0]);
    if (dynamic_) SetDimParams(graph_->mutable_input(graph_->input_size() - 1), dynamic_->inputs);
    return Status::Ok();
  }
  HostTensorPtr data = MaterializeData(node);
  if (!data) return InvalidArgument("'" + node.name + "' has no data");
  if (node.op == OpType::kWeight) {
    AddInitializer(*data, node.name);
    return Status::Ok();
  }
  onnx::NodeProto* c = AddNode("Constant", node.name, {}, {node.name});
  onnx::AttributeProto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  HostToTensor(*data, "", a->mutable_t());
  return Status::Ok();
}

Status Exporter::EmitOp(const Node& node) {
  const OpInfo& info = GetOpInfo(node.op);
  const std::string base = by_id_              ? "n" + std::to_string(node.id)
                           : node.name.empty() ? node.TypeName()
                                               : node.name;
  // Output names first: constant inputs emitted below are named after them.
  std::vector<std::string> outputs;
  for (uint32_t i = 0; i < node.outputs.size(); ++i) {
    const ValueRef v{node.id, i};
    auto it = preferred_.find(v);
    std::string name =
        it != preferred_.end()
            ? it->second
            : Unique(node.outputs.size() == 1 ? base : base + ":" + std::to_string(i));
    names_[v] = name;
    outputs.push_back(name);
  }
  std::vector<std::string> inputs;
  bool all_constant = !node.inputs.empty();
  for (const ValueRef& in : node.inputs) {
    inputs.push_back(names_.at(in));
    all_constant = all_constant && g_.node(in.node).op == OpType::kConstant;
  }

  bool value_info = true;
  if (node.op == OpType::kOpaque) {
    Attrs attrs = node.attrs;
    const std::string op_type = attrs.GetString("onnx_op");
    const std::string domain = attrs.GetString("onnx_domain");
    attrs.Erase("onnx_op");
    attrs.Erase("onnx_domain");
    if (op_type.empty()) return InvalidArgument("opaque node '" + node.name + "' has no onnx_op");
    if (!domain.empty()) domains_.insert(domain);
    onnx::NodeProto* n = AddNode(op_type, base, inputs, outputs, domain);
    for (const auto& [name, value] : attrs.items()) REWIRE_RETURN_IF_ERROR(SetAttr(n, name, value));
  } else if (!custom_) {
    REWIRE_RETURN_IF_ERROR(EmitLowered(node, base, inputs, outputs));
    // A weight computed at export is an initializer and carries its own type.
    value_info = !((node.op == OpType::kEnlarge || node.op == OpType::kMergeGConv) &&
                   g_.node(node.inputs[0].node).IsLeaf() &&
                   g_.node(node.inputs[0].node).op != OpType::kInput);
  } else if (FitsStandard(node)) {
    REWIRE_RETURN_IF_ERROR(EmitTwin(node, node.attrs, base, inputs, outputs, all_constant));
  } else {
    const std::string domain = std::string(kRewireDomain);
    const std::string op_type =
        info.domain == kRewireDomain ? std::string(info.onnx_name) : std::string(info.name);
    domains_.insert(domain);
    onnx::NodeProto* n = AddNode(op_type, base, inputs, outputs, domain);
    for (const auto& [name, value] : node.attrs.items())
      REWIRE_RETURN_IF_ERROR(SetAttr(n, name, value));
  }
  // With dynamic axes an intermediate value's shape is the fixed size's: none is written.
  for (uint32_t i = 0; value_info && !dynamic_ && i < node.outputs.size(); ++i) {
    if (!preferred_.count({node.id, i})) {
      SetType(graph_->add_value_info(), outputs[i], node.outputs[i]);
    }
  }
  return Status::Ok();
}

Status Exporter::EmitTwin(const Node& node, Attrs attrs, const std::string& base,
                          std::vector<std::string> inputs, const std::vector<std::string>& outputs,
                          bool all_constant) {
  std::string computed_shape;
  if (dynamic_ && node.op == OpType::kReshape) computed_shape = DynamicReshapeTarget(node, base);
  if (!computed_shape.empty()) {
    attrs.Erase("shape");
    inputs.push_back(computed_shape);
  } else if (dynamic_) {
    GeneraliseShapes(node, g_, attrs);
  }
  // Static operands that opset 17 takes as inputs.
  const auto& as_inputs = AttrsAsInputs(node.op);
  std::vector<std::string> extra;
  for (const std::string& name : as_inputs) {
    const AttrValue* v = attrs.Find(name);
    if (!v) {
      extra.push_back("");
      continue;
    }
    const std::string cname = outputs[0] + "/" + name;
    if (const auto* is = std::get_if<Ints>(v)) {
      extra.push_back(
          ConstantInput(HostTensor::FromInt64s({static_cast<int64_t>(is->size())}, *is), cname));
    } else if (const auto* f = std::get_if<float>(v)) {
      const DType dt = g_.type(node.inputs[0]).dtype;  // Pad's value has the data's type
      HostTensor t(dt, {});
      if (dt == DType::kInt64)
        *t.data<int64_t>() = static_cast<int64_t>(*f);
      else if (dt == DType::kBool)
        *t.data<uint8_t>() = *f != 0;
      else
        *t.data<float>() = *f;
      extra.push_back(ConstantInput(t, cname));
    } else {
      return Internal("attribute '" + name + "' of " + base + " has an unexpected type");
    }
    attrs.Erase(name);
  }
  while (!extra.empty() && extra.back().empty()) extra.pop_back();
  inputs.insert(inputs.end(), extra.begin(), extra.end());
  for (const auto& [name, value] : node.attrs.items()) {
    if (ImpliedDefault(node.op, name, value)) attrs.Erase(name);
  }
  onnx::NodeProto* n = AddNode(std::string(GetOpInfo(node.op).onnx_name), base, inputs, outputs);
  if (all_constant) n->set_doc_string(kNoFoldDoc);
  for (const auto& [name, value] : attrs.items()) REWIRE_RETURN_IF_ERROR(SetAttr(n, name, value));
  return Status::Ok();
}

std::string Exporter::DynamicReshapeTarget(const Node& node, const std::string& base) {
  const Shape& in = g_.type(node.inputs[0]).shape;
  const Shape& out = node.outputs[0].shape;
  size_t copied = 0;
  while (copied < out.size() && copied < in.size() && out[copied] == in[copied]) ++copied;
  if (copied + 1 >= out.size()) return "";  // 0s and at most one -1
  // The nearest earlier value (a graph input or an op's output) with the longest such prefix.
  auto prefix = [&](const Shape& s) {
    size_t k = 0;
    while (k < out.size() && k < s.size() && s[k] == out[k]) ++k;
    return k;
  };
  constexpr size_t kMaxVisited = 256;
  std::vector<ValueRef> frontier(node.inputs.begin(), node.inputs.end());
  std::set<ValueRef> seen(frontier.begin(), frontier.end());
  ValueRef best{kNoNode, 0};
  size_t best_k = copied + 1;
  for (size_t at = 0; at < frontier.size() && at < kMaxVisited; ++at) {
    const ValueRef v = frontier[at];
    const Node& n = g_.node(v.node);
    if (n.op == OpType::kWeight || n.op == OpType::kConstant) continue;
    const size_t k = prefix(g_.type(v).shape);
    if (k > best_k) {
      best = v;
      best_k = k;
    }
    for (const ValueRef& u : n.inputs)
      if (seen.insert(u).second) frontier.push_back(u);
  }
  if (best.node == kNoNode) return "";
  const std::string lead = Unique(base + "/shape_lead");
  onnx::NodeProto* shape = AddNode("Shape", lead, {names_.at(best)}, {lead});
  (void)SetAttr(shape, "start", int64_t{0});
  (void)SetAttr(shape, "end", static_cast<int64_t>(best_k));
  if (best_k == out.size()) return lead;
  Ints rest(out.begin() + static_cast<std::ptrdiff_t>(best_k), out.end());
  if (std::find(out.begin(), out.end(), 0) == out.end()) rest[0] = -1;
  const std::string tail = ConstantInput(
      HostTensor::FromInt64s({static_cast<int64_t>(rest.size())}, rest), base + "/shape_rest");
  const std::string target = Unique(base + "/shape");
  onnx::NodeProto* cat = AddNode("Concat", target, {lead, tail}, {target});
  (void)SetAttr(cat, "axis", int64_t{0});
  return target;
}

void Exporter::EmitGelu(const std::string& x, const std::string& y, const std::string& base,
                        DType dtype) {
  const std::string sqrt2 = Initializer(Scalar(dtype, std::sqrt(2.0)), y + "/sqrt2");
  const std::string one = Initializer(Scalar(dtype, 1.0), y + "/one");
  const std::string half = Initializer(Scalar(dtype, 0.5), y + "/half");
  const std::string d = Unique(y + "/div"), e = Unique(y + "/erf"), a = Unique(y + "/add"),
                    m = Unique(y + "/mul");
  AddNode("Div", base + "/div", {x, sqrt2}, {d});
  AddNode("Erf", base + "/erf", {d}, {e});
  AddNode("Add", base + "/add", {e, one}, {a});
  AddNode("Mul", base + "/mul", {x, a}, {m});
  AddNode("Mul", base + "/half", {m, half}, {y});
}

Status Exporter::EmitActivation(const std::string& act, const std::string& x, const std::string& y,
                                const std::string& base, DType dtype) {
  static const std::map<std::string, std::string> simple = {
      {"relu", "Relu"}, {"sigmoid", "Sigmoid"}, {"tanh", "Tanh"}};
  if (auto it = simple.find(act); it != simple.end()) {
    AddNode(it->second, base + "/" + act, {x}, {y});
    return Status::Ok();
  }
  if (act == "gelu") {
    EmitGelu(x, y, base, dtype);
    return Status::Ok();
  }
  return InvalidArgument("'" + base + "': fused activation '" + act +
                         "' has no standard ONNX form");
}

Status Exporter::EmitLowered(const Node& node, const std::string& base,
                             const std::vector<std::string>& inputs,
                             const std::vector<std::string>& outputs) {
  const DType dtype = node.outputs.empty() ? DType::kFloat32 : node.outputs[0].dtype;
  const Node* src = node.inputs.empty() ? nullptr : &g_.node(node.inputs[0].node);
  // The weight an op transforms, when it is known at export.
  HostTensorPtr known;
  if (src && src->IsLeaf() && src->op != OpType::kInput) known = MaterializeData(*src);
  const bool graph_output = preferred_.count({node.id, 0}) > 0;
  switch (node.op) {
    case OpType::kGelu:
      EmitGelu(inputs[0], outputs[0], base, dtype);
      return Status::Ok();
    case OpType::kScalarMul: {
      const std::string c =
          Initializer(Scalar(dtype, node.attrs.GetFloat("scalar", 1.f)), outputs[0] + "/scalar");
      AddNode("Mul", base, {inputs[0], c}, outputs);
      return Status::Ok();
    }
    case OpType::kIdentity:
      AddNode("Identity", base, inputs, outputs);
      return Status::Ok();
    case OpType::kEnlarge: {
      const Ints ks = node.attrs.GetInts("kernel_shape");
      if (known) {
        REWIRE_ASSIGN_OR_RETURN(HostTensor w, EnlargeWeight(*known, ks));
        ConstantValue(w, outputs[0], graph_output);
        return Status::Ok();
      }
      const Shape& s = g_.type(node.inputs[0]).shape;
      if (s.size() != 4 || ks.size() != 2)
        return InvalidArgument("'" + base + "': Enlarge needs a 4-D weight");
      const int64_t dh = ks[0] - s[2], dw = ks[1] - s[3];
      const std::string pads = ConstantInput(
          HostTensor::FromInt64s({8}, {0, 0, dh / 2, dw / 2, 0, 0, dh - dh / 2, dw - dw / 2}),
          outputs[0] + "/pads");
      AddNode("Pad", base, {inputs[0], pads}, outputs);
      return Status::Ok();
    }
    case OpType::kMergeGConv: {
      const int64_t count = node.attrs.GetInt("count", 1);
      const int64_t groups = node.attrs.GetInt("group", count);
      if (known) {
        REWIRE_ASSIGN_OR_RETURN(HostTensor w, MergeGConvWeight(*known, count, groups));
        ConstantValue(w, outputs[0], graph_output);
        return Status::Ok();
      }
      // A computed weight: block b of the result's input channels is the weight masked to the
      // output channels whose group sits in block b.
      const Shape& s = g_.type(node.inputs[0]).shape;
      if (s.size() != 4 || count < 1 || groups < 1 || groups % count || s[0] % groups) {
        return InvalidArgument("'" + base +
                               "': MergeGConv's weight shape and group/count do not agree");
      }
      std::vector<std::string> blocks;
      for (int64_t b = 0; b < count; ++b) {
        HostTensor mask(DType::kFloat32, {s[0], 1, 1, 1});
        for (int64_t o = 0; o < s[0]; ++o) {
          const bool on = (o / (s[0] / groups)) % count == b;
          mask.data<float>()[o] = on;
        }
        const std::string m = Initializer(mask, outputs[0] + "/mask" + std::to_string(b));
        const std::string y = Unique(outputs[0] + "/block" + std::to_string(b));
        AddNode("Mul", base + "/block" + std::to_string(b), {inputs[0], m}, {y});
        blocks.push_back(y);
      }
      onnx::NodeProto* cat = AddNode("Concat", base, blocks, outputs);
      REWIRE_RETURN_IF_ERROR(SetAttr(cat, "axis", int64_t{1}));
      return Status::Ok();
    }
    default:
      break;
  }
  Node plain = node;
  const std::string act = plain.attrs.GetString("activation", "none");
  plain.attrs.Erase("activation");
  if (!FitsStandard(plain)) {
    return InvalidArgument("'" + base + "' (" + std::string(node.TypeName()) +
                           ") has no standard ONNX form at opset " + std::to_string(kExportOpset) +
                           "; export with custom ops to keep it in the ai.rewire domain");
  }
  bool all_constant = !node.inputs.empty();
  for (const ValueRef& in : node.inputs)
    all_constant = all_constant && g_.node(in.node).op == OpType::kConstant;
  if (act == "none") return EmitTwin(plain, plain.attrs, base, inputs, outputs, all_constant);
  const std::string linear = Unique(outputs[0] + "/linear");
  REWIRE_RETURN_IF_ERROR(EmitTwin(plain, plain.attrs, base, inputs, {linear}, all_constant));
  if (!dynamic_) SetType(graph_->add_value_info(), linear, node.outputs[0]);
  return EmitActivation(act, linear, outputs[0], base, dtype);
}

Status Exporter::EmitOutputs() {
  for (const GraphOutput& out : g_.outputs()) {
    const std::string& value = names_.at(out.value);
    if (value != out.name) {
      // The value already has another name (a leaf, or a second output of the same value).
      if (leaf_names_.count(out.name)) {
        return InvalidArgument("graph output '" + out.name +
                               "' has the name of an input, weight or constant that it is not");
      }
      AddNode("Identity", out.name, {value}, {out.name});
    }
    SetType(graph_->add_output(), out.name, g_.type(out.value));
    if (dynamic_)
      SetDimParams(graph_->mutable_output(graph_->output_size() - 1), dynamic_->outputs);
  }
  return Status::Ok();
}

StatusOr<onnx::ModelProto> Exporter::Run() {
  model_.set_ir_version(kExportIrVersion);
  model_.set_producer_name("rewire");
  model_.set_producer_version("0.1.0");
  graph_ = model_.mutable_graph();
  graph_->set_name("rewire");

  const std::vector<NodeId> order = g_.TopologicalOrder();
  for (NodeId id : order) {
    const Node& n = g_.node(id);
    if (n.IsLeaf()) {
      used_.insert(n.name);
      leaf_names_.insert(n.name);
    }
  }
  // Each op output that is a graph output takes that name (the first such output), unless a
  // leaf already has it; the remaining outputs get Identity nodes.
  std::set<std::string> output_names;
  for (const GraphOutput& out : g_.outputs()) {
    if (!output_names.insert(out.name).second) {
      return InvalidArgument("duplicate graph output name '" + out.name + "'");
    }
    if (g_.node(out.value.node).IsLeaf() || preferred_.count(out.value) ||
        leaf_names_.count(out.name)) {
      continue;
    }
    preferred_[out.value] = out.name;
  }
  for (const GraphOutput& out : g_.outputs()) used_.insert(out.name);

  for (NodeId id : order) {
    const Node& n = g_.node(id);
    if (n.IsLeaf()) REWIRE_RETURN_IF_ERROR(EmitLeaf(n));
  }
  for (NodeId id : order) {
    const Node& n = g_.node(id);
    if (!n.IsLeaf()) REWIRE_RETURN_IF_ERROR(EmitOp(n));
  }
  REWIRE_RETURN_IF_ERROR(EmitOutputs());

  auto* opset = model_.add_opset_import();
  opset->set_domain("");
  opset->set_version(kExportOpset);
  for (const std::string& d : domains_) {
    auto* o = model_.add_opset_import();
    o->set_domain(d);
    o->set_version(1);
  }
  return std::move(model_);
}

}  // namespace
}  // namespace onnx_io

StatusOr<std::string> ExportOnnxBytes(const Graph& graph, const OnnxExportOptions& options) {
  try {
    std::unique_ptr<onnx_io::ExternalDataWriter> external;
    if (!options.external_data_path.empty()) {
      external = std::make_unique<onnx_io::ExternalDataWriter>(
          options.external_data_path, options.external_min_bytes, options.float_type);
      REWIRE_RETURN_IF_ERROR(external->Open());
    }
    REWIRE_ASSIGN_OR_RETURN(onnx::ModelProto model,
                            onnx_io::Exporter(graph, options, external.get()).Run());
    if (options.float_type != 0) {
      REWIRE_RETURN_IF_ERROR(onnx_io::RaiseFloatToHalf(model, options.float_type));
    }
    const size_t size = model.ByteSizeLong();
    if (size > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
      return InvalidArgument("the ONNX model is " + std::to_string(size >> 20) +
                             " MiB, past protobuf's 2 GiB limit for one message: write its "
                             "weights as external data (rewire optimize --external-data)");
    }
    std::string bytes;
    if (!model.SerializeToString(&bytes)) {
      return InvalidArgument("the ONNX model could not be serialised");
    }
    if (external) REWIRE_RETURN_IF_ERROR(external->Commit());
    return bytes;
  } catch (const std::exception& e) {
    return Internal(std::string("unexpected error while exporting ONNX: ") + e.what());
  }
}

Status ExportOnnxFile(const Graph& graph, const std::string& path,
                      const OnnxExportOptions& options) {
  REWIRE_ASSIGN_OR_RETURN(std::string bytes, ExportOnnxBytes(graph, options));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return NotFound(path + ": cannot open the file for writing");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return DataLoss(path + ": write failed");
  return Status::Ok();
}

}  // namespace rewire

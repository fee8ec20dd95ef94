// ONNX -> rewire Graph. Initializers become Weights (float) or Constants; shape arithmetic on
// constants is folded (onnx_fold.cc); ops in rewire's vocabulary map onto it; anything else
// becomes an Opaque node typed by ONNX's own shape inference.

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <sys/stat.h>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include <onnx/checker.h>
#include <onnx/version_converter/convert.h>

#include "graph/onnx/onnx_importer.h"
#include "graph/onnx/onnx_io.h"

namespace rewire {
namespace onnx_io {

// ---------------------------------------------------------------------------- setup

std::optional<int> StandardOpset(const onnx::ModelProto& model) {
  std::optional<int> opset;
  for (const auto& op : model.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") opset = static_cast<int>(op.version());
  }
  return opset;
}

Status Importer::ReadOpset() {
  const std::optional<int> opset = StandardOpset(model_);
  if (!opset) return Fail("the model imports no version of the standard ONNX operator set");
  opset_ = *opset;
  if (opset_ < kOpsetMin || opset_ > kOpsetMax) {
    return Fail("ONNX opset " + std::to_string(opset_) + " is not supported (rewire reads " +
                std::to_string(kOpsetMin) + " to " + std::to_string(kOpsetMax) +
                "; 11 to 17 are tested)");
  }
  return Status::Ok();
}

static StatusOr<TensorType> StaticType(const onnx::TypeProto& t, const std::string& what) {
  if (!t.has_tensor_type())
    return InvalidArgument(what +
                           " is not a tensor (sequences, maps and optionals are not supported)");
  const auto& tt = t.tensor_type();
  const int32_t elem = tt.elem_type();
  auto dtype = DTypeFromOnnx(elem);
  if (!dtype.ok()) {
    return InvalidArgument(what + " has element type " + OnnxTypeName(elem) +
                           ", which rewire does not carry (float32, int64 and bool only)");
  }
  if (!tt.has_shape()) return InvalidArgument(what + " has no shape; rewire needs static shapes");
  Shape shape;
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    if (d.has_dim_value() && d.dim_value() > 0) {
      shape.push_back(d.dim_value());
      continue;
    }
    if (d.has_dim_value()) {
      return InvalidArgument(what + " dimension " + std::to_string(i) + " is " +
                             std::to_string(d.dim_value()) + "; dimensions must be positive");
    }
    const std::string sym = d.has_dim_param() ? " ('" + d.dim_param() + "')" : "";
    return InvalidArgument(
        what + " dimension " + std::to_string(i) + " is dynamic" + sym +
        "; rewire needs static shapes: fix it with --input-shape (e.g. --input-shape " +
        (d.has_dim_param() ? d.dim_param() + "=1" : "NAME=DIMS") +
        "), or export the model with fixed input sizes");
  }
  if (!CheckedNumElements(shape)) return InvalidArgument(what + " is too large");
  return TensorType{*dtype, shape};
}

Status Importer::DeclareInputsAndInitializers() {
  for (const auto& vi : g_.value_info()) value_info_[vi.name()] = &vi.type();
  for (const auto& vi : g_.output()) {
    if (vi.has_type()) value_info_[vi.name()] = &vi.type();
  }
  for (const TensorProto& t : g_.initializer()) {
    if (t.name().empty()) return Fail("an initializer has no name");
    auto v = std::make_shared<Value>();
    v->init = &t;
    v->weight = t.data_type() == TensorProto::FLOAT;
    v->leaf_name = t.name();
    REWIRE_RETURN_IF_ERROR(Define(t.name(), v));
  }
  if (g_.sparse_initializer_size() > 0) return Fail("sparse initializers are not supported");
  for (const auto& in : g_.input()) {
    if (Lookup(in.name())) {
      const Value& v = *Lookup(in.name());
      if (v.init) continue;  // IR < 4 lists initializers among the inputs
      return Fail("graph input '" + in.name() + "' is declared twice");
    }
    if (in.name().empty()) return Fail("a graph input has no name");
    if (!in.has_type()) return Fail("graph input '" + in.name() + "' has no type");
    auto type = StaticType(in.type(), "graph input '" + in.name() + "'");
    if (!type.ok()) return Fail(type.status().message());
    auto id = graph_.AddInput(in.name(), *type);
    if (!id.ok()) return Fail(id.status().message());
    auto v = std::make_shared<Value>();
    v->ref = ValueRef{*id, 0};
    REWIRE_RETURN_IF_ERROR(Define(in.name(), v));
  }
  return Status::Ok();
}

Status Importer::Define(const std::string& name, std::shared_ptr<Value> v) {
  if (name.empty()) return Status::Ok();  // an optional output nobody asked for
  if (values_.count(name)) return Fail("value '" + name + "' is defined more than once");
  names_.insert(name);
  values_[name] = std::move(v);
  return Status::Ok();
}

StatusOr<std::vector<const NodeProto*>> Importer::Schedule() {
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < g_.node_size(); ++i) {
    for (const std::string& out : g_.node(i).output()) {
      if (out.empty()) continue;
      if (values_.count(out) || !producer.emplace(out, i).second) {
        return Fail("value '" + out + "' is defined more than once (node " + Describe(g_.node(i)) +
                    ")");
      }
      names_.insert(out);
    }
  }
  // Depth-first from the graph outputs (iterative: graphs may be deep): only live nodes are
  // imported, producers before consumers; a node met again while open closes a cycle.
  std::vector<int> state(g_.node_size(), 0);  // 0 new, 1 open, 2 done
  std::vector<const NodeProto*> order;
  std::vector<std::pair<int, int>> stack;  // node, next input to visit
  auto visit = [&](const std::string& name, const std::string& user) -> Status {
    if (name.empty() || values_.count(name)) return Status::Ok();
    auto it = producer.find(name);
    if (it == producer.end()) {
      return Fail(user + " reads '" + name + "', which no node, input or initializer defines");
    }
    if (state[it->second] == 1) {
      return Fail("the graph has a cycle through node " + Describe(g_.node(it->second)));
    }
    if (state[it->second] == 0) {
      state[it->second] = 1;
      stack.push_back({it->second, 0});
    }
    return Status::Ok();
  };
  for (const auto& out : g_.output()) {
    if (out.name().empty()) return Fail("a graph output has no name");
    REWIRE_RETURN_IF_ERROR(visit(out.name(), "graph output '" + out.name() + "'"));
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      const NodeProto& node = g_.node(n);
      if (next < node.input_size()) {
        const std::string& in = node.input(next++);
        REWIRE_RETURN_IF_ERROR(visit(in, "node " + Describe(node)));
        continue;
      }
      state[n] = 2;
      order.push_back(&node);
      stack.pop_back();
    }
  }
  return order;
}

// ---------------------------------------------------------------------------- values

std::string Importer::UniqueName(const std::string& base) {
  std::string name = base;
  for (int i = 1; names_.count(name); ++i) name = base + "_" + std::to_string(i);
  names_.insert(name);
  return name;
}

StatusOr<ValueRef> Importer::Runtime(const std::string& name) {
  std::shared_ptr<Value> v = Lookup(name);
  if (!v) return Fail("value '" + name + "' is not defined");
  if (!v->unusable.empty()) return Fail("value '" + name + "' is used, but " + v->unusable);
  if (v->ref) return *v->ref;
  const std::string what = "constant '" + name + "'";
  StatusOr<NodeId> id = Status(StatusCode::kInternal, "no value");
  if (v->init && v->weight) {
    auto data = HostFromTensor(*v->init, "initializer '" + name + "'");
    if (!data.ok()) return Fail(data.status().message());
    id = graph_.AddWeightData(v->leaf_name, *data);
    constexpr size_t kReleaseBytes = size_t{1} << 20;
    if (id.ok() && owned_ && v->init->raw_data().size() >= kReleaseBytes) {
      // The graph holds the weight now: the model's copy goes (`init` points into owned_). Its
      // memory too: clearing a string keeps its capacity, swapping with an empty one frees it.
      std::string().swap(*const_cast<TensorProto*>(v->init)->mutable_raw_data());
      v->released = true;
    }
  } else {
    REWIRE_ASSIGN_OR_RETURN(const Literal* lit, ConstantOf(name));
    auto data = LiteralToHost(*lit, what);
    if (!data.ok()) return Fail(data.status().message());
    id = graph_.AddConstant(v->leaf_name.empty() ? name : v->leaf_name, *data);
  }
  if (!id.ok()) return Fail(id.status().message());
  v->ref = ValueRef{*id, 0};
  return *v->ref;
}

StatusOr<const Literal*> Importer::ConstantOf(const std::string& name) {
  std::shared_ptr<Value> v = Lookup(name);
  if (!v) return Fail("value '" + name + "' is not defined");
  if (!v->unusable.empty()) return Fail("value '" + name + "' is used, but " + v->unusable);
  if (v->lit) return v->lit.get();
  if (v->released) {
    return Fail("weight '" + name +
                "' is used as a constant operand after it was read as a "
                "weight; rewire reads a weight over 1 MiB once");
  }
  if (v->init) {
    auto lit = LiteralFromTensor(*v->init, "initializer '" + name + "'");
    if (!lit.ok()) return Fail(lit.status().message());
    v->lit = std::make_shared<const Literal>(std::move(lit).value());
    return v->lit.get();
  }
  return Fail("value '" + name + "' must be a constant, but it is computed at run time");
}

const Literal* Importer::Foldable(const std::string& name) {
  std::shared_ptr<Value> v = Lookup(name);
  if (!v || !v->unusable.empty() || v->weight) return nullptr;
  if (v->lit) return v->lit.get();
  if (v->init) {
    auto lit = ConstantOf(name);
    return lit.ok() ? *lit : nullptr;
  }
  return nullptr;
}

bool Importer::IsConstant(const std::string& name) const {
  std::shared_ptr<Value> v = Lookup(name);
  if (!v || !v->unusable.empty()) return false;
  if (v->lit || v->init) return true;
  if (!v->ref) return false;
  const OpType op = graph_.node(v->ref->node).op;
  return op == OpType::kWeight || op == OpType::kConstant;
}

StatusOr<Shape> Importer::ShapeOf(const std::string& name) {
  std::shared_ptr<Value> v = Lookup(name);
  if (!v) return Fail("value '" + name + "' is not defined");
  if (!v->unusable.empty()) return Fail("value '" + name + "' is used, but " + v->unusable);
  if (v->ref) return graph_.type(*v->ref).shape;
  if (v->lit) return v->lit->shape;
  if (v->init) {
    Shape s(v->init->dims().begin(), v->init->dims().end());
    if (!CheckedNumElements(s)) return Fail("initializer '" + name + "' has invalid dimensions");
    return s;
  }
  return Fail("value '" + name + "' has no shape");
}

StatusOr<TensorType> Importer::TypeOf(const std::string& name) {
  std::shared_ptr<Value> v = Lookup(name);
  if (v && v->ref) return graph_.type(*v->ref);
  REWIRE_ASSIGN_OR_RETURN(Shape shape, ShapeOf(name));
  const int32_t code = v->lit ? v->lit->dtype : v->init->data_type();
  DType dt = DType::kFloat32;
  if (code == TensorProto::BOOL)
    dt = DType::kBool;
  else if (code != TensorProto::FLOAT && code != TensorProto::DOUBLE)
    dt = DType::kInt64;
  return TensorType{dt, shape};
}

StatusOr<Literal> Importer::StaticInput(const NodeProto& node, int index, const char* what) {
  if (index >= node.input_size() || node.input(index).empty()) {
    return FailAt(node, std::string("input '") + what + "' is missing");
  }
  std::shared_ptr<Value> v = Lookup(node.input(index));
  if (v && v->ref && !v->lit && !v->init) {
    return FailAt(node, std::string("input '") + what + "' ('" + node.input(index) +
                            "') must be a constant, but it is computed at run time; rewire needs "
                            "it to fold to a constant");
  }
  auto lit = ConstantOf(node.input(index));
  if (!lit.ok()) return AtNode(node, lit.status());
  return **lit;
}

// ---------------------------------------------------------------------------- nodes

Status Importer::DefineOutputs(const NodeProto& node, NodeId id, size_t count) {
  for (int i = 0; i < node.output_size(); ++i) {
    auto v = std::make_shared<Value>();
    if (static_cast<size_t>(i) < count) {
      v->ref = ValueRef{id, static_cast<uint32_t>(i)};
    } else {
      v->unusable =
          "output " + std::to_string(i) + " of " + Describe(node) + " is not supported by rewire";
    }
    REWIRE_RETURN_IF_ERROR(Define(node.output(i), v));
  }
  return Status::Ok();
}

Status Importer::BoundAttributes(const NodeProto& node, OpType op, Attrs* attrs) const {
  // Shape inference works in int64; absurd values from a hostile file must not overflow it.
  constexpr int64_t kLarge = int64_t{1} << 40;   // any integer attribute
  constexpr int64_t kWindow = int64_t{1} << 20;  // kernels, strides, pads, dilations, groups
  const bool window_op = op == OpType::kConv2D || op == OpType::kMaxPool2D ||
                         op == OpType::kAvgPool2D || op == OpType::kEnlarge ||
                         op == OpType::kMergeGConv;
  for (const auto& [name, value] : std::vector<std::pair<std::string, AttrValue>>(attrs->items())) {
    if (const auto* f = std::get_if<float>(&value); f && std::isnan(*f)) {
      return FailAt(node, "attribute '" + name + "' is NaN");
    }
    if (const auto* fs = std::get_if<Floats>(&value)) {
      for (float f : *fs) {
        if (std::isnan(f)) return FailAt(node, "attribute '" + name + "' holds NaN");
      }
    }
    Ints vals;
    if (const auto* i = std::get_if<int64_t>(&value))
      vals = {*i};
    else if (const auto* is = std::get_if<Ints>(&value))
      vals = *is;
    else
      continue;
    if (op == OpType::kSlice && (name == "starts" || name == "ends")) {
      // Exporters write INT64_MAX for "to the end"; any value beyond the largest dim means the
      // same.
      for (int64_t& v : vals) v = std::clamp(v, -kLarge, kLarge);
      attrs->Set(name, vals);
      continue;
    }
    const int64_t bound = window_op ? kWindow : kLarge;
    for (int64_t v : vals) {
      if (v > bound || v < -bound) {
        return FailAt(node,
                      "attribute '" + name + "' value " + std::to_string(v) + " is out of range");
      }
    }
    if (op == OpType::kReshape && name == "shape") {
      Shape known;
      for (int64_t v : vals) {
        if (v > 0) known.push_back(v);
      }
      if (!CheckedNumElements(known)) return FailAt(node, "Reshape's shape is too large");
    }
  }
  return Status::Ok();
}

Status Importer::Emit(const NodeProto& node, OpType op, const std::vector<std::string>& inputs,
                      Attrs attrs) {
  REWIRE_RETURN_IF_ERROR(BoundAttributes(node, op, &attrs));
  std::vector<ValueRef> refs;
  for (const std::string& in : inputs) {
    auto r = Runtime(in);
    if (!r.ok()) return AtNode(node, r.status());
    refs.push_back(*r);
  }
  auto id = graph_.AddOp(op, refs, std::move(attrs), NodeName(node));
  if (!id.ok()) {
    // AddOp names the node itself; say it once, the ONNX way.
    std::string message = id.status().message();
    const std::string own = "node '" + NodeName(node) + "': ";
    if (message.rfind(own, 0) == 0) message = message.substr(own.size());
    return AtNode(node, Status(id.status().code(), message));
  }
  for (const TensorType& t : graph_.node(*id).outputs) {
    if (!CheckedNumElements(t.shape))
      return FailAt(node, "output " + t.ToString() + " is too large");
  }
  return DefineOutputs(node, *id, graph_.node(*id).outputs.size());
}

Status Importer::ImportNode(const NodeProto& node) {
  const std::string& domain = node.domain();
  const bool standard = domain.empty() || domain == "ai.onnx";
  const std::string& op = node.op_type();
  if (op.empty()) return FailAt(node, "node has no op type");
  for (int i = 0; i < node.input_size(); ++i) {
    if (!node.input(i).empty() && !Lookup(node.input(i))) {
      return FailAt(node, "input '" + node.input(i) + "' is not defined");
    }
  }

  if (standard && op == "Identity") {
    if (node.input_size() != 1 || node.output_size() != 1 || node.input(0).empty()) {
      return FailAt(node, "Identity needs one input and one output");
    }
    names_.insert(node.output(0));
    values_[node.output(0)] = Lookup(node.input(0));  // alias: both names share one value
    return Status::Ok();
  }
  if (standard && op == "Constant") {
    if (node.attribute_size() != 1 || node.output_size() != 1) {
      return FailAt(node, "Constant needs exactly one value attribute and one output");
    }
    const onnx::AttributeProto& a = node.attribute(0);
    Literal lit;
    if (a.name() == "value") {
      auto l = LiteralFromTensor(a.t(), "its value");
      if (!l.ok()) return FailAt(node, l.status().message());
      lit = std::move(l).value();
    } else if (a.name() == "value_float" || a.name() == "value_floats") {
      lit.dtype = TensorProto::FLOAT;
      if (a.name() == "value_float")
        lit.reals = {a.f()};
      else
        lit.reals.assign(a.floats().begin(), a.floats().end());
      if (a.name() == "value_floats") lit.shape = {static_cast<int64_t>(lit.reals.size())};
    } else if (a.name() == "value_int" || a.name() == "value_ints") {
      lit.dtype = TensorProto::INT64;
      if (a.name() == "value_int")
        lit.ints = {a.i()};
      else
        lit.ints.assign(a.ints().begin(), a.ints().end());
      if (a.name() == "value_ints") lit.shape = {static_cast<int64_t>(lit.ints.size())};
    } else {
      return FailAt(node, "Constant attribute '" + a.name() + "' is not supported");
    }
    auto v = std::make_shared<Value>();
    v->lit = std::make_shared<const Literal>(std::move(lit));
    v->leaf_name = node.output(0);
    return Define(node.output(0), v);
  }

  if (standard && (op == "Shape" || op == "Size") && node.input_size() == 1 &&
      node.output_size() == 1) {
    auto shape = ShapeOf(node.input(0));
    if (!shape.ok()) return AtNode(node, shape.status());
    Literal x;  // only the shape matters to Shape and Size
    x.dtype = TensorProto::BOOL;
    x.shape = *shape;
    auto r = FoldNode(node, {&x}, opset_);
    if (!r.ok()) return AtNode(node, r.status());
    auto v = std::make_shared<Value>();
    v->lit = std::make_shared<const Literal>(std::move(r->front()));
    v->leaf_name = node.output(0);
    return Define(node.output(0), v);
  }

  if (standard && IsFoldable(op) && node.input_size() > 0 && node.doc_string() != kNoFoldDoc) {
    std::vector<const Literal*> in;
    bool all_constant = true;
    for (const std::string& name : node.input()) {
      if (name.empty()) {
        in.push_back(nullptr);
        continue;
      }
      const Literal* lit = Foldable(name);
      if (!lit) {
        all_constant = false;
        break;
      }
      in.push_back(lit);
    }
    if (all_constant) {
      auto r = FoldNode(node, in, opset_);
      if (r.ok()) {
        if (static_cast<int>(r->size()) != node.output_size()) {
          return FailAt(node, "has " + std::to_string(node.output_size()) + " outputs, expected " +
                                  std::to_string(r->size()));
        }
        for (size_t i = 0; i < r->size(); ++i) {
          auto v = std::make_shared<Value>();
          v->lit = std::make_shared<const Literal>(std::move((*r)[i]));
          v->leaf_name = node.output(static_cast<int>(i));
          REWIRE_RETURN_IF_ERROR(Define(node.output(static_cast<int>(i)), v));
        }
        return Status::Ok();
      }
      if (r.status().code() != StatusCode::kUnimplemented) return AtNode(node, r.status());
    }
  }

  if (standard) {
    REWIRE_ASSIGN_OR_RETURN(bool handled, ImportStandard(node));
    if (handled) return Status::Ok();
  } else if (domain == kRewireDomain) {
    std::optional<OpType> rop = OpTypeFromOnnx(domain, op);
    if (!rop) rop = OpTypeFromName(op);
    if (rop && GetOpInfo(*rop).add_op) return ImportRewire(node, *rop);
    return FailAt(node, "unknown op '" + op + "' in the ai.rewire domain");
  }
  return ImportOpaque(node);
}

Status Importer::ImportRewire(const NodeProto& node, OpType op) {
  Attrs attrs;
  for (const auto& a : node.attribute()) {
    auto v = ConvertAttribute(a);
    if (!v.ok()) return AtNode(node, v.status());
    attrs.Set(a.name(), *v);
  }
  std::vector<std::string> inputs;
  for (const std::string& in : node.input()) {
    if (in.empty()) return FailAt(node, "rewire ops have no optional inputs");
    inputs.push_back(in);
  }
  return Emit(node, op, inputs, std::move(attrs));
}

// ---------------------------------------------------------------------------- opaque ops

StatusOr<std::vector<TensorType>> Importer::OpaqueOutputTypes(
    const NodeProto& node, const std::vector<std::string>& inputs) {
  // Let ONNX infer the node alone, with its inputs' static types and constant inputs' values.
  onnx::ModelProto m;
  m.set_ir_version(8);
  *m.mutable_opset_import() = model_.opset_import();
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("opaque");
  *g->add_node() = node;
  std::unordered_set<std::string> seen;
  for (const std::string& in : inputs) {
    if (in.empty() || !seen.insert(in).second) continue;
    std::shared_ptr<Value> v = Lookup(in);
    const Literal* lit = Foldable(in);
    if (lit && lit->numel() <= kMaxFoldElements) {
      auto host = LiteralToHost(*lit, "constant '" + in + "'");
      if (host.ok()) {
        HostToTensor(**host, in, g->add_initializer());
        continue;
      }
    }
    REWIRE_ASSIGN_OR_RETURN(TensorType t, TypeOf(in));
    auto* vi = g->add_input();
    vi->set_name(in);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(static_cast<int32_t>(t.dtype));
    auto* shape = tt->mutable_shape();
    for (int64_t d : t.shape) shape->add_dim()->set_dim_value(d);
  }
  std::vector<Shape> shapes;
  for (const std::string& in : inputs) {
    if (in.empty()) {
      shapes.push_back(Shape{0});
      continue;
    }
    REWIRE_ASSIGN_OR_RETURN(Shape s, ShapeOf(in));
    shapes.push_back(std::move(s));
  }
  REWIRE_RETURN_IF_ERROR(AtNode(node, CheckBeforeOnnxInference(node, shapes)));
  const auto own = OwnOutputShapes(node, shapes);
  std::string why;
  try {
    onnx::ShapeInferenceOptions options(/*check_type=*/false, /*error_mode=*/1,
                                        /*enable_data_propagation=*/true);
    onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& e) {
    why = e.what();
  }
  std::unordered_map<std::string, const onnx::TypeProto*> inferred;
  for (const auto& vi : m.graph().value_info()) inferred[vi.name()] = &vi.type();
  std::vector<TensorType> types;
  for (const std::string& out : node.output()) {
    const onnx::TypeProto* t = nullptr;
    if (auto it = inferred.find(out); it != inferred.end()) t = it->second;
    auto type = t ? StaticType(*t, "output '" + out + "'") : Status(InvalidArgument("no type"));
    if (!type.ok() && own && types.size() < own->size()) {
      DType dt = DType::kFloat32;
      if (t && t->has_tensor_type() && DTypeFromOnnx(t->tensor_type().elem_type()).ok()) {
        dt = *DTypeFromOnnx(t->tensor_type().elem_type());
      }
      const Shape& s = (*own)[types.size()];
      if (CheckedNumElements(s)) type = TensorType{dt, s};
    }
    if (!type.ok()) {
      // Fall back on the types the file itself records.
      if (auto it = value_info_.find(out); it != value_info_.end()) {
        auto recorded = StaticType(*it->second, "output '" + out + "'");
        if (recorded.ok()) type = recorded;
      }
    }
    if (!type.ok()) {
      std::string msg = "rewire does not model this op, and the static type of its output '" + out +
                        "' could not be inferred";
      if (t) msg += ": " + type.status().message();
      if (!why.empty()) msg += " (ONNX shape inference: " + why + ")";
      return FailAt(node, msg);
    }
    types.push_back(*type);
  }
  return types;
}

Status Importer::ImportOpaque(const NodeProto& node) {
  Attrs attrs;
  for (const auto& a : node.attribute()) {
    if (a.name() == "onnx_op" || a.name() == "onnx_domain") {
      return FailAt(node, "attribute name '" + a.name() + "' is reserved by rewire");
    }
    auto v = ConvertAttribute(a);
    if (!v.ok()) return AtNode(node, v.status());
    attrs.Set(a.name(), *v);
  }
  std::vector<std::string> inputs(node.input().begin(), node.input().end());
  while (!inputs.empty() && inputs.back().empty()) inputs.pop_back();  // absent trailing optionals
  std::vector<ValueRef> refs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].empty()) {
      // An absent optional input before a present one: only Resize's roi/scales are known to
      // accept an empty tensor in its place.
      if (node.op_type() != "Resize") {
        return FailAt(
            node,
            "optional input " + std::to_string(i) +
                " is absent but a later one is present; rewire cannot represent that for this op");
      }
      auto id = graph_.AddConstant(UniqueName(NodeName(node) + "_empty_" + std::to_string(i)),
                                   std::make_shared<const HostTensor>(DType::kFloat32, Shape{0}));
      if (!id.ok()) return AtNode(node, id.status());
      refs.push_back(ValueRef{*id, 0});
      continue;
    }
    auto r = Runtime(inputs[i]);
    if (!r.ok()) return AtNode(node, r.status());
    refs.push_back(*r);
  }
  std::vector<std::string> outputs(node.output().begin(), node.output().end());
  while (!outputs.empty() && outputs.back().empty()) outputs.pop_back();
  for (const std::string& o : outputs) {
    if (o.empty())
      return FailAt(node, "an absent optional output before a present one is not supported");
  }
  if (outputs.empty()) return FailAt(node, "has no outputs");
  REWIRE_ASSIGN_OR_RETURN(std::vector<TensorType> types, OpaqueOutputTypes(node, inputs));
  types.resize(outputs.size());
  const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
  auto id = graph_.AddOpaque(node.op_type(), domain, refs, std::move(attrs), types, NodeName(node));
  if (!id.ok()) return AtNode(node, id.status());
  return DefineOutputs(node, *id, outputs.size());
}

// ---------------------------------------------------------------------------- graph

StatusOr<Graph> Importer::Run() {
  if (!model_.has_graph()) return Fail("not an ONNX model: it has no graph");
  if (model_.ir_version() <= 0) return Fail("not an ONNX model: ir_version is missing");
  if (g_.output_size() == 0) return Fail("the graph has no outputs");
  REWIRE_RETURN_IF_ERROR(ReadOpset());
  REWIRE_RETURN_IF_ERROR(DeclareInputsAndInitializers());
  REWIRE_ASSIGN_OR_RETURN(std::vector<const NodeProto*> order, Schedule());
  for (const NodeProto* node : order) REWIRE_RETURN_IF_ERROR(ImportNode(*node));
  for (const auto& out : g_.output()) {
    auto ref = Runtime(out.name());
    if (!ref.ok()) return Fail("graph output '" + out.name() + "': " + ref.status().message());
    Status s = graph_.AddOutput(out.name(), *ref);
    if (!s.ok()) return Fail(s.message());
  }
  return std::move(graph_);
}

}  // namespace onnx_io

/// The operator set a model older than kOpsetMin is converted to.
constexpr int kLiftedOpset = 13;

StatusOr<Graph> ImportOnnxBytes(const std::string& bytes, const std::string& source,
                                const OnnxImportOptions& options) {
  if (bytes.empty()) return InvalidArgument(source + ": the file is empty");
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    return InvalidArgument(source +
                           ": not a valid ONNX model (the protobuf does not parse: the "
                           "file is truncated, corrupt or not ONNX)");
  }
  REWIRE_RETURN_IF_ERROR(onnx_io::LoadExternalData(model, options.external_data_dir, source));
  REWIRE_RETURN_IF_ERROR(onnx_io::FixInputShapes(model, options, source));
  int32_t half_type = 0;
  REWIRE_RETURN_IF_ERROR(onnx_io::LowerHalfToFloat(model, &half_type, source));
  if (options.float_type) *options.float_type = half_type;
  // A model older than the oldest operator set rewire reads is lifted with ONNX's own version
  // converter first (to opset 13, in the range rewire's tests cover).
  const int opset = onnx_io::StandardOpset(model).value_or(-1);
  if (opset >= 1 && opset < onnx_io::kOpsetMin) {
    try {
      // The converter trusts its input: ONNX's checker vets it first (it throws on a malformed
      // model, which the refusal then quotes).
      onnx::checker::check_model(model);
      model = onnx::version_conversion::ConvertVersion(model, kLiftedOpset);
    } catch (const std::exception& e) {
      std::string what = e.what();
      what = what.substr(0, what.find('\n'));
      return InvalidArgument(source + ": ONNX opset " + std::to_string(opset) +
                             " is older than rewire reads (" + std::to_string(onnx_io::kOpsetMin) +
                             " to " + std::to_string(onnx_io::kOpsetMax) +
                             "), and ONNX's version converter cannot lift it to " +
                             std::to_string(kLiftedOpset) + ": " + what);
    }
  }
  try {
    return onnx_io::Importer(&model, source).Run();
  } catch (const std::exception& e) {
    return Internal(source + ": unexpected error while importing: " + e.what());
  }
}

StatusOr<Graph> ImportOnnxFile(const std::string& path, const OnnxImportOptions& options) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return NotFound(path + ": no such file");
  if (S_ISDIR(st.st_mode)) return InvalidArgument(path + ": is a directory, not an ONNX file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open the file for reading");
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return DataLoss(path + ": read error");
  OnnxImportOptions with_dir = options;
  if (with_dir.external_data_dir.empty()) {
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    with_dir.external_data_dir = dir.empty() ? "." : dir.string();
  }
  return ImportOnnxBytes(buf.str(), path, with_dir);
}

}  // namespace rewire

// rewire Graph -> ONNX (opset 17). Weights become raw_data initializers, Constants become
// Constant nodes, rewire's static operands (Reshape's shape, Slice's starts, ...) become constant
// inputs as opset 17 wants them. An op whose attributes have no place in its ONNX twin (a
// Conv2D with a fused activation) and the ops without a twin go to the "ai.rewire" domain with
// their attributes verbatim, so that importing the file gives back the same graph.

#include <onnx/defs/schema.h>

#include <fstream>
#include <map>
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

/// rewire attributes that opset 17 takes as inputs instead, in input order (input 1 onwards).
const std::vector<std::string>& AttrsAsInputs(OpType op) {
  static const std::map<OpType, std::vector<std::string>> table = {
      {OpType::kReshape, {"shape"}},     {OpType::kSlice, {"starts", "ends", "axes", "steps"}},
      {OpType::kPad, {"pads", "value"}}, {OpType::kSqueeze, {"axes"}},
      {OpType::kUnsqueeze, {"axes"}},    {OpType::kSplit, {"split"}},
      {OpType::kClip, {"min", "max"}},   {OpType::kReduceSum, {"axes"}},
  };
  static const std::vector<std::string> none;
  auto it = table.find(op);
  return it == table.end() ? none : it->second;
}

/// rewire attributes that ONNX lacks but that are implied when they hold this value.
bool ImpliedDefault(OpType op, const std::string& name, const AttrValue& v) {
  if ((op == OpType::kConv2D || op == OpType::kMatMul || op == OpType::kGemm) && name == "activation") {
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

class Exporter {
 public:
  explicit Exporter(const Graph& graph) : g_(graph) {}
  StatusOr<onnx::ModelProto> Run();

 private:
  std::string Unique(const std::string& base);
  /// Emits a Constant node holding `t`; returns the name of its output.
  std::string ConstantInput(const HostTensor& t, const std::string& base);
  /// True when every attribute of `node` has a place in its ONNX twin at opset 17.
  bool FitsStandard(const Node& node) const;
  Status EmitLeaf(const Node& node);
  Status EmitOp(const Node& node);
  Status EmitOutputs();

  const Graph& g_;
  onnx::ModelProto model_;
  onnx::GraphProto* graph_ = nullptr;
  std::unordered_set<std::string> used_;
  std::map<ValueRef, std::string> names_;
  std::map<ValueRef, std::string> preferred_;  // op outputs named after a graph output
  std::set<std::string> domains_;              // non-standard domains used
  std::unordered_set<std::string> leaf_names_;
};

std::string Exporter::Unique(const std::string& base) {
  std::string name = base.empty() ? "v" : base;
  for (int i = 1; used_.count(name); ++i) name = base + "_" + std::to_string(i);
  used_.insert(name);
  return name;
}

std::string Exporter::ConstantInput(const HostTensor& t, const std::string& base) {
  const std::string name = Unique(base);
  onnx::NodeProto* c = graph_->add_node();
  c->set_op_type("Constant");
  c->set_name(name);
  c->add_output(name);
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
    return Status::Ok();
  }
  HostTensorPtr data = MaterializeData(node);
  if (!data) return InvalidArgument("'" + node.name + "' has no data");
  if (node.op == OpType::kWeight) {
    HostToTensor(*data, node.name, graph_->add_initializer());
    return Status::Ok();
  }
  onnx::NodeProto* c = graph_->add_node();
  c->set_op_type("Constant");
  c->set_name(node.name);
  c->add_output(node.name);
  onnx::AttributeProto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  HostToTensor(*data, "", a->mutable_t());
  return Status::Ok();
}

Status Exporter::EmitOp(const Node& node) {
  const OpInfo& info = GetOpInfo(node.op);
  const std::string base = node.name.empty() ? node.TypeName() : node.name;
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

  std::string op_type, domain;
  Attrs attrs = node.attrs;
  if (node.op == OpType::kOpaque) {
    op_type = attrs.GetString("onnx_op");
    domain = attrs.GetString("onnx_domain");
    attrs.Erase("onnx_op");
    attrs.Erase("onnx_domain");
    if (op_type.empty()) return InvalidArgument("opaque node '" + node.name + "' has no onnx_op");
  } else if (FitsStandard(node)) {
    op_type = std::string(info.onnx_name);
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
  } else {
    domain = std::string(kRewireDomain);
    op_type = info.domain == kRewireDomain ? std::string(info.onnx_name) : std::string(info.name);
  }
  if (!domain.empty()) domains_.insert(domain);

  onnx::NodeProto* n = graph_->add_node();
  n->set_op_type(op_type);
  if (!domain.empty()) n->set_domain(domain);
  n->set_name(base);
  if (all_constant && domain.empty()) n->set_doc_string(kNoFoldDoc);
  for (const std::string& in : inputs) n->add_input(in);
  for (const std::string& out : outputs) n->add_output(out);
  for (const auto& [name, value] : attrs.items()) RETURN_IF_ERROR(SetAttr(n, name, value));
  for (uint32_t i = 0; i < node.outputs.size(); ++i) {
    if (!preferred_.count({node.id, i})) {
      SetType(graph_->add_value_info(), outputs[i], node.outputs[i]);
    }
  }
  return Status::Ok();
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
      onnx::NodeProto* id = graph_->add_node();
      id->set_op_type("Identity");
      id->set_name(out.name);
      id->add_input(value);
      id->add_output(out.name);
    }
    SetType(graph_->add_output(), out.name, g_.type(out.value));
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
    if (n.IsLeaf()) RETURN_IF_ERROR(EmitLeaf(n));
  }
  for (NodeId id : order) {
    const Node& n = g_.node(id);
    if (!n.IsLeaf()) RETURN_IF_ERROR(EmitOp(n));
  }
  RETURN_IF_ERROR(EmitOutputs());

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

StatusOr<std::string> ExportOnnxBytes(const Graph& graph) {
  try {
    ASSIGN_OR_RETURN(onnx::ModelProto model, onnx_io::Exporter(graph).Run());
    std::string bytes;
    if (!model.SerializeToString(&bytes)) {
      return InvalidArgument("the ONNX model could not be serialised (protobuf's 2 GiB limit?)");
    }
    return bytes;
  } catch (const std::exception& e) {
    return Internal(std::string("unexpected error while exporting ONNX: ") + e.what());
  }
}

Status ExportOnnxFile(const Graph& graph, const std::string& path) {
  ASSIGN_OR_RETURN(std::string bytes, ExportOnnxBytes(graph));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return NotFound(path + ": cannot open the file for writing");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return DataLoss(path + ": write failed");
  return Status::Ok();
}

}  // namespace rewire

// The standard ONNX ops that rewire models: attribute and operand conversion, one function per
// op (or op family), named by the `import` column of graph/ops.def.
// Operands that newer opsets turned into inputs (Reshape's shape, Slice's starts, ...) must be
// constants and become attributes. A case rewire does not model (Conv1d, MaxPool with
// dilations, Pad in reflect mode, ...) returns false and the node becomes Opaque.

#include <algorithm>
#include <map>
#include <string_view>

#include "graph/onnx/onnx_importer.h"

namespace rewire::onnx_io {

namespace {

std::vector<std::string> Inputs(const NodeProto& node) {
  return std::vector<std::string>(node.input().begin(), node.input().end());
}

bool Present(const NodeProto& node, int i) {
  return i < node.input_size() && !node.input(i).empty();
}

}  // namespace

StatusOr<Ints> Importer::PadsFor(const NodeProto& node, const Shape& in, const Ints& kernel,
                                 const Ints& strides, const Ints& dilations) {
  REWIRE_ASSIGN_OR_RETURN(std::string auto_pad, AttrString(node, "auto_pad", "NOTSET"));
  const size_t n = kernel.size();
  if (auto_pad == "NOTSET" || auto_pad.empty()) {
    REWIRE_ASSIGN_OR_RETURN(std::optional<Ints> pads, AttrInts(node, "pads"));
    return pads ? *pads : Ints(2 * n, 0);
  }
  if (auto_pad == "VALID") return Ints(2 * n, 0);
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    return FailAt(node, "unknown auto_pad '" + auto_pad + "'");
  }
  if (strides.size() != n || dilations.size() != n || in.size() != n + 2) {
    return FailAt(node, "kernel_shape, strides and dilations disagree with the input rank");
  }
  Ints pads(2 * n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (strides[i] <= 0) return FailAt(node, "strides must be positive");
    const int64_t size = in[2 + i];
    const int64_t out = (size + strides[i] - 1) / strides[i];
    const int64_t total =
        std::max<int64_t>((out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - size, 0);
    const int64_t small = total / 2, big = total - small;
    pads[i] = auto_pad == "SAME_UPPER" ? small : big;
    pads[i + n] = auto_pad == "SAME_UPPER" ? big : small;
  }
  return pads;
}

StatusOr<bool> Importer::ImportConv(const NodeProto& node, OpType op) {
  if (node.input_size() < 2 || !Present(node, 0) || !Present(node, 1)) {
    return FailAt(node, "Conv needs inputs X and W");
  }
  REWIRE_ASSIGN_OR_RETURN(Shape x, ShapeOf(node.input(0)));
  REWIRE_ASSIGN_OR_RETURN(Shape w, ShapeOf(node.input(1)));
  if (x.size() != 4 || w.size() != 4) return false;  // 1-D and 3-D convolutions stay opaque
  const Ints kernel{w[2], w[3]};
  REWIRE_ASSIGN_OR_RETURN(std::optional<Ints> ks, AttrInts(node, "kernel_shape"));
  if (ks && *ks != kernel) {
    return FailAt(node, "kernel_shape [" + ShapeToString(*ks) + "] disagrees with weight [" +
                            ShapeToString(w) + "]");
  }
  REWIRE_ASSIGN_OR_RETURN(std::optional<Ints> strides, AttrInts(node, "strides"));
  REWIRE_ASSIGN_OR_RETURN(std::optional<Ints> dilations, AttrInts(node, "dilations"));
  REWIRE_ASSIGN_OR_RETURN(int64_t group, AttrInt(node, "group", 1));
  const Ints st = strides.value_or(Ints{1, 1}), dil = dilations.value_or(Ints{1, 1});
  REWIRE_ASSIGN_OR_RETURN(Ints pads, PadsFor(node, x, kernel, st, dil));
  Attrs attrs{{"strides", st},
              {"dilations", dil},
              {"pads", pads},
              {"group", group},
              {"activation", std::string("none")}};
  std::vector<std::string> inputs{node.input(0), node.input(1)};
  if (Present(node, 2)) inputs.push_back(node.input(2));
  REWIRE_RETURN_IF_ERROR(Emit(node, op, inputs, std::move(attrs)));
  return true;
}

/// MaxPool and AveragePool in 2-D without dilations (and without MaxPool's indices output).
StatusOr<bool> Importer::ImportPool(const NodeProto& node, OpType op) {
  if (!Present(node, 0)) return FailAt(node, "needs an input");
  REWIRE_ASSIGN_OR_RETURN(Shape x, ShapeOf(node.input(0)));
  if (x.size() != 4) return false;
  if (node.output_size() > 1 && !node.output(1).empty()) return false;  // MaxPool indices
  REWIRE_ASSIGN_OR_RETURN(std::optional<Ints> kernel, AttrInts(node, "kernel_shape"));
  if (!kernel) return FailAt(node, "attribute 'kernel_shape' is required");
  REWIRE_ASSIGN_OR_RETURN(std::optional<Ints> strides, AttrInts(node, "strides"));
  REWIRE_ASSIGN_OR_RETURN(std::optional<Ints> dilations, AttrInts(node, "dilations"));
  const Ints st = strides.value_or(Ints{1, 1}), dil = dilations.value_or(Ints{1, 1});
  if (std::any_of(dil.begin(), dil.end(), [](int64_t d) { return d != 1; })) return false;
  REWIRE_ASSIGN_OR_RETURN(Ints pads, PadsFor(node, x, *kernel, st, dil));
  REWIRE_ASSIGN_OR_RETURN(int64_t ceil_mode, AttrInt(node, "ceil_mode", 0));
  Attrs attrs{{"kernel_shape", *kernel}, {"strides", st}, {"pads", pads}, {"ceil_mode", ceil_mode}};
  if (op == OpType::kAvgPool2D) {
    REWIRE_ASSIGN_OR_RETURN(int64_t cip, AttrInt(node, "count_include_pad", 0));
    attrs.Set("count_include_pad", cip);
  }
  REWIRE_RETURN_IF_ERROR(Emit(node, op, {node.input(0)}, std::move(attrs)));
  return true;
}

Status Importer::NeedInputs(const NodeProto& node, int lo, int hi) const {
  int present = node.input_size();
  while (present > 0 && node.input(present - 1).empty()) --present;
  if (present < lo || present > hi) {
    return FailAt(node, "expects " + std::to_string(lo) +
                            (hi != lo ? " to " + std::to_string(hi) : std::string()) +
                            " inputs, got " + std::to_string(present));
  }
  for (int i = 0; i < lo; ++i) {
    if (node.input(i).empty()) return FailAt(node, "input " + std::to_string(i) + " is required");
  }
  return Status::Ok();
}

StatusOr<DType> Importer::InputDType(const NodeProto& node, int i) {
  REWIRE_ASSIGN_OR_RETURN(TensorType t, TypeOf(node.input(i)));
  return t.dtype;
}

StatusOr<bool> Importer::ImportStandard(const NodeProto& node) {
  using OpImporter = StatusOr<bool> (Importer::*)(const NodeProto&, OpType);
  struct Entry {
    OpImporter import;
    OpType op;
  };
  // ONNX type -> the Import function of the op's `import` column (graph/ops.def).
  static const std::map<std::string, Entry>* importers = [] {
    auto* m = new std::map<std::string, Entry>;
#define OP(name, id, onnx, domain, min_in, max_in, num_out, shape, import, ...) \
  if (std::string_view(domain).empty() && !std::string_view(onnx).empty())      \
    m->emplace(onnx, Entry{&Importer::Import##import, OpType::k##name});
#include "graph/ops.def"
#undef OP
    return m;
  }();
  const auto it = importers->find(node.op_type());
  if (it == importers->end()) return false;
  return (this->*it->second.import)(node, it->second.op);
}

StatusOr<bool> Importer::ImportNone(const NodeProto& node, OpType op) { return false; }

// ---------------------------------------------------------------------------------------------
// Element-wise ops and activations
// ---------------------------------------------------------------------------------------------

/// Element-wise ops on float32 (Relu, Sigmoid, LeakyRelu, ...): the attributes ops.def types,
/// with its defaults; any other element type stays Opaque.
StatusOr<bool> Importer::ImportFloatUnary(const NodeProto& node, OpType op) {
  REWIRE_RETURN_IF_ERROR(NeedInputs(node, 1, 1));
  REWIRE_ASSIGN_OR_RETURN(DType dt, InputDType(node, 0));
  if (dt != DType::kFloat32) return false;
  Attrs attrs;
  for (const OpAttr& a : OpAttrs(op)) {
    if (!a.is_float) continue;
    if (!a.default_value && !FindAttr(node, a.name)) {
      return FailAt(node, "attribute '" + a.name + "' is required");
    }
    REWIRE_ASSIGN_OR_RETURN(float v, AttrFloat(node, a.name, a.default_value.value_or(0.f)));
    attrs.Set(a.name, v);
  }
  REWIRE_RETURN_IF_ERROR(Emit(node, op, {node.input(0)}, std::move(attrs)));
  return true;
}

/// Add, Sub, Mul, Div, Pow on operands of one non-bool type.
StatusOr<bool> Importer::ImportBinary(const NodeProto& node, OpType op) {
  REWIRE_RETURN_IF_ERROR(NeedInputs(node, 2, 2));
  REWIRE_ASSIGN_OR_RETURN(DType a, InputDType(node, 0));
  REWIRE_ASSIGN_OR_RETURN(DType b, InputDType(node, 1));
  if (a != b || a == DType::kBool || (op == OpType::kPow && a != DType::kFloat32)) return false;
  std::vector<std::string> inputs = Inputs(node);
  // Add and Mul commute exactly (also under broadcasting): a constant operand goes second, the
  // order in which rewire's rules and zoo write a bias or a scale (`Add(MatMul(x, w), b)`).
  // PyTorch writes a biased linear as `Add(b, MatMul(x, w))`, which no rule would match.
  if ((op == OpType::kAdd || op == OpType::kMul) && IsConstant(inputs[0]) &&
      !IsConstant(inputs[1])) {
    std::swap(inputs[0], inputs[1]);
  }
  REWIRE_RETURN_IF_ERROR(Emit(node, op, inputs, {}));
  return true;
}

/// Clip of float32; bounds are attributes before opset 11, constant inputs after.
StatusOr<bool> Importer::ImportClip(const NodeProto& node, OpType op) {
  REWIRE_RETURN_IF_ERROR(NeedInputs(node, 1, 3));
  REWIRE_ASSIGN_OR_RETURN(DType dt, InputDType(node, 0));
  if (dt != DType::kFloat32) return false;
  Attrs attrs;
  if (opset_ < 11) {
    for (const char* name : {"min", "max"}) {
      if (!FindAttr(node, name)) continue;
      REWIRE_ASSIGN_OR_RETURN(float v, AttrFloat(node, name, 0.f));
      attrs.Set(name, v);
    }
  } else {
    const char* names[] = {"min", "max"};
    for (int i = 1; i <= 2; ++i) {
      if (!Present(node, i)) continue;
      REWIRE_ASSIGN_OR_RETURN(Literal v, StaticInput(node, i, names[i - 1]));
      if (v.numel() != 1) return FailAt(node, std::string(names[i - 1]) + " must be a scalar");
      attrs.Set(names[i - 1], static_cast<float>(v.Real(0)));
    }
  }
  REWIRE_RETURN_IF_ERROR(Emit(node, op, {node.input(0)}, std::move(attrs)));
  return true;
}

/// Dropout as the identity; training mode only with ratio 0.
StatusOr<bool> Importer::ImportDropout(const NodeProto& node, OpType op) {
  REWIRE_RETURN_IF_ERROR(NeedInputs(node, 1, 3));
  if (Present(node, 2)) {
    REWIRE_ASSIGN_OR_RETURN(Literal training, StaticInput(node, 2, "training_mode"));
    if (training.numel() != 1) return FailAt(node, "training_mode must be a scalar");
    double ratio = 0.5;  // ONNX's default
    if (Present(node, 1)) {
      REWIRE_ASSIGN_OR_RETURN(Literal r, StaticInput(node, 1, "ratio"));
      if (r.numel() != 1) return FailAt(node, "ratio must be a scalar");
      ratio = r.Real(0);
    }
    // In training mode only a ratio of 0 (what torchvision's Swin exports) is the identity.
    if (training.Real(0) != 0 && ratio != 0) {
      return FailAt(
          node, "Dropout in training mode (ratio " + std::to_string(ratio) + ") is not supported");
    }
  }
  REWIRE_RETURN_IF_ERROR(Emit(node, op, {node.input(0)}, {}));
  return true;
}

StatusOr<bool> Importer::ImportCast(const NodeProto& node, OpType op) {
  REWIRE_RETURN_IF_ERROR(NeedInputs(node, 1, 1));
  REWIRE_ASSIGN_OR_RETURN(int64_t to, AttrInt(node, "to", 0));
  if (!DTypeFromOnnx(static_cast<int32_t>(to)).ok()) {
    return FailAt(node, std::string("casts a run-time value to ") +
                            OnnxTypeName(static_cast<int32_t>(to)) +
                            ", which rewire does not carry (float32, int64 and bool only)");
  }
  REWIRE_RETURN_IF_ERROR(Emit(node, op, {node.input(0)}, {{"to", to}}));
  return true;
}

StatusOr<bool> Importer::ImportWhere(const NodeProto& node, OpType op) {
  REWIRE_RETURN_IF_ERROR(NeedInputs(node, 3, 3));
  REWIRE_RETURN_IF_ERROR(Emit(node, op, Inputs(node), {}));
  return true;
}

// ---------------------------------------------------------------------------------------------
// Pooling, normalisation, softmax
// ---------------------------------------------------------------------------------------------

StatusOr<bool> Importer::ImportGlobalAveragePool(const NodeProto& node, OpType op) {
  REWIRE_RETURN_IF_ERROR(NeedInputs(node, 1, 1));
  REWIRE_RETURN_IF_ERROR(Emit(node, op, {node.input(0)}, {}));
  return true;
}

/// Inference-mode BatchNormalization.
StatusOr<bool> Importer::ImportBatchNormalization(const NodeProto& node, OpType op) {
  REWIRE_RETURN_IF_ERROR(NeedInputs(node, 5, 5));
  REWIRE_ASSIGN_OR_RETURN(int64_t training, AttrInt(node, "training_mode", 0));
  if (training) return FailAt(node, "BatchNormalization in training mode is not supported");
  REWIRE_ASSIGN_OR_RETURN(float eps, AttrFloat(node, "epsilon", 1e-5f));
  REWIRE_RETURN_IF_ERROR(Emit(node, op, Inputs(node), {{"epsilon", eps}}));
  return true;
}

StatusOr<bool> Importer::ImportLayerNormalization(const NodeProto& node, OpType op) {
  REWIRE_RETURN_IF_ERROR(NeedInputs(node, 2, 3));
  REWIRE_ASSIGN_OR_RETURN(int64_t axis, AttrInt(node, "axis", -1));
  REWIRE_ASSIGN_OR_RETURN(float eps, AttrFloat(node, "epsilon", 1e-5f));
  std::vector<std::string> in{node.input(0), node.input(1)};
  if (Present(node, 2)) in.push_back(node.input(2));
  REWIRE_RETURN_IF_ERROR(Emit(node, op, in, {{"axis", axis}, {"epsilon", eps}}));
  return true;
}

/// Softmax; before opset 13 over the flattened axes from `axis` on (reshape, softmax, reshape).
StatusOr<bool> Importer::ImportSoftmax(const NodeProto& node, OpType op) {
  REWIRE_RETURN_IF_ERROR(NeedInputs(node, 1, 1));
  REWIRE_ASSIGN_OR_RETURN(Shape x, ShapeOf(node.input(0)));
  const int64_t rank = static_cast<int64_t>(x.size());
  REWIRE_ASSIGN_OR_RETURN(int64_t axis, AttrInt(node, "axis", opset_ < 13 ? 1 : -1));
  if (axis < -rank || axis >= rank) return FailAt(node, "axis out of range");
  if (axis < 0) axis += rank;
  if (opset_ >= 13 || axis == rank - 1) {
    REWIRE_RETURN_IF_ERROR(Emit(node, op, {node.input(0)}, {{"axis", axis}}));
    return true;
  }
  // Before opset 13, Softmax normalises over all axes from `axis` on (as one flattened axis).
  REWIRE_ASSIGN_OR_RETURN(ValueRef in, Runtime(node.input(0)));
  int64_t inner = 1;
  for (int64_t i = axis; i < rank; ++i) inner *= x[i];
  const std::string base = NodeName(node);
  auto flat = graph_.AddOp(OpType::kReshape, {in}, {{"shape", Ints{-1, inner}}}, base + "/flatten");
  if (!flat.ok()) return AtNode(node, flat.status());
  auto soft = graph_.AddOp(OpType::kSoftmax, {{*flat, 0}}, {{"axis", int64_t{1}}}, base);
  if (!soft.ok()) return AtNode(node, soft.status());
  auto back = graph_.AddOp(OpType::kReshape, {{*soft, 0}}, {{"shape", Ints(x.begin(), x.end())}},
                           base + "/unflatten");
  if (!back.ok()) return AtNode(node, back.status());
  REWIRE_RETURN_IF_ERROR(DefineOutputs(node, *back, 1));
  return true;
}

// ---------------------------------------------------------------------------------------------
// Matrix products
// ---------------------------------------------------------------------------------------------

StatusOr<bool> Importer::ImportMatMul(const NodeProto& node, OpType op) {
  REWIRE_RETURN_IF_ERROR(NeedInputs(node, 2, 2));
  REWIRE_RETURN_IF_ERROR(Emit(node, op, Inputs(node), {}));
  return true;
}

StatusOr<bool> Importer::ImportGemm(const NodeProto& node, OpType op) {
  REWIRE_RETURN_IF_ERROR(NeedInputs(node, 2, 3));
  Attrs attrs;
  REWIRE_ASSIGN_OR_RETURN(float alpha, AttrFloat(node, "alpha", 1.f));
  REWIRE_ASSIGN_OR_RETURN(float beta, AttrFloat(node, "beta", 1.f));
  REWIRE_ASSIGN_OR_RETURN(int64_t ta, AttrInt(node, "transA", 0));
  REWIRE_ASSIGN_OR_RETURN(int64_t tb, AttrInt(node, "transB", 0));
  std::vector<std::string> in{node.input(0), node.input(1)};
  if (Present(node, 2)) in.push_back(node.input(2));
  REWIRE_RETURN_IF_ERROR(
      Emit(node, op, in, {{"alpha", alpha}, {"beta", beta}, {"transA", ta}, {"transB", tb}}));
  return true;
}

// ---------------------------------------------------------------------------------------------
// Shapes and indexing
// ---------------------------------------------------------------------------------------------

StatusOr<bool> Importer::ImportConcat(const NodeProto& node, OpType op) {
  for (int i = 0; i < node.input_size(); ++i) {
    if (node.input(i).empty()) return FailAt(node, "Concat inputs cannot be empty");
  }
  if (node.input_size() == 0) return FailAt(node, "Concat needs at least one input");
  if (!FindAttr(node, "axis")) return FailAt(node, "attribute 'axis' is required");
  REWIRE_ASSIGN_OR_RETURN(int64_t axis, AttrInt(node, "axis", 0));
  REWIRE_RETURN_IF_ERROR(Emit(node, op, Inputs(node), {{"axis", axis}}));
  return true;
}

/// Split; sizes from the attribute (before opset 13), a constant input, or num_outputs.
StatusOr<bool> Importer::ImportSplit(const NodeProto& node, OpType op) {
  REWIRE_RETURN_IF_ERROR(NeedInputs(node, 1, 2));
  REWIRE_ASSIGN_OR_RETURN(Shape x, ShapeOf(node.input(0)));
  REWIRE_ASSIGN_OR_RETURN(int64_t axis, AttrInt(node, "axis", 0));
  const int64_t rank = static_cast<int64_t>(x.size());
  if (axis < -rank || axis >= rank) return FailAt(node, "axis out of range");
  std::optional<Ints> split;
  if (opset_ >= 13) {
    if (Present(node, 1)) {
      REWIRE_ASSIGN_OR_RETURN(Literal s, StaticInput(node, 1, "split"));
      split = s.AsInts();
    }
  } else {
    REWIRE_ASSIGN_OR_RETURN(split, AttrInts(node, "split"));
  }
  if (!split) {
    REWIRE_ASSIGN_OR_RETURN(int64_t parts, AttrInt(node, "num_outputs", node.output_size()));
    if (parts <= 0) return FailAt(node, "has no outputs");
    const int64_t dim = x[axis < 0 ? axis + rank : axis];
    const int64_t chunk = (dim + parts - 1) / parts;
    split = Ints();
    for (int64_t i = 0, left = dim; i < parts; ++i, left -= chunk) {
      split->push_back(std::min(chunk, left));
    }
  }
  if (static_cast<int>(split->size()) != node.output_size()) {
    return FailAt(node, "split has " + std::to_string(split->size()) + " sizes but the node has " +
                            std::to_string(node.output_size()) + " outputs");
  }
  REWIRE_RETURN_IF_ERROR(Emit(node, op, {node.input(0)}, {{"axis", axis}, {"split", *split}}));
  return true;
}

/// Reshape to a constant shape (attribute before opset 5).
StatusOr<bool> Importer::ImportReshape(const NodeProto& node, OpType op) {
  Ints shape;
  if (opset_ < 5) {
    REWIRE_RETURN_IF_ERROR(NeedInputs(node, 1, 1));
    REWIRE_ASSIGN_OR_RETURN(std::optional<Ints> s, AttrInts(node, "shape"));
    if (!s) return FailAt(node, "attribute 'shape' is required");
    shape = *s;
  } else {
    REWIRE_RETURN_IF_ERROR(NeedInputs(node, 2, 2));
    REWIRE_ASSIGN_OR_RETURN(Literal s, StaticInput(node, 1, "shape"));
    shape = s.AsInts();
  }
  REWIRE_ASSIGN_OR_RETURN(int64_t allowzero, AttrInt(node, "allowzero", 0));
  if (allowzero && std::count(shape.begin(), shape.end(), 0) > 0) {
    return FailAt(node, "Reshape to a zero-sized dimension (allowzero) is not supported");
  }
  REWIRE_RETURN_IF_ERROR(Emit(node, op, {node.input(0)}, {{"shape", shape}}));
  return true;
}

StatusOr<bool> Importer::ImportTranspose(const NodeProto& node, OpType op) {
  REWIRE_RETURN_IF_ERROR(NeedInputs(node, 1, 1));
  Attrs attrs;
  REWIRE_ASSIGN_OR_RETURN(std::optional<Ints> perm, AttrInts(node, "perm"));
  if (perm) attrs.Set("perm", *perm);
  REWIRE_RETURN_IF_ERROR(Emit(node, op, {node.input(0)}, std::move(attrs)));
  return true;
}

StatusOr<bool> Importer::ImportFlatten(const NodeProto& node, OpType op) {
  REWIRE_RETURN_IF_ERROR(NeedInputs(node, 1, 1));
  REWIRE_ASSIGN_OR_RETURN(int64_t axis, AttrInt(node, "axis", 1));
  REWIRE_RETURN_IF_ERROR(Emit(node, op, {node.input(0)}, {{"axis", axis}}));
  return true;
}

/// Squeeze and Unsqueeze; axes are a constant input from opset 13 on.
StatusOr<bool> Importer::ImportSqueeze(const NodeProto& node, OpType op) {
  const bool unsqueeze = op == OpType::kUnsqueeze;
  const bool as_input = opset_ >= 13;
  REWIRE_RETURN_IF_ERROR(NeedInputs(node, unsqueeze && as_input ? 2 : 1, as_input ? 2 : 1));
  std::optional<Ints> axes;
  if (as_input) {
    if (Present(node, 1)) {
      REWIRE_ASSIGN_OR_RETURN(Literal a, StaticInput(node, 1, "axes"));
      axes = a.AsInts();
    }
  } else {
    REWIRE_ASSIGN_OR_RETURN(axes, AttrInts(node, "axes"));
  }
  Attrs attrs;
  if (axes)
    attrs.Set("axes", *axes);
  else if (unsqueeze)
    return FailAt(node, "axes are required");
  REWIRE_RETURN_IF_ERROR(Emit(node, op, {node.input(0)}, std::move(attrs)));
  return true;
}

/// Constant-mode Pad (other modes stay opaque); opset 18 pads only some axes.
StatusOr<bool> Importer::ImportPad(const NodeProto& node, OpType op) {
  REWIRE_ASSIGN_OR_RETURN(std::string mode, AttrString(node, "mode", "constant"));
  if (mode != "constant") return false;
  Ints pads;
  float value = 0;
  if (opset_ < 11) {
    REWIRE_RETURN_IF_ERROR(NeedInputs(node, 1, 1));
    REWIRE_ASSIGN_OR_RETURN(std::optional<Ints> p, AttrInts(node, "pads"));
    if (!p) return FailAt(node, "attribute 'pads' is required");
    pads = *p;
    REWIRE_ASSIGN_OR_RETURN(value, AttrFloat(node, "value", 0.f));
  } else {
    REWIRE_RETURN_IF_ERROR(NeedInputs(node, 2, 4));
    REWIRE_ASSIGN_OR_RETURN(Literal p, StaticInput(node, 1, "pads"));
    pads = p.AsInts();
    if (Present(node, 2)) {
      REWIRE_ASSIGN_OR_RETURN(Literal v, StaticInput(node, 2, "constant_value"));
      if (v.numel() != 1) return FailAt(node, "constant_value must be a scalar");
      value = static_cast<float>(v.Real(0));
    }
    if (Present(node, 3)) {  // opset 18: pads only for some axes
      REWIRE_ASSIGN_OR_RETURN(Literal a, StaticInput(node, 3, "axes"));
      REWIRE_ASSIGN_OR_RETURN(Shape x, ShapeOf(node.input(0)));
      const int64_t rank = static_cast<int64_t>(x.size());
      const Ints axes = a.AsInts();
      if (pads.size() != 2 * axes.size())
        return FailAt(node, "pads must have two entries per axis");
      Ints full(2 * rank, 0);
      for (size_t i = 0; i < axes.size(); ++i) {
        int64_t ax = axes[i] < 0 ? axes[i] + rank : axes[i];
        if (ax < 0 || ax >= rank) return FailAt(node, "axis out of range");
        full[ax] = pads[i];
        full[ax + rank] = pads[i + axes.size()];
      }
      pads = full;
    }
  }
  REWIRE_RETURN_IF_ERROR(Emit(node, op, {node.input(0)}, {{"pads", pads}, {"value", value}}));
  return true;
}

/// Slice with constant starts/ends/axes/steps (attributes before opset 10).
StatusOr<bool> Importer::ImportSlice(const NodeProto& node, OpType op) {
  Attrs attrs;
  if (opset_ < 10) {
    REWIRE_RETURN_IF_ERROR(NeedInputs(node, 1, 1));
    for (const char* name : {"starts", "ends", "axes"}) {
      REWIRE_ASSIGN_OR_RETURN(std::optional<Ints> v, AttrInts(node, name));
      if (v) attrs.Set(name, *v);
    }
  } else {
    REWIRE_RETURN_IF_ERROR(NeedInputs(node, 3, 5));
    const char* names[] = {"starts", "ends", "axes", "steps"};
    for (int i = 1; i <= 4; ++i) {
      if (!Present(node, i)) continue;
      REWIRE_ASSIGN_OR_RETURN(Literal v, StaticInput(node, i, names[i - 1]));
      attrs.Set(names[i - 1], v.AsInts());
    }
  }
  REWIRE_RETURN_IF_ERROR(Emit(node, op, {node.input(0)}, std::move(attrs)));
  return true;
}

StatusOr<bool> Importer::ImportGather(const NodeProto& node, OpType op) {
  REWIRE_RETURN_IF_ERROR(NeedInputs(node, 2, 2));
  REWIRE_ASSIGN_OR_RETURN(int64_t axis, AttrInt(node, "axis", 0));
  REWIRE_RETURN_IF_ERROR(Emit(node, op, Inputs(node), {{"axis", axis}}));
  return true;
}

// ---------------------------------------------------------------------------------------------
// Reductions
// ---------------------------------------------------------------------------------------------

/// ReduceMean, ReduceSum, ReduceMax of float32; with noop_with_empty_axes and no axes an alias of
/// the input.
StatusOr<bool> Importer::ImportReduce(const NodeProto& node, OpType op) {
  const bool axes_input = (op == OpType::kReduceSum && opset_ >= 13) || opset_ >= 18;
  REWIRE_RETURN_IF_ERROR(NeedInputs(node, 1, axes_input ? 2 : 1));
  REWIRE_ASSIGN_OR_RETURN(DType dt, InputDType(node, 0));
  if (dt != DType::kFloat32) return false;
  std::optional<Ints> axes;
  if (axes_input) {
    if (Present(node, 1)) {
      REWIRE_ASSIGN_OR_RETURN(Literal a, StaticInput(node, 1, "axes"));
      axes = a.AsInts();
    }
  } else {
    REWIRE_ASSIGN_OR_RETURN(axes, AttrInts(node, "axes"));
  }
  REWIRE_ASSIGN_OR_RETURN(int64_t keepdims, AttrInt(node, "keepdims", 1));
  REWIRE_ASSIGN_OR_RETURN(int64_t noop, AttrInt(node, "noop_with_empty_axes", 0));
  if (noop && (!axes || axes->empty())) {  // reduces nothing: an alias of its input
    names_.insert(node.output(0));
    values_[node.output(0)] = Lookup(node.input(0));
    return true;
  }
  Attrs attrs{{"keepdims", keepdims}};
  if (axes) attrs.Set("axes", *axes);
  REWIRE_RETURN_IF_ERROR(Emit(node, op, {node.input(0)}, std::move(attrs)));
  return true;
}

}  // namespace rewire::onnx_io

// Shape inference and attribute canonicalisation. Each op's rule is named by the `shape` column of
// graph/ops.def and lives in shape_rules_*.cc; this file holds the attribute reader, the shared
// checks, the generic rules and the dispatch on the table. Semantics follow ONNX opset 17.

#include <algorithm>
#include <cmath>

#include "graph/shape_rules.h"

namespace rewire {
namespace shape_rules {

Status Error(OpType op, const std::string& message) {
  return InvalidArgument(std::string(OpName(op)) + ": " + message);
}

std::string Str(const Shape& s) { return "[" + ShapeToString(s) + "]"; }

// ---------------------------------------------------------------------------- AttrReader

Status AttrReader::Use(const std::string& name) {
  if (!FindOpAttr(op_, name)) {
    return Internal(std::string(OpName(op_)) + ": shape rule reads attribute '" + name +
                    "', which graph/ops.def does not declare");
  }
  used_.insert(name);
  return Status::Ok();
}

StatusOr<int64_t> AttrReader::Int(const std::string& name, std::optional<int64_t> def) {
  REWIRE_RETURN_IF_ERROR(Use(name));
  const AttrValue* v = attrs_->Find(name);
  if (!v) {
    if (!def) return Error(op_, "missing required attribute '" + name + "'");
    attrs_->Set(name, *def);
    return *def;
  }
  if (const auto* i = std::get_if<int64_t>(v)) return *i;
  return Error(op_, "attribute '" + name + "' must be an integer");
}

StatusOr<float> AttrReader::Float(const std::string& name, std::optional<float> def) {
  REWIRE_RETURN_IF_ERROR(Use(name));
  const AttrValue* v = attrs_->Find(name);
  if (!v) {
    if (!def) return Error(op_, "missing required attribute '" + name + "'");
    attrs_->Set(name, *def);
    return *def;
  }
  if (const auto* f = std::get_if<float>(v)) {
    if (std::isnan(*f)) return Error(op_, "attribute '" + name + "' is NaN");
    return *f;
  }
  if (const auto* i = std::get_if<int64_t>(v)) {
    const float f = static_cast<float>(*i);
    attrs_->Set(name, f);
    return f;
  }
  return Error(op_, "attribute '" + name + "' must be a float");
}

StatusOr<std::string> AttrReader::String(const std::string& name, std::optional<std::string> def) {
  REWIRE_RETURN_IF_ERROR(Use(name));
  const AttrValue* v = attrs_->Find(name);
  if (!v) {
    if (!def) return Error(op_, "missing required attribute '" + name + "'");
    attrs_->Set(name, *def);
    return *def;
  }
  if (const auto* s = std::get_if<std::string>(v)) return *s;
  return Error(op_, "attribute '" + name + "' must be a string");
}

StatusOr<Ints> AttrReader::IntList(const std::string& name, int len, std::optional<Ints> def) {
  REWIRE_RETURN_IF_ERROR(Use(name));
  const AttrValue* v = attrs_->Find(name);
  Ints out;
  if (!v) {
    if (!def) return Error(op_, "missing required attribute '" + name + "'");
    out = *def;
  } else if (const auto* is = std::get_if<Ints>(v)) {
    out = *is;
  } else if (const auto* i = std::get_if<int64_t>(v)) {
    out = Ints{*i};
  } else {
    return Error(op_, "attribute '" + name + "' must be a list of integers");
  }
  if (len >= 0 && static_cast<int>(out.size()) != len) {
    return Error(op_, "attribute '" + name + "' must have " + std::to_string(len) +
                          " values, got " + std::to_string(out.size()));
  }
  attrs_->Set(name, out);
  return out;
}

Status AttrReader::ReadTyped() {
  for (const OpAttr& a : OpAttrs(op_)) {
    if (a.is_float) REWIRE_RETURN_IF_ERROR(Float(a.name, a.default_value).status());
  }
  return Status::Ok();
}

Status AttrReader::CheckNoUnknown() const {
  for (const auto& [name, value] : attrs_->items()) {
    if (!used_.count(name)) return Error(op_, "unknown attribute '" + name + "'");
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------- checks

StatusOr<int64_t> NormAxis(OpType op, int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank) {
    return Error(op, std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
                         std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

StatusOr<Ints> NormAxes(OpType op, const Ints& axes, int64_t rank) {
  Ints out;
  for (int64_t a : axes) {
    REWIRE_ASSIGN_OR_RETURN(int64_t n, NormAxis(op, a, rank, "axis"));
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    return Error(op, "repeated axis in axes");
  }
  return out;
}

Status RequireDType(OpType op, const TensorType& t, DType want, const char* which) {
  if (t.dtype != want) {
    return Error(op, std::string(which) + " must be " + DTypeName(want) + ", got " + t.ToString());
  }
  return Status::Ok();
}

Status RequireRank(OpType op, const TensorType& t, size_t rank, const char* which) {
  if (t.shape.size() != rank) {
    return Error(op, std::string(which) + " must have rank " + std::to_string(rank) + ", got " +
                         Str(t.shape));
  }
  return Status::Ok();
}

Status RequirePositiveDims(OpType op, const Shape& s) {
  for (int64_t d : s) {
    if (d <= 0) return Error(op, "result shape " + Str(s) + " has a non-positive dimension");
  }
  return Status::Ok();
}

StatusOr<Shape> Broadcast(OpType op, const Shape& a, const Shape& b) {
  std::optional<Shape> out = BroadcastShapes(a, b);
  if (!out) return Error(op, "shapes " + Str(a) + " and " + Str(b) + " do not broadcast");
  return *out;
}

Status FloatUnaryResult(OpType op, const Types& in, Types* out) {
  REWIRE_RETURN_IF_ERROR(RequireDType(op, in[0], DType::kFloat32, "input"));
  out->push_back(in[0]);
  return Status::Ok();
}

// ---------------------------------------------------------------------------- generic rules

/// Leaves and Opaque: not made by AddOp.
Status InferNone(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  return Error(op, "is created with its own Graph::Add* call, not AddOp");
}

/// Float32 element-wise ops: the typed attributes of ops.def with their defaults, then the
/// input's type.
Status InferFloatUnary(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  REWIRE_RETURN_IF_ERROR(r.ReadTyped());
  return FloatUnaryResult(op, in, out);
}

Status InferIdentity(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  out->push_back(in[0]);
  return Status::Ok();
}

Status InferDropout(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  r.Drop("ratio");  // inference: identity whatever the ratio
  return FloatUnaryResult(op, in, out);
}

}  // namespace shape_rules

namespace {

/// The shape rule of `op`, from its row of ops.def.
Status Dispatch(OpType op, shape_rules::AttrReader& r, const shape_rules::Types& in,
                shape_rules::Types* out, Attrs* attrs) {
  switch (op) {
#define OP(name, id, onnx, domain, min_in, max_in, num_out, shape, ...) \
  case OpType::k##name:                                                 \
    return shape_rules::Infer##shape(op, r, in, out, attrs);
#include "graph/ops.def"
#undef OP
  }
  return Internal("unknown op type " + std::to_string(static_cast<int>(op)));
}

}  // namespace

StatusOr<std::vector<TensorType>> InferAndCanonicalize(OpType op, Attrs* attrs,
                                                       const std::vector<TensorType>& inputs) {
  const OpInfo& info = GetOpInfo(op);
  const int n = static_cast<int>(inputs.size());
  if (!ArityAccepts(info, n)) {
    return shape_rules::Error(op,
                              "expects " + ArityText(info) + " inputs, got " + std::to_string(n));
  }
  std::vector<TensorType> out;
  shape_rules::AttrReader r(op, attrs);
  REWIRE_RETURN_IF_ERROR(Dispatch(op, r, inputs, &out, attrs));
  REWIRE_RETURN_IF_ERROR(r.CheckNoUnknown());
  for (const TensorType& t : out) {
    if (std::any_of(t.shape.begin(), t.shape.end(), [](int64_t d) { return d < 0; })) {
      return shape_rules::Error(op, "inferred a negative dimension " + t.ToString());
    }
    int64_t elements = 1;
    for (int64_t d : t.shape) {
      if (__builtin_mul_overflow(elements, d, &elements) || elements > (int64_t{1} << 48)) {
        return shape_rules::Error(op, "result " + t.ToString() + " has too many elements");
      }
    }
  }
  return out;
}

StatusOr<std::vector<TensorType>> InferOutputTypes(OpType op, const Attrs& attrs,
                                                   const std::vector<TensorType>& inputs) {
  Attrs copy = attrs;
  return InferAndCanonicalize(op, &copy, inputs);
}

}  // namespace rewire

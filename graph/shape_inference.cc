// Shape inference and attribute canonicalisation: one place per op (TASO's op x backend grid,
// the "op" row). Semantics follow ONNX opset 17.

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <string>

#include "graph/graph.h"

namespace rewire {
namespace {

using Types = std::vector<TensorType>;

Status Error(OpType op, const std::string& message) {
  return InvalidArgument(std::string(OpName(op)) + ": " + message);
}

std::string Str(const Shape& s) { return "[" + ShapeToString(s) + "]"; }

/// Reads and checks attributes of one op, remembering which names were consumed so that
/// unknown attributes can be reported.
class AttrReader {
 public:
  AttrReader(OpType op, Attrs* attrs) : op_(op), attrs_(attrs) {}

  StatusOr<int64_t> Int(const std::string& name, std::optional<int64_t> def = std::nullopt) {
    used_.insert(name);
    const AttrValue* v = attrs_->Find(name);
    if (!v) {
      if (!def) return Error(op_, "missing required attribute '" + name + "'");
      attrs_->Set(name, *def);
      return *def;
    }
    if (const auto* i = std::get_if<int64_t>(v)) return *i;
    return Error(op_, "attribute '" + name + "' must be an integer");
  }

  StatusOr<float> Float(const std::string& name, std::optional<float> def = std::nullopt) {
    used_.insert(name);
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

  StatusOr<std::string> String(const std::string& name, std::optional<std::string> def) {
    used_.insert(name);
    const AttrValue* v = attrs_->Find(name);
    if (!v) {
      if (!def) return Error(op_, "missing required attribute '" + name + "'");
      attrs_->Set(name, *def);
      return *def;
    }
    if (const auto* s = std::get_if<std::string>(v)) return *s;
    return Error(op_, "attribute '" + name + "' must be a string");
  }

  /// An int list; `len` < 0 means any length. Absent -> `def` (when given) else error.
  StatusOr<Ints> IntList(const std::string& name, int len, std::optional<Ints> def = std::nullopt) {
    used_.insert(name);
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

  bool Present(const std::string& name) const { return attrs_->Has(name); }
  void Drop(const std::string& name) { attrs_->Erase(name); }

  /// Fails on any attribute that was not read.
  Status CheckNoUnknown() const {
    for (const auto& [name, value] : attrs_->items()) {
      if (!used_.count(name)) return Error(op_, "unknown attribute '" + name + "'");
    }
    return Status::Ok();
  }

 private:
  OpType op_;
  Attrs* attrs_;
  std::set<std::string> used_;
};

StatusOr<int64_t> NormAxis(OpType op, int64_t axis, int64_t rank, const char* what = "axis") {
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

// ---------------------------------------------------------------------------- per op

/// The fused activation of Conv2D, MatMul and Gemm.
Status ReadActivation(OpType op, AttrReader& r) {
  REWIRE_ASSIGN_OR_RETURN(std::string act, r.String("activation", "none"));
  if (act != "none" && act != "relu" && act != "sigmoid" && act != "tanh" && act != "gelu") {
    return Error(op, "activation must be none, relu, sigmoid, tanh or gelu, got '" + act + "'");
  }
  return Status::Ok();
}

Status InferConv(OpType op, AttrReader& r, const Types& in, Types* out) {
  const TensorType& x = in[0];
  const TensorType& w = in[1];
  REWIRE_RETURN_IF_ERROR(RequireDType(op, x, DType::kFloat32, "input X"));
  REWIRE_RETURN_IF_ERROR(RequireDType(op, w, DType::kFloat32, "weight W"));
  REWIRE_RETURN_IF_ERROR(RequireRank(op, x, 4, "input X"));
  REWIRE_RETURN_IF_ERROR(RequireRank(op, w, 4, "weight W"));
  REWIRE_ASSIGN_OR_RETURN(Ints strides, r.IntList("strides", 2, Ints{1, 1}));
  REWIRE_ASSIGN_OR_RETURN(Ints pads, r.IntList("pads", 4, Ints{0, 0, 0, 0}));
  REWIRE_ASSIGN_OR_RETURN(Ints dil, r.IntList("dilations", 2, Ints{1, 1}));
  REWIRE_ASSIGN_OR_RETURN(int64_t group, r.Int("group", 1));
  REWIRE_RETURN_IF_ERROR(ReadActivation(op, r));
  if (group <= 0) return Error(op, "group must be positive");
  const int64_t c = x.shape[1], o = w.shape[0];
  if (c % group != 0 || o % group != 0) {
    return Error(op, "group " + std::to_string(group) + " must divide input channels " +
                         std::to_string(c) + " and output channels " + std::to_string(o));
  }
  if (w.shape[1] * group != c) {
    return Error(op, "weight " + Str(w.shape) + " expects " + std::to_string(w.shape[1] * group) +
                         " input channels, input X " + Str(x.shape) + " has " + std::to_string(c));
  }
  if (in.size() == 3) {
    REWIRE_RETURN_IF_ERROR(RequireDType(op, in[2], DType::kFloat32, "bias B"));
    if (in[2].shape != Shape{o}) {
      return Error(op, "bias B must be " + Str({o}) + ", got " + Str(in[2].shape));
    }
  }
  constexpr int64_t kMaxAttr = int64_t{1} << 31;  // keeps the arithmetic below far from overflow
  for (int i = 0; i < 2; ++i) {
    if (strides[i] <= 0 || dil[i] <= 0) return Error(op, "strides and dilations must be positive");
    if (pads[i] < 0 || pads[i + 2] < 0) return Error(op, "pads must be non-negative");
    if (strides[i] > kMaxAttr || dil[i] > kMaxAttr || pads[i] > kMaxAttr ||
        pads[i + 2] > kMaxAttr) {
      return Error(op, "strides, dilations and pads must be below 2^31");
    }
  }
  Shape s{x.shape[0], o, 0, 0};
  for (int i = 0; i < 2; ++i) {
    const int64_t span = dil[i] * (w.shape[2 + i] - 1) + 1;
    const int64_t padded = x.shape[2 + i] + pads[i] + pads[i + 2];
    if (padded < span) {
      return Error(op, "kernel " + Str({w.shape[2], w.shape[3]}) + " is larger than padded input " +
                           Str(x.shape));
    }
    s[2 + i] = (padded - span) / strides[i] + 1;
  }
  out->push_back({DType::kFloat32, s});
  return Status::Ok();
}

Status InferPool(OpType op, AttrReader& r, const Types& in, Types* out) {
  const TensorType& x = in[0];
  REWIRE_RETURN_IF_ERROR(RequireDType(op, x, DType::kFloat32, "input X"));
  REWIRE_RETURN_IF_ERROR(RequireRank(op, x, 4, "input X"));
  REWIRE_ASSIGN_OR_RETURN(Ints k, r.IntList("kernel_shape", 2));
  REWIRE_ASSIGN_OR_RETURN(Ints strides, r.IntList("strides", 2, Ints{1, 1}));
  REWIRE_ASSIGN_OR_RETURN(Ints pads, r.IntList("pads", 4, Ints{0, 0, 0, 0}));
  REWIRE_ASSIGN_OR_RETURN(int64_t ceil_mode, r.Int("ceil_mode", 0));
  if (op == OpType::kAvgPool2D) {
    REWIRE_ASSIGN_OR_RETURN(int64_t cip, r.Int("count_include_pad", 0));
    (void)cip;
  }
  Shape s{x.shape[0], x.shape[1], 0, 0};
  for (int i = 0; i < 2; ++i) {
    if (k[i] <= 0 || strides[i] <= 0) return Error(op, "kernel_shape and strides must be positive");
    if (pads[i] < 0 || pads[i + 2] < 0) return Error(op, "pads must be non-negative");
    if (pads[i] >= k[i] || pads[i + 2] >= k[i]) {
      return Error(op, "pads must be smaller than the kernel");
    }
    const int64_t padded = x.shape[2 + i] + pads[i] + pads[i + 2];
    if (padded < k[i]) return Error(op, "kernel is larger than padded input " + Str(x.shape));
    int64_t n = padded - k[i];
    int64_t len = ceil_mode ? (n + strides[i] - 1) / strides[i] + 1 : n / strides[i] + 1;
    // As PyTorch and ONNX Runtime: the last window must start inside the input or left padding.
    if (ceil_mode && (len - 1) * strides[i] >= x.shape[2 + i] + pads[i]) --len;
    s[2 + i] = len;
  }
  out->push_back({DType::kFloat32, s});
  return Status::Ok();
}

Status InferMatMul(OpType op, AttrReader& r, const Types& in, Types* out) {
  REWIRE_RETURN_IF_ERROR(ReadActivation(op, r));
  REWIRE_RETURN_IF_ERROR(RequireDType(op, in[0], DType::kFloat32, "input A"));
  REWIRE_RETURN_IF_ERROR(RequireDType(op, in[1], DType::kFloat32, "input B"));
  Shape a = in[0].shape, b = in[1].shape;
  if (a.empty() || b.empty()) return Error(op, "inputs must have rank >= 1");
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  if (a.back() != b[b.size() - 2]) {
    return Error(op, "inner dimensions differ: " + Str(in[0].shape) + " @ " + Str(in[1].shape));
  }
  REWIRE_ASSIGN_OR_RETURN(
      Shape batch, Broadcast(op, Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2)));
  Shape s = batch;
  if (!a_vec) s.push_back(a[a.size() - 2]);
  if (!b_vec) s.push_back(b.back());
  out->push_back({DType::kFloat32, s});
  return Status::Ok();
}

Status InferGemm(OpType op, AttrReader& r, const Types& in, Types* out) {
  REWIRE_ASSIGN_OR_RETURN(float alpha, r.Float("alpha", 1.f));
  REWIRE_ASSIGN_OR_RETURN(float beta, r.Float("beta", 1.f));
  REWIRE_ASSIGN_OR_RETURN(int64_t ta, r.Int("transA", 0));
  REWIRE_ASSIGN_OR_RETURN(int64_t tb, r.Int("transB", 0));
  REWIRE_RETURN_IF_ERROR(ReadActivation(op, r));
  (void)alpha;
  (void)beta;
  for (size_t i = 0; i < in.size(); ++i) {
    REWIRE_RETURN_IF_ERROR(RequireDType(op, in[i], DType::kFloat32, "inputs"));
  }
  REWIRE_RETURN_IF_ERROR(RequireRank(op, in[0], 2, "input A"));
  REWIRE_RETURN_IF_ERROR(RequireRank(op, in[1], 2, "input B"));
  const int64_t m = ta ? in[0].shape[1] : in[0].shape[0];
  const int64_t ka = ta ? in[0].shape[0] : in[0].shape[1];
  const int64_t kb = tb ? in[1].shape[1] : in[1].shape[0];
  const int64_t n = tb ? in[1].shape[0] : in[1].shape[1];
  if (ka != kb) {
    return Error(op, "inner dimensions differ: A " + Str(in[0].shape) + " B " + Str(in[1].shape));
  }
  if (in.size() == 3) {
    REWIRE_ASSIGN_OR_RETURN(Shape bc, Broadcast(op, in[2].shape, Shape{m, n}));
    if (bc != Shape{m, n})
      return Error(op, "C " + Str(in[2].shape) + " must broadcast to " + Str({m, n}));
  }
  out->push_back({DType::kFloat32, {m, n}});
  return Status::Ok();
}

Status InferSlice(OpType op, AttrReader& r, const TensorType& x, Types* out, Attrs* attrs) {
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  REWIRE_ASSIGN_OR_RETURN(Ints starts, r.IntList("starts", -1));
  REWIRE_ASSIGN_OR_RETURN(Ints ends, r.IntList("ends", -1));
  Ints def_axes(starts.size());
  for (size_t i = 0; i < def_axes.size(); ++i) def_axes[i] = static_cast<int64_t>(i);
  REWIRE_ASSIGN_OR_RETURN(Ints axes, r.IntList("axes", -1, def_axes));
  REWIRE_ASSIGN_OR_RETURN(Ints steps, r.IntList("steps", -1, Ints(starts.size(), 1)));
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    return Error(op, "starts, ends, axes and steps must have the same length");
  }
  // Canonical form: one entry per sliced axis, sorted by axis, starts/ends clamped as ONNX
  // does; "before the first element" (negative step) is written -(dim+1).
  std::vector<std::array<int64_t, 4>> entries;  // axis, start, end, step
  std::set<int64_t> seen;
  Shape s = x.shape;
  for (size_t i = 0; i < starts.size(); ++i) {
    REWIRE_ASSIGN_OR_RETURN(int64_t axis, NormAxis(op, axes[i], rank));
    if (!seen.insert(axis).second) return Error(op, "repeated axis in axes");
    const int64_t dim = x.shape[axis];
    const int64_t step = steps[i];
    if (step == 0 || step == std::numeric_limits<int64_t>::min())
      return Error(op, "steps must be non-zero and finite");
    int64_t start = starts[i], end = ends[i];
    if (start < 0) start += dim;
    if (end < 0 && end > std::numeric_limits<int64_t>::min() + dim) end += dim;
    int64_t len;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      len = end > start ? (end - start - 1) / step + 1 : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      len = start > end ? (start - end - 1) / (-step) + 1 : 0;
      if (end == -1) end = -(dim + 1);
    }
    s[axis] = len;
    entries.push_back({axis, start, end, step});
  }
  std::sort(entries.begin(), entries.end());
  Ints ca, cs, ce, cst;
  for (const auto& e : entries) {
    ca.push_back(e[0]);
    cs.push_back(e[1]);
    ce.push_back(e[2]);
    cst.push_back(e[3]);
  }
  attrs->Set("axes", ca);
  attrs->Set("starts", cs);
  attrs->Set("ends", ce);
  attrs->Set("steps", cst);
  REWIRE_RETURN_IF_ERROR(RequirePositiveDims(op, s));
  out->push_back({x.dtype, s});
  return Status::Ok();
}

Status InferReshape(OpType op, AttrReader& r, const TensorType& x, Types* out, Attrs* attrs) {
  REWIRE_ASSIGN_OR_RETURN(Ints shape, r.IntList("shape", -1));
  Shape s(shape.size());
  int64_t infer_at = -1, known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer_at >= 0) return Error(op, "shape has more than one -1");
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (shape[i] == 0) {
      if (i >= x.shape.size())
        return Error(op, "shape copies dimension " + std::to_string(i) + " that input " +
                             Str(x.shape) + " lacks");
      s[i] = x.shape[i];
    } else if (shape[i] < 0) {
      return Error(op, "shape has invalid dimension " + std::to_string(shape[i]));
    } else {
      s[i] = shape[i];
    }
    if (__builtin_mul_overflow(known, s[i], &known))
      return Error(op, "shape " + Str(shape) + " is too large");
  }
  const int64_t total = NumElements(x.shape);
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0) {
      return Error(op, "cannot reshape " + Str(x.shape) + " to " + Str(shape));
    }
    s[infer_at] = total / known;
  }
  if (NumElements(s) != total) {
    return Error(op, "cannot reshape " + Str(x.shape) + " (" + std::to_string(total) +
                         " elements) to " + Str(s));
  }
  attrs->Set("shape", Ints(s.begin(), s.end()));
  out->push_back({x.dtype, s});
  return Status::Ok();
}

Status InferReduce(OpType op, AttrReader& r, const TensorType& x, Types* out, Attrs* attrs) {
  REWIRE_RETURN_IF_ERROR(RequireDType(op, x, DType::kFloat32, "input"));
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  Ints all(rank);
  for (int64_t i = 0; i < rank; ++i) all[i] = i;
  REWIRE_ASSIGN_OR_RETURN(Ints axes, r.IntList("axes", -1, all));
  REWIRE_ASSIGN_OR_RETURN(int64_t keepdims, r.Int("keepdims", 1));
  REWIRE_ASSIGN_OR_RETURN(axes, NormAxes(op, axes, rank));
  if (axes.empty()) axes = all;  // ONNX: empty axes reduce everything (noop_with_empty_axes=0)
  attrs->Set("axes", axes);
  attrs->Set("keepdims", keepdims ? int64_t{1} : int64_t{0});
  Shape s;
  for (int64_t i = 0; i < rank; ++i) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), i);
    if (!reduced)
      s.push_back(x.shape[i]);
    else if (keepdims)
      s.push_back(1);
  }
  out->push_back({DType::kFloat32, s});
  return Status::Ok();
}

/// A float32 element-wise op: the output type is the input's.
Status FloatUnary(OpType op, const Types& in, Types* out) {
  REWIRE_RETURN_IF_ERROR(RequireDType(op, in[0], DType::kFloat32, "input"));
  out->push_back(in[0]);
  return Status::Ok();
}

Status InferGlobalAvgPool(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  REWIRE_RETURN_IF_ERROR(RequireDType(op, in[0], DType::kFloat32, "input"));
  if (in[0].shape.size() < 3)
    return Error(op, "input must have rank >= 3, got " + Str(in[0].shape));
  Shape s = in[0].shape;
  for (size_t i = 2; i < s.size(); ++i) s[i] = 1;
  out->push_back({DType::kFloat32, s});
  return Status::Ok();
}

Status InferClip(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  REWIRE_ASSIGN_OR_RETURN(float lo, r.Float("min", std::numeric_limits<float>::lowest()));
  REWIRE_ASSIGN_OR_RETURN(float hi, r.Float("max", std::numeric_limits<float>::max()));
  if (lo > hi) return Error(op, "min must not exceed max");
  REWIRE_RETURN_IF_ERROR(FloatUnary(op, in, out));
  return Status::Ok();
}

Status InferCast(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  REWIRE_ASSIGN_OR_RETURN(int64_t to, r.Int("to"));
  REWIRE_ASSIGN_OR_RETURN(DType dt, DTypeFromOnnx(static_cast<int32_t>(to)));
  out->push_back({dt, in[0].shape});
  return Status::Ok();
}

Status InferBatchNorm(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  REWIRE_RETURN_IF_ERROR(r.Float("epsilon", 1e-5f).status());
  REWIRE_RETURN_IF_ERROR(RequireDType(op, in[0], DType::kFloat32, "input X"));
  if (in[0].shape.size() < 2) return Error(op, "input X must have rank >= 2");
  const int64_t c = in[0].shape[1];
  static const char* names[] = {"X", "scale", "B", "mean", "var"};
  for (int i = 1; i < 5; ++i) {
    if (in[i].shape != Shape{c} || in[i].dtype != DType::kFloat32) {
      return Error(op,
                   std::string(names[i]) + " must be f32" + Str({c}) + ", got " + in[i].ToString());
    }
  }
  out->push_back(in[0]);
  return Status::Ok();
}

Status InferLayerNorm(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  REWIRE_RETURN_IF_ERROR(r.Float("epsilon", 1e-5f).status());
  REWIRE_RETURN_IF_ERROR(RequireDType(op, in[0], DType::kFloat32, "input X"));
  const int64_t rank = static_cast<int64_t>(in[0].shape.size());
  REWIRE_ASSIGN_OR_RETURN(int64_t axis, r.Int("axis", -1));
  REWIRE_ASSIGN_OR_RETURN(axis, NormAxis(op, axis, rank));
  attrs->Set("axis", axis);
  const Shape norm(in[0].shape.begin() + axis, in[0].shape.end());
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].shape != norm || in[i].dtype != DType::kFloat32) {
      return Error(op, std::string(i == 1 ? "scale" : "bias") + " must be f32" + Str(norm) +
                           ", got " + in[i].ToString());
    }
  }
  out->push_back(in[0]);
  return Status::Ok();
}

Status InferSoftmax(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  REWIRE_RETURN_IF_ERROR(RequireDType(op, in[0], DType::kFloat32, "input"));
  REWIRE_ASSIGN_OR_RETURN(int64_t axis, r.Int("axis", -1));
  REWIRE_ASSIGN_OR_RETURN(axis, NormAxis(op, axis, static_cast<int64_t>(in[0].shape.size())));
  attrs->Set("axis", axis);
  out->push_back(in[0]);
  return Status::Ok();
}

/// Add, Sub, Mul, Div, Pow: one element type, broadcast shapes.
Status InferElementwiseBinary(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  if (in[0].dtype != in[1].dtype) {
    return Error(op, "input types differ: " + in[0].ToString() + " and " + in[1].ToString());
  }
  if (in[0].dtype == DType::kBool || (op == OpType::kPow && in[0].dtype != DType::kFloat32)) {
    return Error(op, "unsupported element type " + in[0].ToString());
  }
  REWIRE_ASSIGN_OR_RETURN(Shape s, Broadcast(op, in[0].shape, in[1].shape));
  out->push_back({in[0].dtype, s});
  return Status::Ok();
}

Status InferWhere(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  REWIRE_RETURN_IF_ERROR(RequireDType(op, in[0], DType::kBool, "condition"));
  if (in[1].dtype != in[2].dtype) {
    return Error(op, "X and Y types differ: " + in[1].ToString() + " and " + in[2].ToString());
  }
  REWIRE_ASSIGN_OR_RETURN(Shape s, Broadcast(op, in[0].shape, in[1].shape));
  REWIRE_ASSIGN_OR_RETURN(s, Broadcast(op, s, in[2].shape));
  out->push_back({in[1].dtype, s});
  return Status::Ok();
}

Status InferConcat(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  REWIRE_ASSIGN_OR_RETURN(int64_t axis, r.Int("axis"));
  const int64_t rank = static_cast<int64_t>(in[0].shape.size());
  REWIRE_ASSIGN_OR_RETURN(axis, NormAxis(op, axis, rank));
  attrs->Set("axis", axis);
  Shape s = in[0].shape;
  for (size_t i = 1; i < in.size(); ++i) {
    bool ok = in[i].dtype == in[0].dtype && in[i].shape.size() == s.size();
    for (int64_t d = 0; ok && d < rank; ++d) ok = d == axis || in[i].shape[d] == s[d];
    if (!ok) {
      return Error(op, "input " + std::to_string(i) + " " + in[i].ToString() + " does not match " +
                           in[0].ToString() + " outside axis " + std::to_string(axis));
    }
    s[axis] += in[i].shape[axis];
  }
  out->push_back({in[0].dtype, s});
  return Status::Ok();
}

Status InferSplit(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  const int64_t rank = static_cast<int64_t>(in[0].shape.size());
  REWIRE_ASSIGN_OR_RETURN(int64_t axis, r.Int("axis", 0));
  REWIRE_ASSIGN_OR_RETURN(axis, NormAxis(op, axis, rank));
  attrs->Set("axis", axis);
  REWIRE_ASSIGN_OR_RETURN(Ints split, r.IntList("split", -1));
  if (split.empty()) return Error(op, "split must list at least one size");
  int64_t sum = 0;
  for (int64_t v : split) {
    if (v <= 0) return Error(op, "split sizes must be positive");
    sum += v;
  }
  if (sum != in[0].shape[axis]) {
    return Error(op, "split sizes sum to " + std::to_string(sum) + " but axis " +
                         std::to_string(axis) + " of " + Str(in[0].shape) + " has " +
                         std::to_string(in[0].shape[axis]));
  }
  for (int64_t v : split) {
    Shape s = in[0].shape;
    s[axis] = v;
    out->push_back({in[0].dtype, s});
  }
  return Status::Ok();
}

Status InferTranspose(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  const int64_t rank = static_cast<int64_t>(in[0].shape.size());
  Ints rev(rank);
  for (int64_t i = 0; i < rank; ++i) rev[i] = rank - 1 - i;
  REWIRE_ASSIGN_OR_RETURN(Ints perm, r.IntList("perm", static_cast<int>(rank), rev));
  Ints sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < rank; ++i) {
    if (sorted[i] != i)
      return Error(op, "perm is not a permutation of 0.." + std::to_string(rank - 1));
  }
  Shape s(rank);
  for (int64_t i = 0; i < rank; ++i) s[i] = in[0].shape[perm[i]];
  out->push_back({in[0].dtype, s});
  return Status::Ok();
}

Status InferFlatten(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  const int64_t rank = static_cast<int64_t>(in[0].shape.size());
  REWIRE_ASSIGN_OR_RETURN(int64_t axis, r.Int("axis", 1));
  if (axis < -rank || axis > rank) return Error(op, "axis out of range");
  if (axis < 0) axis += rank;
  attrs->Set("axis", axis);
  int64_t a = 1, b = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? a : b) *= in[0].shape[i];
  out->push_back({in[0].dtype, {a, b}});
  return Status::Ok();
}

Status InferSqueeze(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  const int64_t rank = static_cast<int64_t>(in[0].shape.size());
  Ints ones;
  for (int64_t i = 0; i < rank; ++i) {
    if (in[0].shape[i] == 1) ones.push_back(i);
  }
  REWIRE_ASSIGN_OR_RETURN(Ints axes, r.IntList("axes", -1, ones));
  REWIRE_ASSIGN_OR_RETURN(axes, NormAxes(op, axes, rank));
  attrs->Set("axes", axes);
  Shape s;
  for (int64_t i = 0; i < rank; ++i) {
    if (std::binary_search(axes.begin(), axes.end(), i)) {
      if (in[0].shape[i] != 1) {
        return Error(op, "cannot squeeze axis " + std::to_string(i) + " of " + Str(in[0].shape));
      }
    } else {
      s.push_back(in[0].shape[i]);
    }
  }
  out->push_back({in[0].dtype, s});
  return Status::Ok();
}

Status InferUnsqueeze(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  REWIRE_ASSIGN_OR_RETURN(Ints axes, r.IntList("axes", -1));
  const int64_t rank = static_cast<int64_t>(in[0].shape.size() + axes.size());
  REWIRE_ASSIGN_OR_RETURN(axes, NormAxes(op, axes, rank));
  attrs->Set("axes", axes);
  Shape s;
  size_t j = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (std::binary_search(axes.begin(), axes.end(), i))
      s.push_back(1);
    else
      s.push_back(in[0].shape[j++]);
  }
  out->push_back({in[0].dtype, s});
  return Status::Ok();
}

Status InferPad(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  const size_t rank = in[0].shape.size();
  REWIRE_ASSIGN_OR_RETURN(Ints pads, r.IntList("pads", static_cast<int>(2 * rank)));
  REWIRE_ASSIGN_OR_RETURN(float value, r.Float("value", 0.f));
  (void)value;
  Shape s = in[0].shape;
  for (size_t i = 0; i < rank; ++i) s[i] += pads[i] + pads[i + rank];
  REWIRE_RETURN_IF_ERROR(RequirePositiveDims(op, s));
  out->push_back({in[0].dtype, s});
  return Status::Ok();
}

Status InferGather(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  REWIRE_RETURN_IF_ERROR(RequireDType(op, in[1], DType::kInt64, "indices"));
  const int64_t rank = static_cast<int64_t>(in[0].shape.size());
  if (rank == 0) return Error(op, "data must have rank >= 1");
  REWIRE_ASSIGN_OR_RETURN(int64_t axis, r.Int("axis", 0));
  REWIRE_ASSIGN_OR_RETURN(axis, NormAxis(op, axis, rank));
  attrs->Set("axis", axis);
  Shape s(in[0].shape.begin(), in[0].shape.begin() + axis);
  s.insert(s.end(), in[1].shape.begin(), in[1].shape.end());
  s.insert(s.end(), in[0].shape.begin() + axis + 1, in[0].shape.end());
  out->push_back({in[0].dtype, s});
  return Status::Ok();
}

Status InferEnlarge(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  REWIRE_RETURN_IF_ERROR(RequireDType(op, in[0], DType::kFloat32, "weight"));
  REWIRE_RETURN_IF_ERROR(RequireRank(op, in[0], 4, "weight"));
  REWIRE_ASSIGN_OR_RETURN(Ints k, r.IntList("kernel_shape", 2));
  Shape s = in[0].shape;
  for (int i = 0; i < 2; ++i) {
    const int64_t diff = k[i] - s[2 + i];
    if (diff < 0 || diff % 2 != 0) {
      return Error(op, "kernel_shape " + Str(k) + " must be at least the weight's kernel " +
                           Str({s[2], s[3]}) + " and differ from it by an even amount");
    }
    s[2 + i] = k[i];
  }
  out->push_back({DType::kFloat32, s});
  return Status::Ok();
}

Status InferMergeGConv(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  REWIRE_RETURN_IF_ERROR(RequireDType(op, in[0], DType::kFloat32, "weight"));
  REWIRE_RETURN_IF_ERROR(RequireRank(op, in[0], 4, "weight"));
  REWIRE_ASSIGN_OR_RETURN(int64_t group, r.Int("group"));
  REWIRE_ASSIGN_OR_RETURN(int64_t count, r.Int("count"));
  if (group <= 0 || count <= 0 || group % count != 0 || in[0].shape[0] % group != 0) {
    return Error(op, "count " + std::to_string(count) + " must divide group " +
                         std::to_string(group) + ", which must divide the " +
                         std::to_string(in[0].shape[0]) + " output channels");
  }
  Shape s = in[0].shape;
  s[1] *= count;
  out->push_back({DType::kFloat32, s});
  return Status::Ok();
}

/// Checks `in` and `attrs` for `op`, canonicalises `attrs` and appends the output types: one
/// case per op, each calling its Infer* function above (or a line or two for the simplest).
Status Infer(OpType op, Attrs* attrs, const Types& in, Types* out) {
  AttrReader r(op, attrs);
  switch (op) {
    case OpType::kInput:
    case OpType::kWeight:
    case OpType::kConstant:
    case OpType::kOpaque:
      return Error(op, "is created with its own Graph::Add* call, not AddOp");

    case OpType::kConv2D:
      REWIRE_RETURN_IF_ERROR(InferConv(op, r, in, out));
      break;
    case OpType::kMaxPool2D:
    case OpType::kAvgPool2D:
      REWIRE_RETURN_IF_ERROR(InferPool(op, r, in, out));
      break;
    case OpType::kGlobalAvgPool:
      REWIRE_RETURN_IF_ERROR(InferGlobalAvgPool(op, r, in, out, attrs));
      break;

    case OpType::kRelu:
    case OpType::kSigmoid:
    case OpType::kTanh:
    case OpType::kExp:
    case OpType::kSqrt:
    case OpType::kErf:
    case OpType::kGelu:
      REWIRE_RETURN_IF_ERROR(FloatUnary(op, in, out));
      break;
    case OpType::kLeakyRelu:
      REWIRE_RETURN_IF_ERROR(r.Float("alpha", 0.01f).status());
      REWIRE_RETURN_IF_ERROR(FloatUnary(op, in, out));
      break;
    case OpType::kClip:
      REWIRE_RETURN_IF_ERROR(InferClip(op, r, in, out, attrs));
      break;
    case OpType::kDropout:
      r.Drop("ratio");  // inference: identity whatever the ratio
      REWIRE_RETURN_IF_ERROR(FloatUnary(op, in, out));
      break;
    case OpType::kIdentity:
      out->push_back(in[0]);
      break;
    case OpType::kScalarMul:
      REWIRE_RETURN_IF_ERROR(r.Float("scalar").status());
      REWIRE_RETURN_IF_ERROR(FloatUnary(op, in, out));
      break;
    case OpType::kCast:
      REWIRE_RETURN_IF_ERROR(InferCast(op, r, in, out, attrs));
      break;

    case OpType::kBatchNorm:
      REWIRE_RETURN_IF_ERROR(InferBatchNorm(op, r, in, out, attrs));
      break;
    case OpType::kLayerNorm:
      REWIRE_RETURN_IF_ERROR(InferLayerNorm(op, r, in, out, attrs));
      break;
    case OpType::kSoftmax:
      REWIRE_RETURN_IF_ERROR(InferSoftmax(op, r, in, out, attrs));
      break;

    case OpType::kAdd:
    case OpType::kSub:
    case OpType::kMul:
    case OpType::kDiv:
    case OpType::kPow:
      REWIRE_RETURN_IF_ERROR(InferElementwiseBinary(op, r, in, out, attrs));
      break;
    case OpType::kWhere:
      REWIRE_RETURN_IF_ERROR(InferWhere(op, r, in, out, attrs));
      break;

    case OpType::kMatMul:
      REWIRE_RETURN_IF_ERROR(InferMatMul(op, r, in, out));
      break;
    case OpType::kGemm:
      REWIRE_RETURN_IF_ERROR(InferGemm(op, r, in, out));
      break;

    case OpType::kConcat:
      REWIRE_RETURN_IF_ERROR(InferConcat(op, r, in, out, attrs));
      break;
    case OpType::kSplit:
      REWIRE_RETURN_IF_ERROR(InferSplit(op, r, in, out, attrs));
      break;
    case OpType::kReshape:
      REWIRE_RETURN_IF_ERROR(InferReshape(op, r, in[0], out, attrs));
      break;
    case OpType::kTranspose:
      REWIRE_RETURN_IF_ERROR(InferTranspose(op, r, in, out, attrs));
      break;
    case OpType::kFlatten:
      REWIRE_RETURN_IF_ERROR(InferFlatten(op, r, in, out, attrs));
      break;
    case OpType::kSqueeze:
      REWIRE_RETURN_IF_ERROR(InferSqueeze(op, r, in, out, attrs));
      break;
    case OpType::kUnsqueeze:
      REWIRE_RETURN_IF_ERROR(InferUnsqueeze(op, r, in, out, attrs));
      break;
    case OpType::kPad:
      REWIRE_RETURN_IF_ERROR(InferPad(op, r, in, out, attrs));
      break;
    case OpType::kSlice:
      REWIRE_RETURN_IF_ERROR(InferSlice(op, r, in[0], out, attrs));
      break;
    case OpType::kGather:
      REWIRE_RETURN_IF_ERROR(InferGather(op, r, in, out, attrs));
      break;

    case OpType::kReduceMean:
    case OpType::kReduceSum:
    case OpType::kReduceMax:
      REWIRE_RETURN_IF_ERROR(InferReduce(op, r, in[0], out, attrs));
      break;

    case OpType::kEnlarge:
      REWIRE_RETURN_IF_ERROR(InferEnlarge(op, r, in, out, attrs));
      break;
    case OpType::kMergeGConv:
      REWIRE_RETURN_IF_ERROR(InferMergeGConv(op, r, in, out, attrs));
      break;
  }
  REWIRE_RETURN_IF_ERROR(r.CheckNoUnknown());
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<TensorType>> InferAndCanonicalize(OpType op, Attrs* attrs,
                                                       const std::vector<TensorType>& inputs) {
  const OpInfo& info = GetOpInfo(op);
  const int n = static_cast<int>(inputs.size());
  if (n < info.min_inputs || (info.max_inputs != kVariadic && n > info.max_inputs)) {
    std::string want = std::to_string(info.min_inputs);
    if (info.max_inputs == kVariadic)
      want += " or more";
    else if (info.max_inputs != info.min_inputs)
      want += " to " + std::to_string(info.max_inputs);
    return Error(op, "expects " + want + " inputs, got " + std::to_string(n));
  }
  std::vector<TensorType> out;
  REWIRE_RETURN_IF_ERROR(Infer(op, attrs, inputs, &out));
  for (const TensorType& t : out) {
    if (std::any_of(t.shape.begin(), t.shape.end(), [](int64_t d) { return d < 0; })) {
      return Error(op, "inferred a negative dimension " + t.ToString());
    }
    int64_t elements = 1;
    for (int64_t d : t.shape) {
      if (__builtin_mul_overflow(elements, d, &elements) || elements > (int64_t{1} << 48)) {
        return Error(op, "result " + t.ToString() + " has too many elements");
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

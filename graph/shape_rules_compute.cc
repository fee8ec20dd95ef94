// Shape rules of the arithmetic ops (graph/ops.def, column `shape`): convolution, pooling,
// linear algebra, normalisation, element-wise ops and reductions.

#include <algorithm>
#include <limits>

#include "graph/shape_rules.h"

namespace rewire::shape_rules {

/// The fused activation of the ops that declare `activation` (Conv2D, MatMul, Gemm).
Status ReadActivation(OpType op, AttrReader& r) {
  REWIRE_ASSIGN_OR_RETURN(std::string act, r.String("activation", "none"));
  if (act != "none" && act != "relu" && act != "sigmoid" && act != "tanh" && act != "gelu") {
    return Error(op, "activation must be none, relu, sigmoid, tanh or gelu, got '" + act + "'");
  }
  return Status::Ok();
}

Status InferConv(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
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

Status InferPool(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
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

Status InferMatMul(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
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

Status InferGemm(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
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

Status InferReduce(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  const TensorType& x = in[0];
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
  REWIRE_RETURN_IF_ERROR(FloatUnaryResult(op, in, out));
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
Status InferBinary(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
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

}  // namespace rewire::shape_rules

// Constant evaluation of the shape arithmetic that exporters emit (Shape -> Gather -> Unsqueeze
// -> Concat -> Reshape chains, Range/Where/Expand on small tensors), on host values, without
// LibTorch. Semantics follow ONNX; an op or case not listed here is left in the graph.

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "graph/onnx/onnx_internal.h"

namespace rewire::onnx_io {
namespace {

using onnx::NodeProto;
using onnx::TensorProto;

Status NotFoldable(const NodeProto& node, const std::string& why) {
  return Unimplemented(Describe(node) + ": " + why);
}
Status Bad(const NodeProto& node, const std::string& why) {
  return InvalidArgument(Describe(node) + ": " + why);
}

std::string Str(const Shape& s) { return "[" + ShapeToString(s) + "]"; }

/// An empty literal of `dtype` and `shape` (values to be filled by the caller).
Literal Make(int32_t dtype, Shape shape) {
  Literal out;
  out.dtype = dtype;
  out.shape = std::move(shape);
  const int64_t n = NumElements(out.shape);
  if (out.IsReal()) out.reals.assign(static_cast<size_t>(n), 0.0);
  else out.ints.assign(static_cast<size_t>(n), 0);
  return out;
}

Literal IntVector(const std::vector<int64_t>& v) {
  Literal out = Make(TensorProto::INT64, {static_cast<int64_t>(v.size())});
  out.ints = v;
  return out;
}

Status CheckSize(const NodeProto& node, const Shape& shape) {
  const auto n = CheckedNumElements(shape);
  if (!n) return Bad(node, "result shape " + Str(shape) + " is invalid");
  if (*n > kMaxFoldElements) return NotFoldable(node, "result too large to fold");
  return Status::Ok();
}

/// Rounds `v` to the precision of `dtype` (float32 values stay float32-exact).
double RoundReal(int32_t dtype, double v) {
  return dtype == TensorProto::FLOAT ? static_cast<double>(static_cast<float>(v)) : v;
}

/// Wraps an int64 to the range of an integer `dtype` (as a C cast would).
int64_t WrapInt(int32_t dtype, int64_t v) {
  switch (dtype) {
    case TensorProto::BOOL: return v != 0;
    case TensorProto::INT8: return static_cast<int8_t>(v);
    case TensorProto::UINT8: return static_cast<uint8_t>(v);
    case TensorProto::INT16: return static_cast<int16_t>(v);
    case TensorProto::UINT16: return static_cast<uint16_t>(v);
    case TensorProto::INT32: return static_cast<int32_t>(v);
    case TensorProto::UINT32: return static_cast<uint32_t>(v);
    default: return v;
  }
}

std::vector<int64_t> Strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t i = static_cast<int64_t>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

/// Copies elements `idx` of `in` into a literal of shape `shape`.
Literal Take(const Literal& in, const Shape& shape, const std::vector<int64_t>& idx) {
  Literal out;
  out.dtype = in.dtype;
  out.shape = shape;
  if (in.IsReal()) {
    out.reals.reserve(idx.size());
    for (int64_t i : idx) out.reals.push_back(in.reals[i]);
  } else {
    out.ints.reserve(idx.size());
    for (int64_t i : idx) out.ints.push_back(in.ints[i]);
  }
  return out;
}

StatusOr<Shape> Broadcast(const NodeProto& node, const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return Bad(node, "shapes " + Str(a) + " and " + Str(b) + " do not broadcast");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

/// For every element of `out` (row-major), the flat index of the element of `in` it reads
/// under numpy broadcasting.
std::vector<int64_t> BroadcastIndex(const Shape& out, const Shape& in) {
  const int64_t n = NumElements(out);
  const size_t rank = out.size();
  const std::vector<int64_t> in_strides = Strides(in);
  std::vector<int64_t> stride(rank, 0);
  for (size_t i = 0; i < in.size(); ++i) {
    const size_t o = rank - in.size() + i;
    stride[o] = in[i] == 1 ? 0 : in_strides[i];
  }
  std::vector<int64_t> idx(static_cast<size_t>(n));
  std::vector<int64_t> pos(rank, 0);
  int64_t flat = 0;
  for (int64_t k = 0; k < n; ++k) {
    idx[k] = flat;
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++pos[d] < out[d]) {
        flat += stride[d];
        break;
      }
      flat -= stride[d] * (out[d] - 1);
      pos[d] = 0;
    }
  }
  return idx;
}

StatusOr<int64_t> NormAxis(const NodeProto& node, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return Bad(node, "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

/// Axes from the attribute (older opsets) or from input `index` (newer ones); nullopt if absent.
StatusOr<std::optional<Ints>> AxesOf(const NodeProto& node, const std::vector<const Literal*>& in,
                                     size_t index) {
  if (in.size() > index && in[index]) return std::optional<Ints>(in[index]->AsInts());
  return AttrInts(node, "axes");
}

// ---------------------------------------------------------------------------- element-wise

using BinaryReal = std::function<double(double, double)>;
using BinaryInt = std::function<StatusOr<int64_t>(int64_t, int64_t)>;

enum class ResultKind { kSame, kBool };

StatusOr<Literal> Binary(const NodeProto& node, const Literal& a, const Literal& b,
                         const BinaryReal& fr, const BinaryInt& fi, ResultKind kind) {
  if (a.dtype != b.dtype) {
    return Bad(node, std::string("input types differ: ") + OnnxTypeName(a.dtype) + " and " +
                         OnnxTypeName(b.dtype));
  }
  ASSIGN_OR_RETURN(Shape shape, Broadcast(node, a.shape, b.shape));
  RETURN_IF_ERROR(CheckSize(node, shape));
  const std::vector<int64_t> ia = BroadcastIndex(shape, a.shape);
  const std::vector<int64_t> ib = BroadcastIndex(shape, b.shape);
  Literal out = Make(kind == ResultKind::kBool ? TensorProto::BOOL : a.dtype, shape);
  for (size_t k = 0; k < ia.size(); ++k) {
    if (a.IsReal()) {
      if (!fr) return NotFoldable(node, "not defined on floating-point inputs");
      const double r = fr(a.reals[ia[k]], b.reals[ib[k]]);
      if (out.IsReal()) out.reals[k] = RoundReal(out.dtype, r);
      else out.ints[k] = r != 0;
    } else {
      if (!fi) return NotFoldable(node, "not defined on integer inputs");
      ASSIGN_OR_RETURN(int64_t r, fi(a.ints[ia[k]], b.ints[ib[k]]));
      out.ints[k] = kind == ResultKind::kBool ? (r != 0) : WrapInt(out.dtype, r);
    }
  }
  return out;
}

int64_t WrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t WrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t WrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

StatusOr<Literal> FoldBinary(const NodeProto& node, const Literal& a, const Literal& b) {
  const std::string& op = node.op_type();
  auto ok = [](int64_t v) -> StatusOr<int64_t> { return v; };
  if (op == "Add") return Binary(node, a, b, std::plus<double>(), [&](int64_t x, int64_t y) { return ok(WrapAdd(x, y)); }, ResultKind::kSame);
  if (op == "Sub") return Binary(node, a, b, std::minus<double>(), [&](int64_t x, int64_t y) { return ok(WrapSub(x, y)); }, ResultKind::kSame);
  if (op == "Mul") return Binary(node, a, b, std::multiplies<double>(), [&](int64_t x, int64_t y) { return ok(WrapMul(x, y)); }, ResultKind::kSame);
  if (op == "Div") {
    return Binary(node, a, b, std::divides<double>(),
                  [&](int64_t x, int64_t y) -> StatusOr<int64_t> {
                    if (y == 0) return Bad(node, "integer division by zero");
                    if (y == -1) return WrapSub(0, x);
                    return x / y;
                  },
                  ResultKind::kSame);
  }
  if (op == "Mod") {
    ASSIGN_OR_RETURN(int64_t fmod, AttrInt(node, "fmod", 0));
    return Binary(node, a, b,
                  [fmod](double x, double y) {
                    double r = std::fmod(x, y);
                    if (!fmod && r != 0 && ((r < 0) != (y < 0))) r += y;
                    return r;
                  },
                  [&, fmod](int64_t x, int64_t y) -> StatusOr<int64_t> {
                    if (y == 0) return Bad(node, "integer modulo by zero");
                    if (y == -1) return 0;
                    int64_t r = x % y;
                    if (!fmod && r != 0 && ((r < 0) != (y < 0))) r += y;
                    return r;
                  },
                  ResultKind::kSame);
  }
  if (op == "Pow") {
    if (a.dtype != b.dtype) return NotFoldable(node, "mixed-type Pow");
    return Binary(node, a, b, [](double x, double y) { return std::pow(x, y); },
                  [&](int64_t x, int64_t y) { return ok(RealToInt(std::pow(double(x), double(y)))); },
                  ResultKind::kSame);
  }
  if (op == "Min" || op == "Max") {
    const bool mx = op == "Max";
    return Binary(node, a, b, [mx](double x, double y) { return mx ? std::max(x, y) : std::min(x, y); },
                  [&, mx](int64_t x, int64_t y) { return ok(mx ? std::max(x, y) : std::min(x, y)); },
                  ResultKind::kSame);
  }
  if (op == "Equal") return Binary(node, a, b, [](double x, double y) { return double(x == y); }, [&](int64_t x, int64_t y) { return ok(x == y); }, ResultKind::kBool);
  if (op == "Less") return Binary(node, a, b, [](double x, double y) { return double(x < y); }, [&](int64_t x, int64_t y) { return ok(x < y); }, ResultKind::kBool);
  if (op == "Greater") return Binary(node, a, b, [](double x, double y) { return double(x > y); }, [&](int64_t x, int64_t y) { return ok(x > y); }, ResultKind::kBool);
  if (op == "LessOrEqual") return Binary(node, a, b, [](double x, double y) { return double(x <= y); }, [&](int64_t x, int64_t y) { return ok(x <= y); }, ResultKind::kBool);
  if (op == "GreaterOrEqual") return Binary(node, a, b, [](double x, double y) { return double(x >= y); }, [&](int64_t x, int64_t y) { return ok(x >= y); }, ResultKind::kBool);
  if (op == "And" || op == "Or" || op == "Xor") {
    if (a.dtype != TensorProto::BOOL) return Bad(node, "inputs must be bool");
    const int which = op == "And" ? 0 : op == "Or" ? 1 : 2;
    return Binary(node, a, b, nullptr,
                  [&, which](int64_t x, int64_t y) {
                    return ok(which == 0 ? (x && y) : which == 1 ? (x || y) : ((x != 0) != (y != 0)));
                  },
                  ResultKind::kBool);
  }
  return NotFoldable(node, "unknown binary op");
}

StatusOr<Literal> FoldUnary(const NodeProto& node, const Literal& x) {
  const std::string& op = node.op_type();
  Literal out = x;
  if (op == "Not") {
    if (x.dtype != TensorProto::BOOL) return Bad(node, "input must be bool");
    for (int64_t& v : out.ints) v = !v;
    return out;
  }
  if (x.IsReal()) {
    for (double& v : out.reals) {
      if (op == "Neg") v = -v;
      else if (op == "Abs") v = std::fabs(v);
      else if (op == "Sqrt") v = std::sqrt(v);
      else if (op == "Floor") v = std::floor(v);
      else if (op == "Ceil") v = std::ceil(v);
      else if (op == "Reciprocal") v = 1.0 / v;
      else if (op == "Sign") v = (v > 0) - (v < 0);
      else return NotFoldable(node, "unknown unary op");
      v = RoundReal(out.dtype, v);
    }
    return out;
  }
  for (int64_t& v : out.ints) {
    if (op == "Neg") v = WrapInt(out.dtype, WrapSub(0, v));
    else if (op == "Abs") v = v < 0 ? WrapInt(out.dtype, WrapSub(0, v)) : v;
    else if (op == "Sign") v = (v > 0) - (v < 0);
    else if (op == "Floor" || op == "Ceil") continue;
    else return NotFoldable(node, op + " on integers");
  }
  return out;
}

StatusOr<Literal> FoldCast(const NodeProto& node, const Literal& x, int64_t to) {
  if (!IsLiteralType(static_cast<int32_t>(to))) {
    return NotFoldable(node, std::string("cast to ") + OnnxTypeName(static_cast<int32_t>(to)));
  }
  Literal out = Make(static_cast<int32_t>(to), x.shape);
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) {
    if (out.IsReal()) {
      out.reals[i] = RoundReal(out.dtype, x.Real(i));
    } else if (out.dtype == TensorProto::BOOL) {
      out.ints[i] = x.Real(i) != 0;
    } else {
      out.ints[i] = WrapInt(out.dtype, x.IsReal() ? RealToInt(x.reals[i]) : x.ints[i]);
    }
  }
  return out;
}

StatusOr<Literal> FoldWhere(const NodeProto& node, const Literal& c, const Literal& x,
                            const Literal& y) {
  if (x.dtype != y.dtype) return Bad(node, "X and Y types differ");
  ASSIGN_OR_RETURN(Shape s, Broadcast(node, c.shape, x.shape));
  ASSIGN_OR_RETURN(s, Broadcast(node, s, y.shape));
  RETURN_IF_ERROR(CheckSize(node, s));
  const auto ic = BroadcastIndex(s, c.shape), ix = BroadcastIndex(s, x.shape),
             iy = BroadcastIndex(s, y.shape);
  Literal out = Make(x.dtype, s);
  for (size_t k = 0; k < ic.size(); ++k) {
    const bool cond = c.Real(ic[k]) != 0;
    if (out.IsReal()) out.reals[k] = cond ? x.reals[ix[k]] : y.reals[iy[k]];
    else out.ints[k] = cond ? x.ints[ix[k]] : y.ints[iy[k]];
  }
  return out;
}

// ---------------------------------------------------------------------------- data movement

StatusOr<Literal> FoldGather(const NodeProto& node, const Literal& data, const Literal& indices) {
  if (indices.IsReal()) return Bad(node, "indices must be integers");
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  if (rank == 0) return Bad(node, "data must have rank >= 1");
  ASSIGN_OR_RETURN(int64_t axis, AttrInt(node, "axis", 0));
  ASSIGN_OR_RETURN(axis, NormAxis(node, axis, rank));
  Shape s(data.shape.begin(), data.shape.begin() + axis);
  s.insert(s.end(), indices.shape.begin(), indices.shape.end());
  s.insert(s.end(), data.shape.begin() + axis + 1, data.shape.end());
  RETURN_IF_ERROR(CheckSize(node, s));
  const int64_t outer = NumElements(Shape(data.shape.begin(), data.shape.begin() + axis));
  const int64_t inner = NumElements(Shape(data.shape.begin() + axis + 1, data.shape.end()));
  const int64_t dim = data.shape[axis];
  std::vector<int64_t> idx;
  idx.reserve(static_cast<size_t>(NumElements(s)));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i : indices.ints) {
      if (i < -dim || i >= dim) {
        return Bad(node, "index " + std::to_string(i) + " out of range for axis of size " + std::to_string(dim));
      }
      if (i < 0) i += dim;
      for (int64_t k = 0; k < inner; ++k) idx.push_back((o * dim + i) * inner + k);
    }
  }
  return Take(data, s, idx);
}

StatusOr<Literal> FoldUnsqueeze(const NodeProto& node, const Literal& x, const Ints& axes_in) {
  const int64_t rank = static_cast<int64_t>(x.shape.size() + axes_in.size());
  std::vector<bool> is_new(static_cast<size_t>(rank), false);
  for (int64_t a : axes_in) {
    ASSIGN_OR_RETURN(int64_t n, NormAxis(node, a, rank));
    if (is_new[n]) return Bad(node, "repeated axis");
    is_new[n] = true;
  }
  Literal out = x;
  out.shape.clear();
  size_t j = 0;
  for (int64_t i = 0; i < rank; ++i) out.shape.push_back(is_new[i] ? 1 : x.shape[j++]);
  return out;
}

StatusOr<Literal> FoldSqueeze(const NodeProto& node, const Literal& x,
                              const std::optional<Ints>& axes) {
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<bool> drop(static_cast<size_t>(rank), false);
  if (axes) {
    for (int64_t a : *axes) {
      ASSIGN_OR_RETURN(int64_t n, NormAxis(node, a, rank));
      if (x.shape[n] != 1) return Bad(node, "cannot squeeze axis " + std::to_string(a) + " of " + Str(x.shape));
      drop[n] = true;
    }
  } else {
    for (int64_t i = 0; i < rank; ++i) drop[i] = x.shape[i] == 1;
  }
  Literal out = x;
  out.shape.clear();
  for (int64_t i = 0; i < rank; ++i) {
    if (!drop[i]) out.shape.push_back(x.shape[i]);
  }
  return out;
}

StatusOr<Literal> FoldConcat(const NodeProto& node, const std::vector<const Literal*>& in) {
  if (in.empty()) return Bad(node, "needs at least one input");
  const Literal& first = *in[0];
  const int64_t rank = static_cast<int64_t>(first.shape.size());
  if (rank == 0) return Bad(node, "inputs must have rank >= 1");
  ASSIGN_OR_RETURN(int64_t axis, AttrInt(node, "axis", 0));
  ASSIGN_OR_RETURN(axis, NormAxis(node, axis, rank));
  Shape s = first.shape;
  s[axis] = 0;
  for (const Literal* l : in) {
    if (!l || l->dtype != first.dtype || l->shape.size() != first.shape.size()) {
      return Bad(node, "inputs differ in type or rank");
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis && l->shape[d] != first.shape[d]) return Bad(node, "input shapes do not match");
    }
    s[axis] += l->shape[axis];
  }
  RETURN_IF_ERROR(CheckSize(node, s));
  const int64_t outer = NumElements(Shape(s.begin(), s.begin() + axis));
  const int64_t inner = NumElements(Shape(s.begin() + axis + 1, s.end()));
  Literal out;
  out.dtype = first.dtype;
  out.shape = s;
  for (int64_t o = 0; o < outer; ++o) {
    for (const Literal* l : in) {
      const int64_t chunk = l->shape[axis] * inner;
      if (out.IsReal()) {
        out.reals.insert(out.reals.end(), l->reals.begin() + o * chunk, l->reals.begin() + (o + 1) * chunk);
      } else {
        out.ints.insert(out.ints.end(), l->ints.begin() + o * chunk, l->ints.begin() + (o + 1) * chunk);
      }
    }
  }
  return out;
}

StatusOr<Literal> FoldSlice(const NodeProto& node, const Literal& x, const Ints& starts,
                            const Ints& ends, std::optional<Ints> axes, std::optional<Ints> steps) {
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (!axes) {
    axes = Ints(starts.size());
    for (size_t i = 0; i < starts.size(); ++i) (*axes)[i] = static_cast<int64_t>(i);
  }
  if (!steps) steps = Ints(starts.size(), 1);
  if (ends.size() != starts.size() || axes->size() != starts.size() || steps->size() != starts.size()) {
    return Bad(node, "starts, ends, axes and steps differ in length");
  }
  std::vector<int64_t> begin(rank, 0), step(rank, 1), len(x.shape.begin(), x.shape.end());
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    ASSIGN_OR_RETURN(int64_t a, NormAxis(node, (*axes)[i], rank));
    if (seen[a]) return Bad(node, "repeated axis");
    seen[a] = true;
    const int64_t dim = x.shape[a];
    const int64_t st = (*steps)[i];
    if (st == 0) return Bad(node, "step 0");
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s = s < -dim ? 0 : s + dim;
    if (e < 0) e = e < -dim ? -1 : e + dim;
    int64_t n;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      n = e > s ? (e - s + st - 1) / st : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      n = s > e ? (s - e + (-st) - 1) / (-st) : 0;
    }
    begin[a] = s;
    step[a] = st;
    len[a] = n;
  }
  Shape out_shape(len.begin(), len.end());
  RETURN_IF_ERROR(CheckSize(node, out_shape));
  const std::vector<int64_t> in_strides = Strides(x.shape);
  const int64_t n = NumElements(out_shape);
  std::vector<int64_t> idx(static_cast<size_t>(n));
  std::vector<int64_t> pos(rank, 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t flat = 0;
    for (int64_t d = 0; d < rank; ++d) flat += (begin[d] + pos[d] * step[d]) * in_strides[d];
    idx[k] = flat;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++pos[d] < out_shape[d]) break;
      pos[d] = 0;
    }
  }
  return Take(x, out_shape, idx);
}

StatusOr<Literal> FoldReshape(const NodeProto& node, const Literal& x, const Ints& shape_in,
                              bool allowzero) {
  Shape s(shape_in.size());
  int64_t infer_at = -1, known = 1;
  for (size_t i = 0; i < shape_in.size(); ++i) {
    int64_t d = shape_in[i];
    if (d == 0 && !allowzero) {
      if (i >= x.shape.size()) return Bad(node, "shape copies a dimension the input lacks");
      d = x.shape[i];
    }
    if (d == -1) {
      if (infer_at >= 0) return Bad(node, "shape has more than one -1");
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (d < 0) return Bad(node, "invalid dimension " + std::to_string(d));
    s[i] = d;
    if (d > 0 && known > kMaxElements / d) return Bad(node, "shape too large");
    known *= d;
  }
  const int64_t total = x.numel();
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0) {
      return Bad(node, "cannot reshape " + Str(x.shape) + " to " + Str(Shape(shape_in)));
    }
    s[infer_at] = total / known;
  }
  const auto n = CheckedNumElements(s);
  if (!n || *n != total) return Bad(node, "cannot reshape " + Str(x.shape) + " to " + Str(s));
  Literal out = x;
  out.shape = s;
  return out;
}

StatusOr<Literal> FoldExpand(const NodeProto& node, const Literal& x, const Ints& shape) {
  for (int64_t d : shape) {
    if (d < 0) return Bad(node, "negative dimension in shape");
  }
  ASSIGN_OR_RETURN(Shape s, Broadcast(node, x.shape, Shape(shape)));
  RETURN_IF_ERROR(CheckSize(node, s));
  return Take(x, s, BroadcastIndex(s, x.shape));
}

StatusOr<Literal> FoldTile(const NodeProto& node, const Literal& x, const Ints& repeats) {
  const size_t rank = x.shape.size();
  if (repeats.size() != rank) return Bad(node, "repeats must have one entry per axis");
  Shape s(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (repeats[d] < 0) return Bad(node, "negative repeat");
    if (repeats[d] > 0 && x.shape[d] > kMaxElements / repeats[d]) return Bad(node, "result too large");
    s[d] = x.shape[d] * repeats[d];
  }
  RETURN_IF_ERROR(CheckSize(node, s));
  const std::vector<int64_t> in_strides = Strides(x.shape);
  const int64_t n = NumElements(s);
  std::vector<int64_t> idx(static_cast<size_t>(n));
  std::vector<int64_t> pos(rank, 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t flat = 0;
    for (size_t d = 0; d < rank; ++d) flat += (pos[d] % x.shape[d]) * in_strides[d];
    idx[k] = flat;
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++pos[d] < s[d]) break;
      pos[d] = 0;
    }
  }
  return Take(x, s, idx);
}

StatusOr<Literal> FoldTranspose(const NodeProto& node, const Literal& x) {
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  ASSIGN_OR_RETURN(std::optional<Ints> perm_attr, AttrInts(node, "perm"));
  Ints perm(rank);
  for (int64_t i = 0; i < rank; ++i) perm[i] = rank - 1 - i;
  if (perm_attr) perm = *perm_attr;
  if (static_cast<int64_t>(perm.size()) != rank) return Bad(node, "perm has the wrong length");
  std::vector<bool> seen(rank, false);
  Shape s(rank);
  for (int64_t i = 0; i < rank; ++i) {
    if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]]) return Bad(node, "perm is not a permutation");
    seen[perm[i]] = true;
    s[i] = x.shape[perm[i]];
  }
  const std::vector<int64_t> in_strides = Strides(x.shape);
  const int64_t n = x.numel();
  std::vector<int64_t> idx(static_cast<size_t>(n));
  std::vector<int64_t> pos(rank, 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t flat = 0;
    for (int64_t d = 0; d < rank; ++d) flat += pos[d] * in_strides[perm[d]];
    idx[k] = flat;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++pos[d] < s[d]) break;
      pos[d] = 0;
    }
  }
  return Take(x, s, idx);
}

StatusOr<Literal> FoldRange(const NodeProto& node, const Literal& start, const Literal& limit,
                            const Literal& delta) {
  if (start.numel() != 1 || limit.numel() != 1 || delta.numel() != 1) {
    return Bad(node, "start, limit and delta must be scalars");
  }
  Literal out;
  out.dtype = start.dtype;
  if (start.IsReal()) {
    const double s = start.reals[0], l = limit.Real(0), d = delta.Real(0);
    if (d == 0 || !std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d)) {
      return Bad(node, "delta must be non-zero and values finite");
    }
    const double count = std::max(std::ceil((l - s) / d), 0.0);
    if (count > static_cast<double>(kMaxFoldElements)) return NotFoldable(node, "result too large to fold");
    out.shape = {static_cast<int64_t>(count)};
    for (int64_t i = 0; i < out.shape[0]; ++i) out.reals.push_back(RoundReal(out.dtype, s + i * d));
  } else {
    const int64_t s = start.ints[0], l = limit.Int(0), d = delta.Int(0);
    if (d == 0) return Bad(node, "delta must be non-zero");
    const double count = std::max(std::ceil((static_cast<double>(l) - s) / static_cast<double>(d)), 0.0);
    if (count > static_cast<double>(kMaxFoldElements)) return NotFoldable(node, "result too large to fold");
    out.shape = {static_cast<int64_t>(count)};
    for (int64_t i = 0; i < out.shape[0]; ++i) out.ints.push_back(WrapAdd(s, WrapMul(i, d)));
  }
  return out;
}

StatusOr<Literal> FoldConstantOfShape(const NodeProto& node, const Literal& shape) {
  Shape s = shape.AsInts();
  for (int64_t d : s) {
    if (d < 0) return Bad(node, "negative dimension in shape");
  }
  RETURN_IF_ERROR(CheckSize(node, s));
  Literal value;
  value.dtype = TensorProto::FLOAT;
  value.reals = {0.0};
  if (const onnx::AttributeProto* a = FindAttr(node, "value")) {
    ASSIGN_OR_RETURN(value, LiteralFromTensor(a->t(), Describe(node) + " attribute 'value'"));
    if (value.numel() != 1) return Bad(node, "attribute 'value' must hold one element");
  }
  Literal out = Make(value.dtype, s);
  if (out.IsReal()) std::fill(out.reals.begin(), out.reals.end(), value.reals[0]);
  else std::fill(out.ints.begin(), out.ints.end(), value.ints[0]);
  return out;
}

StatusOr<Literal> FoldReduce(const NodeProto& node, const Literal& x,
                             const std::optional<Ints>& axes_in) {
  const std::string& op = node.op_type();
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  ASSIGN_OR_RETURN(int64_t keepdims, AttrInt(node, "keepdims", 1));
  ASSIGN_OR_RETURN(int64_t noop, AttrInt(node, "noop_with_empty_axes", 0));
  std::vector<bool> reduce(rank, false);
  if (!axes_in || axes_in->empty()) {
    if (noop) return x;
    std::fill(reduce.begin(), reduce.end(), true);
  } else {
    for (int64_t a : *axes_in) {
      ASSIGN_OR_RETURN(int64_t n, NormAxis(node, a, rank));
      reduce[n] = true;
    }
  }
  Shape s, kept;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduce[d]) s.push_back(x.shape[d]);
    else if (keepdims) s.push_back(1);
    kept.push_back(reduce[d] ? 1 : x.shape[d]);
  }
  if (x.numel() == 0) return NotFoldable(node, "reduction over an empty tensor");
  Literal out = Make(x.dtype, s);
  std::vector<bool> first(static_cast<size_t>(NumElements(s)), true);
  const std::vector<int64_t> out_strides = Strides(kept);
  std::vector<int64_t> pos(rank, 0);
  for (int64_t k = 0; k < x.numel(); ++k) {
    int64_t o = 0;
    for (int64_t d = 0; d < rank; ++d) o += (reduce[d] ? 0 : pos[d]) * out_strides[d];
    const double v = x.Real(k);
    if (out.IsReal()) {
      double& acc = out.reals[o];
      if (first[o]) acc = v;
      else if (op == "ReduceSum") acc += v;
      else if (op == "ReduceProd") acc *= v;
      else if (op == "ReduceMax") acc = std::max(acc, v);
      else acc = std::min(acc, v);
    } else {
      int64_t& acc = out.ints[o];
      const int64_t iv = x.ints[k];
      if (first[o]) acc = iv;
      else if (op == "ReduceSum") acc = WrapAdd(acc, iv);
      else if (op == "ReduceProd") acc = WrapMul(acc, iv);
      else if (op == "ReduceMax") acc = std::max(acc, iv);
      else acc = std::min(acc, iv);
    }
    first[o] = false;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++pos[d] < x.shape[d]) break;
      pos[d] = 0;
    }
  }
  return out;
}

StatusOr<std::vector<Literal>> FoldSplit(const NodeProto& node, const Literal& x,
                                         const std::optional<Ints>& split_in) {
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0) return Bad(node, "input must have rank >= 1");
  ASSIGN_OR_RETURN(int64_t axis, AttrInt(node, "axis", 0));
  ASSIGN_OR_RETURN(axis, NormAxis(node, axis, rank));
  const int64_t outputs = node.output_size();
  const int64_t dim = x.shape[axis];
  Ints split;
  if (split_in) {
    split = *split_in;
  } else {
    if (outputs <= 0) return Bad(node, "has no outputs");
    const int64_t chunk = (dim + outputs - 1) / outputs;
    for (int64_t i = 0, left = dim; i < outputs; ++i, left -= chunk) split.push_back(std::min(chunk, left));
  }
  if (static_cast<int64_t>(split.size()) != outputs) return Bad(node, "split does not match the outputs");
  std::vector<Literal> out;
  int64_t at = 0;
  for (int64_t len : split) {
    if (len < 0 || at + len > dim) return Bad(node, "split sizes exceed the axis");
    ASSIGN_OR_RETURN(Literal part, FoldSlice(node, x, {at}, {at + len}, Ints{axis}, std::nullopt));
    out.push_back(std::move(part));
    at += len;
  }
  if (at != dim) return Bad(node, "split sizes do not sum to the axis");
  return out;
}

StatusOr<Literal> FoldScatterND(const NodeProto& node, const Literal& data, const Literal& indices,
                                const Literal& updates) {
  ASSIGN_OR_RETURN(std::string reduction, AttrString(node, "reduction", "none"));
  if (reduction != "none") return NotFoldable(node, "reduction " + reduction);
  if (indices.IsReal() || indices.shape.empty()) return Bad(node, "indices must be integers of rank >= 1");
  if (data.dtype != updates.dtype) return Bad(node, "data and updates types differ");
  const size_t k = static_cast<size_t>(indices.shape.back());
  if (k > data.shape.size()) return Bad(node, "index tuples are longer than the data rank");
  Shape want(indices.shape.begin(), indices.shape.end() - 1);
  want.insert(want.end(), data.shape.begin() + k, data.shape.end());
  if (updates.shape != want) {
    return Bad(node, "updates " + Str(updates.shape) + " should be " + Str(want));
  }
  const std::vector<int64_t> strides = Strides(data.shape);
  const int64_t slice = NumElements(Shape(data.shape.begin() + k, data.shape.end()));
  const int64_t tuples = k == 0 ? indices.numel() : indices.numel() / static_cast<int64_t>(k);
  Literal out = data;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = 0;
    for (size_t j = 0; j < k; ++j) {
      int64_t i = indices.ints[t * k + j];
      const int64_t dim = data.shape[j];
      if (i < -dim || i >= dim) return Bad(node, "index " + std::to_string(i) + " out of range");
      if (i < 0) i += dim;
      offset += i * strides[j];
    }
    for (int64_t e = 0; e < slice; ++e) {
      if (out.IsReal()) out.reals[offset + e] = updates.reals[t * slice + e];
      else out.ints[offset + e] = updates.ints[t * slice + e];
    }
  }
  return out;
}

const Literal& Need(const std::vector<const Literal*>& in, size_t i) { return *in[i]; }

}  // namespace

bool IsFoldable(const std::string& op) {
  static const char* const kOps[] = {
      "Identity", "Cast", "Neg", "Abs", "Sqrt", "Floor", "Ceil", "Reciprocal", "Sign", "Not",
      "Add", "Sub", "Mul", "Div", "Mod", "Pow", "Min", "Max", "Equal", "Less", "Greater",
      "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Where", "Shape", "Size", "Gather",
      "Unsqueeze", "Squeeze", "Concat", "Slice", "Reshape", "Expand", "Tile", "Transpose",
      "Flatten", "Range", "ConstantOfShape", "ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin",
      "Split", "CastLike", "ScatterND"};
  for (const char* o : kOps) {
    if (op == o) return true;
  }
  return false;
}

StatusOr<std::vector<Literal>> FoldNode(const NodeProto& node,
                                        const std::vector<const Literal*>& in, int opset) {
  const std::string& op = node.op_type();
  if (!node.domain().empty() && node.domain() != "ai.onnx") return NotFoldable(node, "custom domain");
  // Minimum number of present inputs per op; optional trailing inputs may be null.
  static const std::map<std::string, int> kMinInputs = {
      {"Where", 3}, {"ScatterND", 3}, {"Gather", 2}, {"Expand", 2}, {"Tile", 2}, {"Range", 3}, {"CastLike", 2}};
  static const std::set<std::string> kBinary = {
      "Add", "Sub", "Mul", "Div", "Mod", "Pow", "Equal", "Less", "Greater", "LessOrEqual",
      "GreaterOrEqual", "And", "Or", "Xor"};
  const bool binary = kBinary.count(op) > 0;
  int min_in = binary ? 2 : 1;
  if (auto it = kMinInputs.find(op); it != kMinInputs.end()) min_in = it->second;
  if ((op == "Reshape" && opset >= 5) || (op == "Unsqueeze" && opset >= 13) ||
      (op == "Slice" && opset >= 10)) {
    min_in = op == "Slice" ? 3 : 2;
  }
  if (static_cast<int>(in.size()) < min_in) return Bad(node, "has too few inputs");
  for (int i = 0; i < min_in; ++i) {
    if (!in[i]) return Bad(node, "input " + std::to_string(i) + " is required");
  }
  auto one = [](StatusOr<Literal> r) -> StatusOr<std::vector<Literal>> {
    if (!r.ok()) return r.status();
    std::vector<Literal> v;
    v.push_back(std::move(r).value());
    return v;
  };
  const Literal& x = Need(in, 0);

  if (op == "Identity") return one(x);
  if (op == "Cast") {
    ASSIGN_OR_RETURN(int64_t to, AttrInt(node, "to", 0));
    return one(FoldCast(node, x, to));
  }
  if (op == "CastLike") return one(FoldCast(node, x, Need(in, 1).dtype));
  if (op == "Neg" || op == "Abs" || op == "Sqrt" || op == "Floor" || op == "Ceil" ||
      op == "Reciprocal" || op == "Sign" || op == "Not") {
    return one(FoldUnary(node, x));
  }
  if (op == "Min" || op == "Max") {
    Literal acc = x;
    for (size_t i = 1; i < in.size(); ++i) {
      if (!in[i]) return Bad(node, "missing input");
      ASSIGN_OR_RETURN(acc, FoldBinary(node, acc, *in[i]));
    }
    return one(acc);
  }
  if (binary) return one(FoldBinary(node, x, Need(in, 1)));
  if (op == "Where") return one(FoldWhere(node, x, Need(in, 1), Need(in, 2)));
  if (op == "ScatterND") return one(FoldScatterND(node, x, Need(in, 1), Need(in, 2)));
  if (op == "Shape") {
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    ASSIGN_OR_RETURN(int64_t start, AttrInt(node, "start", 0));
    ASSIGN_OR_RETURN(int64_t end, AttrInt(node, "end", rank));
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, start, rank);
    return one(IntVector(std::vector<int64_t>(x.shape.begin() + start, x.shape.begin() + end)));
  }
  if (op == "Size") {
    Literal out = Make(TensorProto::INT64, {});
    out.ints = {x.numel()};
    return one(out);
  }
  if (op == "Gather") return one(FoldGather(node, x, Need(in, 1)));
  if (op == "Unsqueeze") {
    ASSIGN_OR_RETURN(std::optional<Ints> axes, AxesOf(node, in, 1));
    if (!axes) return Bad(node, "needs axes");
    return one(FoldUnsqueeze(node, x, *axes));
  }
  if (op == "Squeeze") {
    ASSIGN_OR_RETURN(std::optional<Ints> axes, AxesOf(node, in, 1));
    return one(FoldSqueeze(node, x, axes));
  }
  if (op == "Concat") return one(FoldConcat(node, in));
  if (op == "Slice") {
    if (opset < 10) {
      ASSIGN_OR_RETURN(std::optional<Ints> starts, AttrInts(node, "starts"));
      ASSIGN_OR_RETURN(std::optional<Ints> ends, AttrInts(node, "ends"));
      ASSIGN_OR_RETURN(std::optional<Ints> axes, AttrInts(node, "axes"));
      if (!starts || !ends) return Bad(node, "needs starts and ends");
      return one(FoldSlice(node, x, *starts, *ends, axes, std::nullopt));
    }
    std::optional<Ints> axes, steps;
    if (in.size() > 3 && in[3]) axes = in[3]->AsInts();
    if (in.size() > 4 && in[4]) steps = in[4]->AsInts();
    return one(FoldSlice(node, x, Need(in, 1).AsInts(), Need(in, 2).AsInts(), axes, steps));
  }
  if (op == "Reshape") {
    ASSIGN_OR_RETURN(int64_t allowzero, AttrInt(node, "allowzero", 0));
    Ints shape;
    if (opset < 5) {
      ASSIGN_OR_RETURN(std::optional<Ints> s, AttrInts(node, "shape"));
      if (!s) return Bad(node, "needs shape");
      shape = *s;
    } else {
      shape = Need(in, 1).AsInts();
    }
    return one(FoldReshape(node, x, shape, allowzero != 0));
  }
  if (op == "Flatten") {
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    ASSIGN_OR_RETURN(int64_t axis, AttrInt(node, "axis", 1));
    if (axis < -rank || axis > rank) return Bad(node, "axis out of range");
    if (axis < 0) axis += rank;
    int64_t a = 1, b = 1;
    for (int64_t i = 0; i < rank; ++i) (i < axis ? a : b) *= x.shape[i];
    Literal out = x;
    out.shape = {a, b};
    return one(out);
  }
  if (op == "Expand") return one(FoldExpand(node, x, Need(in, 1).AsInts()));
  if (op == "Tile") return one(FoldTile(node, x, Need(in, 1).AsInts()));
  if (op == "Transpose") return one(FoldTranspose(node, x));
  if (op == "Range") return one(FoldRange(node, x, Need(in, 1), Need(in, 2)));
  if (op == "ConstantOfShape") return one(FoldConstantOfShape(node, x));
  if (op == "ReduceSum" || op == "ReduceProd" || op == "ReduceMax" || op == "ReduceMin") {
    std::optional<Ints> axes;
    if (op == "ReduceSum" && opset >= 13) {
      if (in.size() > 1 && in[1]) axes = in[1]->AsInts();
    } else {
      ASSIGN_OR_RETURN(axes, AttrInts(node, "axes"));
    }
    return one(FoldReduce(node, x, axes));
  }
  if (op == "Split") {
    std::optional<Ints> split;
    if (opset >= 13) {
      if (in.size() > 1 && in[1]) split = in[1]->AsInts();
    } else {
      ASSIGN_OR_RETURN(split, AttrInts(node, "split"));
    }
    return FoldSplit(node, x, split);
  }
  return NotFoldable(node, "no constant evaluation for this op");
}

}  // namespace rewire::onnx_io

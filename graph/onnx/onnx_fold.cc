// Constant evaluation of the shape arithmetic that exporters emit (Shape -> Gather -> Unsqueeze
// -> Concat -> Reshape chains, Range/Where/Expand on small tensors), on host values, without
// LibTorch. Semantics follow ONNX; an op or case not listed here is left in the graph.

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "graph/onnx/onnx_fold_internal.h"

namespace rewire::onnx_io {
namespace fold {

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
  if (out.IsReal())
    out.reals.assign(static_cast<size_t>(n), 0.0);
  else
    out.ints.assign(static_cast<size_t>(n), 0);
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
    case TensorProto::BOOL:
      return v != 0;
    case TensorProto::INT8:
      return static_cast<int8_t>(v);
    case TensorProto::UINT8:
      return static_cast<uint8_t>(v);
    case TensorProto::INT16:
      return static_cast<int16_t>(v);
    case TensorProto::UINT16:
      return static_cast<uint16_t>(v);
    case TensorProto::INT32:
      return static_cast<int32_t>(v);
    case TensorProto::UINT32:
      return static_cast<uint32_t>(v);
    default:
      return v;
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
  std::optional<Shape> out = BroadcastShapes(a, b);
  if (!out) return Bad(node, "shapes " + Str(a) + " and " + Str(b) + " do not broadcast");
  return *out;
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
    return Bad(node,
               "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

/// Axes from the attribute (older opsets) or from input `index` (newer ones); nullopt if absent.
StatusOr<std::optional<Ints>> AxesOf(const NodeProto& node, const std::vector<const Literal*>& in,
                                     size_t index) {
  if (in.size() > index && in[index]) return std::optional<Ints>(in[index]->AsInts());
  return AttrInts(node, "axes");
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

}  // namespace fold

namespace {

using namespace fold;  // NOLINT: the folder's own helpers

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
  REWIRE_ASSIGN_OR_RETURN(Shape shape, Broadcast(node, a.shape, b.shape));
  REWIRE_RETURN_IF_ERROR(CheckSize(node, shape));
  const std::vector<int64_t> ia = BroadcastIndex(shape, a.shape);
  const std::vector<int64_t> ib = BroadcastIndex(shape, b.shape);
  Literal out = Make(kind == ResultKind::kBool ? TensorProto::BOOL : a.dtype, shape);
  for (size_t k = 0; k < ia.size(); ++k) {
    if (a.IsReal()) {
      if (!fr) return NotFoldable(node, "not defined on floating-point inputs");
      const double r = fr(a.reals[ia[k]], b.reals[ib[k]]);
      if (out.IsReal())
        out.reals[k] = RoundReal(out.dtype, r);
      else
        out.ints[k] = r != 0;
    } else {
      if (!fi) return NotFoldable(node, "not defined on integer inputs");
      StatusOr<int64_t> ri = fi(a.ints[ia[k]], b.ints[ib[k]]);
      if (!ri.ok()) return Bad(node, ri.status().message());
      const int64_t r = *ri;
      out.ints[k] = kind == ResultKind::kBool ? (r != 0) : WrapInt(out.dtype, r);
    }
  }
  return out;
}

struct BinaryRule {
  BinaryReal real;    // null: not defined on floating-point inputs
  BinaryInt integer;  // null: not defined on integer inputs
  ResultKind kind;
};

template <typename Cmp>
BinaryRule Comparison(Cmp cmp) {
  return {[cmp](double x, double y) { return double(cmp(x, y)); },
          [cmp](int64_t x, int64_t y) -> StatusOr<int64_t> { return int64_t(cmp(x, y)); },
          ResultKind::kBool};
}

/// Integer modulo; `python` = the sign follows the divisor (ONNX Mod with fmod=0).
StatusOr<int64_t> IntMod(int64_t x, int64_t y, bool python) {
  if (y == 0) return InvalidArgument("integer modulo by zero");
  if (y == -1) return 0;
  int64_t r = x % y;
  if (python && r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}

double RealMod(double x, double y, bool python) {
  double r = std::fmod(x, y);
  if (python && r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}

const std::map<std::string, BinaryRule>& BinaryRules() {
  using R = StatusOr<int64_t>;
  static const std::map<std::string, BinaryRule> rules = {
      {"Add",
       {std::plus<double>(), [](int64_t x, int64_t y) -> R { return WrapAdd(x, y); },
        ResultKind::kSame}},
      {"Sub",
       {std::minus<double>(), [](int64_t x, int64_t y) -> R { return WrapSub(x, y); },
        ResultKind::kSame}},
      {"Mul",
       {std::multiplies<double>(), [](int64_t x, int64_t y) -> R { return WrapMul(x, y); },
        ResultKind::kSame}},
      {"Div",
       {std::divides<double>(),
        [](int64_t x, int64_t y) -> R {
          if (y == 0) return InvalidArgument("integer division by zero");
          return y == -1 ? WrapSub(0, x) : x / y;
        },
        ResultKind::kSame}},
      {"Mod",
       {[](double x, double y) { return RealMod(x, y, true); },
        [](int64_t x, int64_t y) { return IntMod(x, y, true); }, ResultKind::kSame}},
      {"Mod/fmod",
       {[](double x, double y) { return RealMod(x, y, false); },
        [](int64_t x, int64_t y) { return IntMod(x, y, false); }, ResultKind::kSame}},
      {"Pow",
       {[](double x, double y) { return std::pow(x, y); },
        [](int64_t x, int64_t y) -> R { return RealToInt(std::pow(double(x), double(y))); },
        ResultKind::kSame}},
      {"Min",
       {[](double x, double y) { return std::min(x, y); },
        [](int64_t x, int64_t y) -> R { return std::min(x, y); }, ResultKind::kSame}},
      {"Max",
       {[](double x, double y) { return std::max(x, y); },
        [](int64_t x, int64_t y) -> R { return std::max(x, y); }, ResultKind::kSame}},
      {"Equal", Comparison(std::equal_to<>())},
      {"Less", Comparison(std::less<>())},
      {"Greater", Comparison(std::greater<>())},
      {"LessOrEqual", Comparison(std::less_equal<>())},
      {"GreaterOrEqual", Comparison(std::greater_equal<>())},
      {"And", {nullptr, [](int64_t x, int64_t y) -> R { return x && y; }, ResultKind::kBool}},
      {"Or", {nullptr, [](int64_t x, int64_t y) -> R { return x || y; }, ResultKind::kBool}},
      {"Xor",
       {nullptr, [](int64_t x, int64_t y) -> R { return (x != 0) != (y != 0); },
        ResultKind::kBool}},
  };
  return rules;
}

StatusOr<Literal> FoldBinary(const NodeProto& node, const Literal& a, const Literal& b) {
  std::string op = node.op_type();
  if (op == "Mod") {
    REWIRE_ASSIGN_OR_RETURN(int64_t fmod, AttrInt(node, "fmod", 0));
    if (fmod) op = "Mod/fmod";
  }
  auto it = BinaryRules().find(op);
  if (it == BinaryRules().end()) return NotFoldable(node, "unknown binary op");
  const BinaryRule& rule = it->second;
  if ((op == "And" || op == "Or" || op == "Xor") && a.dtype != TensorProto::BOOL) {
    return Bad(node, "inputs must be bool");
  }
  return Binary(node, a, b, rule.real, rule.integer, rule.kind);
}

StatusOr<Literal> FoldUnary(const NodeProto& node, const Literal& x) {
  static const std::map<std::string, double (*)(double)> real_ops = {
      {"Neg", [](double v) { return -v; }},
      {"Abs", [](double v) { return std::fabs(v); }},
      {"Sqrt", [](double v) { return std::sqrt(v); }},
      {"Floor", [](double v) { return std::floor(v); }},
      {"Ceil", [](double v) { return std::ceil(v); }},
      {"Reciprocal", [](double v) { return 1.0 / v; }},
      {"Sign", [](double v) { return double((v > 0) - (v < 0)); }}};
  const std::string& op = node.op_type();
  Literal out = x;
  if (op == "Not") {
    if (x.dtype != TensorProto::BOOL) return Bad(node, "input must be bool");
    for (int64_t& v : out.ints) v = !v;
    return out;
  }
  if (x.IsReal()) {
    auto it = real_ops.find(op);
    if (it == real_ops.end()) return NotFoldable(node, "unknown unary op");
    for (double& v : out.reals) v = RoundReal(out.dtype, it->second(v));
    return out;
  }
  for (int64_t& v : out.ints) {
    if (op == "Neg" || (op == "Abs" && v < 0))
      v = WrapInt(out.dtype, WrapSub(0, v));
    else if (op == "Sign")
      v = (v > 0) - (v < 0);
    else if (op != "Abs" && op != "Floor" && op != "Ceil")
      return NotFoldable(node, op + " on integers");
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
  REWIRE_ASSIGN_OR_RETURN(Shape s, Broadcast(node, c.shape, x.shape));
  REWIRE_ASSIGN_OR_RETURN(s, Broadcast(node, s, y.shape));
  REWIRE_RETURN_IF_ERROR(CheckSize(node, s));
  const auto ic = BroadcastIndex(s, c.shape), ix = BroadcastIndex(s, x.shape),
             iy = BroadcastIndex(s, y.shape);
  Literal out = Make(x.dtype, s);
  for (size_t k = 0; k < ic.size(); ++k) {
    const bool cond = c.Real(ic[k]) != 0;
    if (out.IsReal())
      out.reals[k] = cond ? x.reals[ix[k]] : y.reals[iy[k]];
    else
      out.ints[k] = cond ? x.ints[ix[k]] : y.ints[iy[k]];
  }
  return out;
}

const Literal& Need(const std::vector<const Literal*>& in, size_t i) { return *in[i]; }

}  // namespace

bool IsFoldable(const std::string& op) {
  static const char* const kOps[] = {"Identity",
                                     "Cast",
                                     "Neg",
                                     "Abs",
                                     "Sqrt",
                                     "Floor",
                                     "Ceil",
                                     "Reciprocal",
                                     "Sign",
                                     "Not",
                                     "Add",
                                     "Sub",
                                     "Mul",
                                     "Div",
                                     "Mod",
                                     "Pow",
                                     "Min",
                                     "Max",
                                     "Equal",
                                     "Less",
                                     "Greater",
                                     "LessOrEqual",
                                     "GreaterOrEqual",
                                     "And",
                                     "Or",
                                     "Xor",
                                     "Where",
                                     "Shape",
                                     "Size",
                                     "Gather",
                                     "Unsqueeze",
                                     "Squeeze",
                                     "Concat",
                                     "Slice",
                                     "Reshape",
                                     "Expand",
                                     "Tile",
                                     "Transpose",
                                     "Flatten",
                                     "Range",
                                     "ConstantOfShape",
                                     "ReduceSum",
                                     "ReduceProd",
                                     "ReduceMax",
                                     "ReduceMin",
                                     "Split",
                                     "CastLike",
                                     "ScatterND"};
  for (const char* o : kOps) {
    if (op == o) return true;
  }
  return false;
}

namespace {

bool IsFoldBinary(const std::string& op) {
  static const std::set<std::string> kBinary = {"Add",
                                                "Sub",
                                                "Mul",
                                                "Div",
                                                "Mod",
                                                "Pow",
                                                "Equal",
                                                "Less",
                                                "Greater",
                                                "LessOrEqual",
                                                "GreaterOrEqual",
                                                "And",
                                                "Or",
                                                "Xor"};
  return kBinary.count(op) > 0;
}

/// Minimum number of present inputs of `node` at `opset`; optional trailing inputs may be null.
int MinFoldInputs(const std::string& op, int opset) {
  static const std::map<std::string, int> kMinInputs = {
      {"Where", 3}, {"ScatterND", 3}, {"Gather", 2},  {"Expand", 2},
      {"Tile", 2},  {"Range", 3},     {"CastLike", 2}};
  int min_in = IsFoldBinary(op) ? 2 : 1;
  if (auto it = kMinInputs.find(op); it != kMinInputs.end()) min_in = it->second;
  if ((op == "Reshape" && opset >= 5) || (op == "Unsqueeze" && opset >= 13) ||
      (op == "Slice" && opset >= 10)) {
    min_in = op == "Slice" ? 3 : 2;
  }
  return min_in;
}

StatusOr<Literal> FoldShapeOf(const NodeProto& node, const Literal& x) {
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  REWIRE_ASSIGN_OR_RETURN(int64_t start, AttrInt(node, "start", 0));
  REWIRE_ASSIGN_OR_RETURN(int64_t end, AttrInt(node, "end", rank));
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  return IntVector(std::vector<int64_t>(x.shape.begin() + start, x.shape.begin() + end));
}

/// Slice with starts/ends/axes as attributes (before opset 10) or inputs.
StatusOr<Literal> FoldSliceNode(const NodeProto& node, const std::vector<const Literal*>& in,
                                int opset) {
  const Literal& x = Need(in, 0);
  if (opset < 10) {
    REWIRE_ASSIGN_OR_RETURN(std::optional<Ints> starts, AttrInts(node, "starts"));
    REWIRE_ASSIGN_OR_RETURN(std::optional<Ints> ends, AttrInts(node, "ends"));
    REWIRE_ASSIGN_OR_RETURN(std::optional<Ints> axes, AttrInts(node, "axes"));
    if (!starts || !ends) return Bad(node, "needs starts and ends");
    return FoldSlice(node, x, *starts, *ends, axes, std::nullopt);
  }
  std::optional<Ints> axes, steps;
  if (in.size() > 3 && in[3]) axes = in[3]->AsInts();
  if (in.size() > 4 && in[4]) steps = in[4]->AsInts();
  return FoldSlice(node, x, Need(in, 1).AsInts(), Need(in, 2).AsInts(), axes, steps);
}

/// Reshape with the shape as an attribute (before opset 5) or an input.
StatusOr<Literal> FoldReshapeNode(const NodeProto& node, const std::vector<const Literal*>& in,
                                  int opset) {
  REWIRE_ASSIGN_OR_RETURN(int64_t allowzero, AttrInt(node, "allowzero", 0));
  Ints shape;
  if (opset < 5) {
    REWIRE_ASSIGN_OR_RETURN(std::optional<Ints> s, AttrInts(node, "shape"));
    if (!s) return Bad(node, "needs shape");
    shape = *s;
  } else {
    shape = Need(in, 1).AsInts();
  }
  return FoldReshape(node, Need(in, 0), shape, allowzero != 0);
}

StatusOr<Literal> FoldFlatten(const NodeProto& node, const Literal& x) {
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  REWIRE_ASSIGN_OR_RETURN(int64_t axis, AttrInt(node, "axis", 1));
  if (axis < -rank || axis > rank) return Bad(node, "axis out of range");
  if (axis < 0) axis += rank;
  int64_t a = 1, b = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? a : b) *= x.shape[i];
  Literal out = x;
  out.shape = {a, b};
  return out;
}

/// ReduceSum (axes an input from opset 13), ReduceProd, ReduceMax, ReduceMin.
StatusOr<Literal> FoldReduceNode(const NodeProto& node, const std::vector<const Literal*>& in,
                                 int opset) {
  std::optional<Ints> axes;
  if (node.op_type() == "ReduceSum" && opset >= 13) {
    if (in.size() > 1 && in[1]) axes = in[1]->AsInts();
  } else {
    REWIRE_ASSIGN_OR_RETURN(axes, AttrInts(node, "axes"));
  }
  return FoldReduce(node, Need(in, 0), axes);
}

/// Casts and element-wise ops, then data movement and shape ops: every single-output fold.
StatusOr<Literal> FoldValue(const NodeProto& node, const std::vector<const Literal*>& in,
                            int opset) {
  const std::string& op = node.op_type();
  const Literal& x = Need(in, 0);
  if (op == "Identity") return x;
  if (op == "Cast") {
    REWIRE_ASSIGN_OR_RETURN(int64_t to, AttrInt(node, "to", 0));
    return FoldCast(node, x, to);
  }
  if (op == "CastLike") return FoldCast(node, x, Need(in, 1).dtype);
  if (op == "Neg" || op == "Abs" || op == "Sqrt" || op == "Floor" || op == "Ceil" ||
      op == "Reciprocal" || op == "Sign" || op == "Not") {
    return FoldUnary(node, x);
  }
  if (op == "Min" || op == "Max") {
    Literal acc = x;
    for (size_t i = 1; i < in.size(); ++i) {
      if (!in[i]) return Bad(node, "missing input");
      REWIRE_ASSIGN_OR_RETURN(acc, FoldBinary(node, acc, *in[i]));
    }
    return acc;
  }
  if (IsFoldBinary(op)) return FoldBinary(node, x, Need(in, 1));
  if (op == "Where") return FoldWhere(node, x, Need(in, 1), Need(in, 2));
  if (op == "ScatterND") return FoldScatterND(node, x, Need(in, 1), Need(in, 2));
  if (op == "Shape") return FoldShapeOf(node, x);
  if (op == "Size") {
    Literal out = Make(TensorProto::INT64, {});
    out.ints = {x.numel()};
    return out;
  }
  if (op == "Gather") return FoldGather(node, x, Need(in, 1));
  if (op == "Unsqueeze") {
    REWIRE_ASSIGN_OR_RETURN(std::optional<Ints> axes, AxesOf(node, in, 1));
    if (!axes) return Bad(node, "needs axes");
    return FoldUnsqueeze(node, x, *axes);
  }
  if (op == "Squeeze") {
    REWIRE_ASSIGN_OR_RETURN(std::optional<Ints> axes, AxesOf(node, in, 1));
    return FoldSqueeze(node, x, axes);
  }
  if (op == "Concat") return FoldConcat(node, in);
  if (op == "Slice") return FoldSliceNode(node, in, opset);
  if (op == "Reshape") return FoldReshapeNode(node, in, opset);
  if (op == "Flatten") return FoldFlatten(node, x);
  if (op == "Expand") return FoldExpand(node, x, Need(in, 1).AsInts());
  if (op == "Tile") return FoldTile(node, x, Need(in, 1).AsInts());
  if (op == "Transpose") return FoldTranspose(node, x);
  if (op == "Range") return FoldRange(node, x, Need(in, 1), Need(in, 2));
  if (op == "ConstantOfShape") return FoldConstantOfShape(node, x);
  if (op == "ReduceSum" || op == "ReduceProd" || op == "ReduceMax" || op == "ReduceMin") {
    return FoldReduceNode(node, in, opset);
  }
  return NotFoldable(node, "no constant evaluation for this op");
}

}  // namespace

StatusOr<std::vector<Literal>> FoldNode(const NodeProto& node,
                                        const std::vector<const Literal*>& in, int opset) {
  const std::string& op = node.op_type();
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return NotFoldable(node, "custom domain");
  const int min_in = MinFoldInputs(op, opset);
  if (static_cast<int>(in.size()) < min_in) return Bad(node, "has too few inputs");
  for (int i = 0; i < min_in; ++i) {
    if (!in[i]) return Bad(node, "input " + std::to_string(i) + " is required");
  }
  if (op == "Split") {
    std::optional<Ints> split;
    if (opset >= 13) {
      if (in.size() > 1 && in[1]) split = in[1]->AsInts();
    } else {
      REWIRE_ASSIGN_OR_RETURN(split, AttrInts(node, "split"));
    }
    return FoldSplit(node, Need(in, 0), split);
  }
  REWIRE_ASSIGN_OR_RETURN(Literal value, FoldValue(node, in, opset));
  std::vector<Literal> out;
  out.push_back(std::move(value));
  return out;
}

}  // namespace rewire::onnx_io

// Opaque nodes: ONNX ops outside rewire's vocabulary, executed by their ONNX type (opset 17
// semantics) so that imported models run end to end. Ops whose operands later opsets moved from
// attributes to inputs (Reshape, Slice, Pad, Squeeze, Unsqueeze, Split, Clip, Reduce*) accept
// both forms. An ONNX op with a rewire twin and no entry here runs the twin's kernel.
// This file: the dispatch, the shared helpers, the element-wise families and the reductions and
// normalisations; the other families are in executor_opaque_layout.cc.

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/executor_opaque.h"

namespace rewire::exec {
namespace opaque {

OpResult One(at::Tensor t) { return Tensors{std::move(t)}; }

/// Input `i`, or an undefined tensor when the node has fewer inputs.
at::Tensor Arg(const Tensors& in, size_t i) { return i < in.size() ? in[i] : at::Tensor(); }

void NeedInputs(const Tensors& in, size_t lo, size_t hi) {
  TORCH_CHECK(in.size() >= lo && in.size() <= hi, "expected ", lo, lo == hi ? "" : " to ",
              lo == hi ? std::string() : std::to_string(hi), " inputs, got ", in.size());
}

/// Ints from input `i` when present, else from attribute `name`.
std::vector<int64_t> IntsArg(const Node& node, const Tensors& in, size_t i, const char* name) {
  if (i < in.size()) return ReadInts(in[i]);
  return node.attrs.GetInts(name);
}

at::Tensor AlongAxis(const at::Tensor& t, int64_t axis, int64_t rank) {
  std::vector<int64_t> shape(rank, 1);
  shape[axis] = -1;
  return t.reshape(shape);
}

namespace {

at::Tensor Unary(const Tensors& in, at::Tensor (*f)(const at::Tensor&)) {
  NeedInputs(in, 1, 1);
  return f(in[0]);
}

Handler UnaryOp(at::Tensor (*f)(const at::Tensor&)) {
  return [f](const Node&, const Tensors& in) { return One(Unary(in, f)); };
}

Handler BinaryOp(at::Tensor (*f)(const at::Tensor&, const at::Tensor&)) {
  return [f](const Node&, const Tensors& in) {
    NeedInputs(in, 2, 2);
    return One(f(in[0], in[1]));
  };
}

/// Folds a variadic element-wise op (Min, Max, Sum, Mean) with broadcasting.
at::Tensor Fold(const Tensors& in, at::Tensor (*f)(const at::Tensor&, const at::Tensor&)) {
  TORCH_CHECK(!in.empty(), "needs at least one input");
  at::Tensor y = in[0];
  for (size_t i = 1; i < in.size(); ++i) y = f(y, in[i]);
  return y;
}

at::Tensor Add2(const at::Tensor& a, const at::Tensor& b) { return at::add(a, b); }

OpResult Lrn(const Node& node, const Tensors& in) {
  NeedInputs(in, 1, 1);
  const at::Tensor& x = in[0];
  const int64_t size = node.attrs.GetInt("size", 1);
  TORCH_CHECK(size >= 1, "LRN size must be positive");
  const double alpha = node.attrs.GetFloat("alpha", 1e-4f),
               beta = node.attrs.GetFloat("beta", 0.75f);
  const double bias = node.attrs.GetFloat("bias", 1.f);
  std::vector<int64_t> pad(2 * (x.dim() - 1), 0);  // pad the channel axis only
  pad[pad.size() - 2] = (size - 1) / 2;
  pad[pad.size() - 1] = size - 1 - (size - 1) / 2;
  at::Tensor sq = at::constant_pad_nd(x * x, pad, 0);
  at::Tensor sum = at::zeros_like(x);
  for (int64_t k = 0; k < size; ++k) sum = sum + sq.narrow(1, k, x.size(1));
  return One(x / at::pow(bias + alpha / size * sum, beta));
}

OpResult ArgExtreme(const Node& node, const Tensors& in, bool is_max) {
  NeedInputs(in, 1, 1);
  const int64_t axis = NormalizeAxis(node.attrs.GetInt("axis", 0), in[0].dim());
  const bool keep = node.attrs.GetInt("keepdims", 1) != 0;
  const bool last = node.attrs.GetInt("select_last_index", 0) != 0;
  at::Tensor x = last ? in[0].flip(axis) : in[0];
  at::Tensor idx = is_max ? at::argmax(x, axis, keep) : at::argmin(x, axis, keep);
  if (last) idx = (in[0].size(axis) - 1) - idx;
  return One(idx);
}

OpResult ReduceOp(const Node& node, const Tensors& in, ReduceKind kind) {
  NeedInputs(in, 1, 2);
  return One(OnnxReduce(in[0], IntsArg(node, in, 1, "axes"), node.attrs.GetInt("keepdims", 1) != 0,
                        node.attrs.GetInt("noop_with_empty_axes", 0) != 0, kind));
}

}  // namespace

HandlerTable UnaryOps() {
  return {
      {"Neg", UnaryOp(at::neg)},
      {"Abs", UnaryOp(at::abs)},
      {"Log", UnaryOp(at::log)},
      {"Reciprocal", UnaryOp(at::reciprocal)},
      {"Floor", UnaryOp(at::floor)},
      {"Ceil", UnaryOp(at::ceil)},
      {"Round", UnaryOp(at::round)},  // half to even
      {"Sin", UnaryOp(at::sin)},
      {"Cos", UnaryOp(at::cos)},
      {"Tan", UnaryOp(at::tan)},
      {"Asin", UnaryOp(at::asin)},
      {"Acos", UnaryOp(at::acos)},
      {"Atan", UnaryOp(at::atan)},
      {"Sinh", UnaryOp(at::sinh)},
      {"Cosh", UnaryOp(at::cosh)},
      {"Asinh", UnaryOp(at::asinh)},
      {"Acosh", UnaryOp(at::acosh)},
      {"Atanh", UnaryOp(at::atanh)},
      {"Sign", UnaryOp(at::sign)},
      {"Not", UnaryOp(at::logical_not)},
      {"IsNaN", UnaryOp(at::isnan)},
      {"BitwiseNot", UnaryOp(at::bitwise_not)},
      {"Det", UnaryOp(at::det)},
      {"IsInf",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 1);
         const bool pos = n.attrs.GetInt("detect_positive", 1) != 0;
         const bool neg = n.attrs.GetInt("detect_negative", 1) != 0;
         at::Tensor inf = at::isinf(in[0]);
         if (!pos) inf = inf & (in[0] < 0);
         if (!neg) inf = inf & (in[0] > 0);
         return One(inf);
       }},
      {"Softsign",
       [](auto&, auto& in) {
         NeedInputs(in, 1, 1);
         return One(in[0] / (1 + at::abs(in[0])));
       }},
      {"Softplus",
       [](auto&, auto& in) {
         NeedInputs(in, 1, 1);
         return One(at::softplus(in[0], 1, 20));
       }},
      {"Mish",
       [](auto&, auto& in) {
         NeedInputs(in, 1, 1);
         return One(in[0] * at::tanh(at::softplus(in[0], 1, 20)));
       }},
      {"HardSigmoid",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 1);
         const double alpha = n.attrs.GetFloat("alpha", 0.2f);
         const double beta = n.attrs.GetFloat("beta", 0.5f);
         return One(at::clamp(in[0] * alpha + beta, 0, 1));
       }},
      {"HardSwish",
       [](auto&, auto& in) {
         NeedInputs(in, 1, 1);
         return One(in[0] * at::clamp(in[0] / 6 + 0.5, 0, 1));
       }},
      {"Elu",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 1);
         const double alpha = n.attrs.GetFloat("alpha", 1.f);
         return One(at::where(in[0] > 0, in[0], (at::exp(in[0]) - 1) * alpha));
       }},
      {"Selu",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 1);
         const double alpha = n.attrs.GetFloat("alpha", 1.67326319217681884765625f);
         const double gamma = n.attrs.GetFloat("gamma", 1.05070102214813232421875f);
         return One(at::where(in[0] > 0, in[0], (at::exp(in[0]) - 1) * alpha) * gamma);
       }},
      {"Celu",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 1);
         const double alpha = n.attrs.GetFloat("alpha", 1.f);
         const at::Tensor negative = (at::exp(in[0] / alpha) - 1) * alpha;
         return One(at::clamp_min(in[0], 0) + at::clamp_max(negative, 0));
       }},
      {"ThresholdedRelu",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 1);
         const double alpha = n.attrs.GetFloat("alpha", 1.f);
         return One(at::where(in[0] > alpha, in[0], at::zeros_like(in[0])));
       }},
      {"Shrink",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 1);
         const double bias = n.attrs.GetFloat("bias", 0.f), lambd = n.attrs.GetFloat("lambd", 0.5f);
         const at::Tensor& x = in[0];
         const at::Tensor upper = at::where(x > lambd, x - bias, at::zeros_like(x));
         return One(at::where(x < -lambd, x + bias, upper));
       }},
      {"Gelu",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 1);
         const at::Tensor& x = in[0];
         if (n.attrs.GetString("approximate", "none") == "tanh") {
           return One(0.5 * x * (1 + at::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))));
         }
         return One(0.5 * x * (1 + at::erf(x * M_SQRT1_2)));
       }},
      {"PRelu",
       [](auto&, auto& in) {
         NeedInputs(in, 2, 2);
         return One(at::where(in[0] < 0, in[0] * in[1], in[0]));
       }},
  };
}

HandlerTable BinaryAndVariadicOps() {
  return {
      {"Equal", BinaryOp(at::eq)},
      {"Less", BinaryOp(at::lt)},
      {"LessOrEqual", BinaryOp(at::le)},
      {"Greater", BinaryOp(at::gt)},
      {"GreaterOrEqual", BinaryOp(at::ge)},
      {"And", BinaryOp(at::logical_and)},
      {"Or", BinaryOp(at::logical_or)},
      {"Xor", BinaryOp(at::logical_xor)},
      {"BitwiseAnd", BinaryOp(at::bitwise_and)},
      {"BitwiseOr", BinaryOp(at::bitwise_or)},
      {"BitwiseXor", BinaryOp(at::bitwise_xor)},
      {"Mod",
       [](auto& n, auto& in) {
         NeedInputs(in, 2, 2);
         // fmod=0: the result takes the divisor's sign (integers); fmod=1: C fmod.
         if (n.attrs.GetInt("fmod", 0)) return One(at::fmod(in[0], in[1]));
         return One(at::remainder(in[0], in[1]));
       }},
      {"Min", [](auto&, auto& in) { return One(Fold(in, at::minimum)); }},
      {"Max", [](auto&, auto& in) { return One(Fold(in, at::maximum)); }},
      {"Sum", [](auto&, auto& in) { return One(Fold(in, Add2)); }},
      {"Mean",
       [](auto&, auto& in) { return One(Fold(in, Add2) / static_cast<double>(in.size())); }},
      {"CastLike",
       [](auto&, auto& in) {
         NeedInputs(in, 2, 2);
         return One(in[0].to(in[1].scalar_type()));
       }},
  };
}

HandlerTable ReductionAndNormalizationOps() {
  return {
      {"ReduceMean", [](auto& n, auto& in) { return ReduceOp(n, in, ReduceKind::kMean); }},
      {"ReduceSum", [](auto& n, auto& in) { return ReduceOp(n, in, ReduceKind::kSum); }},
      {"ReduceMax", [](auto& n, auto& in) { return ReduceOp(n, in, ReduceKind::kMax); }},
      {"ReduceMin", [](auto& n, auto& in) { return ReduceOp(n, in, ReduceKind::kMin); }},
      {"ReduceProd", [](auto& n, auto& in) { return ReduceOp(n, in, ReduceKind::kProd); }},
      {"ReduceL1", [](auto& n, auto& in) { return ReduceOp(n, in, ReduceKind::kL1); }},
      {"ReduceL2", [](auto& n, auto& in) { return ReduceOp(n, in, ReduceKind::kL2); }},
      {"ReduceLogSum", [](auto& n, auto& in) { return ReduceOp(n, in, ReduceKind::kLogSum); }},
      {"ReduceLogSumExp",
       [](auto& n, auto& in) { return ReduceOp(n, in, ReduceKind::kLogSumExp); }},
      {"ReduceSumSquare",
       [](auto& n, auto& in) { return ReduceOp(n, in, ReduceKind::kSumSquare); }},
      {"ArgMax", [](auto& n, auto& in) { return ArgExtreme(n, in, true); }},
      {"ArgMin", [](auto& n, auto& in) { return ArgExtreme(n, in, false); }},
      {"TopK",
       [](auto& n, auto& in) {
         NeedInputs(in, 2, 2);
         const int64_t axis = NormalizeAxis(n.attrs.GetInt("axis", -1), in[0].dim());
         auto [values, indices] = at::topk(in[0], static_cast<int64_t>(ReadScalar(in[1])), axis,
                                           n.attrs.GetInt("largest", 1) != 0, true);
         return OpResult(Tensors{values, indices});
       }},
      {"CumSum",
       [](auto& n, auto& in) {
         NeedInputs(in, 2, 2);
         const int64_t axis = NormalizeAxis(static_cast<int64_t>(ReadScalar(in[1])), in[0].dim());
         const bool reverse = n.attrs.GetInt("reverse", 0) != 0;
         at::Tensor x = reverse ? in[0].flip(axis) : in[0];
         at::Tensor y = at::cumsum(x, axis);
         if (n.attrs.GetInt("exclusive", 0)) y = y - x;
         return One(reverse ? y.flip(axis) : y);
       }},
      {"LogSoftmax",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 1);
         return One(at::log_softmax(in[0], NormalizeAxis(n.attrs.GetInt("axis", -1), in[0].dim())));
       }},
      {"Hardmax",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 1);
         const int64_t axis = NormalizeAxis(n.attrs.GetInt("axis", -1), in[0].dim());
         return One(at::zeros_like(in[0]).scatter(axis, at::argmax(in[0], axis, true), 1.0));
       }},
      {"InstanceNormalization",
       [](auto& n, auto& in) {
         NeedInputs(in, 3, 3);
         const at::Tensor& x = in[0];
         std::vector<int64_t> dims(x.dim() - 2);
         std::iota(dims.begin(), dims.end(), 2);
         at::Tensor c = x - at::mean(x, dims, true);
         const double eps = n.attrs.GetFloat("epsilon", 1e-5f);
         at::Tensor y = c / at::sqrt(at::mean(c * c, dims, true) + eps);
         return One(y * AlongAxis(in[1], 1, x.dim()) + AlongAxis(in[2], 1, x.dim()));
       }},
      {"MeanVarianceNormalization",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 1);
         Ints axes = n.attrs.GetInts("axes", {0, 2, 3});
         for (auto& a : axes) a = NormalizeAxis(a, in[0].dim());
         at::Tensor c = in[0] - at::mean(in[0], axes, true);
         return One(c / at::sqrt(at::mean(c * c, axes, true) + 1e-9));
       }},
      {"LpNormalization",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 1);
         const int64_t axis = NormalizeAxis(n.attrs.GetInt("axis", -1), in[0].dim());
         const int64_t p = n.attrs.GetInt("p", 2);
         TORCH_CHECK(p == 1 || p == 2, "LpNormalization p must be 1 or 2");
         const std::vector<int64_t> dims{axis};
         at::Tensor norm = p == 1 ? at::sum(at::abs(in[0]), dims, true)
                                  : at::sqrt(at::sum(in[0] * in[0], dims, true));
         return One(in[0] / norm);
       }},
      {"LayerNormalization",
       [](auto& n, auto& in) {
         NeedInputs(in, 2, 3);
         const at::Tensor& x = in[0];
         const int64_t axis = NormalizeAxis(n.attrs.GetInt("axis", -1), x.dim());
         std::vector<int64_t> dims(x.dim() - axis);
         std::iota(dims.begin(), dims.end(), axis);
         at::Tensor mean = at::mean(x, dims, true);
         at::Tensor inv_std = at::rsqrt(at::mean((x - mean) * (x - mean), dims, true) +
                                        n.attrs.GetFloat("epsilon", 1e-5f));
         at::Tensor y = (x - mean) * inv_std * in[1];
         if (in.size() > 2) y = y + in[2];
         Tensors outs{y, mean, inv_std};
         outs.resize(std::max<size_t>(1, n.outputs.size()));
         return OpResult(outs);
       }},
      {"GlobalMaxPool",
       [](auto&, auto& in) {
         NeedInputs(in, 1, 1);
         std::vector<int64_t> dims(in[0].dim() - 2);
         std::iota(dims.begin(), dims.end(), 2);
         return One(at::amax(in[0], dims, true));
       }},
      {"LRN", Lrn},
  };
}

namespace {

/// Every opaque op the executor runs, by ONNX op type, from the op families above.
const HandlerTable& Handlers() {
  static const auto* table = [] {
    auto* all = new HandlerTable;
    for (HandlerTable family : {UnaryOps(), BinaryAndVariadicOps(), ShapeAndGeneratorOps(),
                                ReductionAndNormalizationOps(), ConvPoolResizeOps(), IndexingOps(),
                                OpsetFormsOfVocabularyOps()}) {
      for (auto& [op, handler] : family) REWIRE_CHECK(all->emplace(op, std::move(handler)).second);
    }
    return all;
  }();
  return *table;
}

}  // namespace
}  // namespace opaque

OpResult RunOpaque(const Node& node, const Tensors& inputs) {
  const std::string op = node.attrs.GetString("onnx_op");
  const std::string domain = node.attrs.GetString("onnx_domain");
  if (op.empty()) return InvalidArgument("opaque node without an onnx_op attribute");
  if (!domain.empty() && domain != "ai.onnx") {
    return Unimplemented("the reference executor cannot run ONNX op '" + domain + "::" + op + "'");
  }
  const auto& table = opaque::Handlers();
  if (auto it = table.find(op); it != table.end()) return it->second(node, inputs);
  if (auto twin = OpTypeFromOnnx("", op); twin && *twin != OpType::kOpaque) {
    const OpInfo& info = GetOpInfo(*twin);
    const int n = static_cast<int>(inputs.size());
    if (!ArityAccepts(info, n)) {
      return InvalidArgument("ONNX op '" + op + "' with " + std::to_string(n) + " inputs");
    }
    return RunKernel(*twin, node, inputs);
  }
  return Unimplemented("the reference executor cannot run ONNX op '" + op + "'");
}

}  // namespace rewire::exec

// Every kernel of the reference executor against hand-computed values or an independent
// formula (explicit loops) on small tensors: the vocabulary ops first, then Opaque ONNX ops.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "graph/weights.h"
#include "kernels/executor.h"

namespace rewire {
namespace {

// ---------------------------------------------------------------- helpers

template <typename T>
T Must(StatusOr<T> v) {
  if (!v.ok()) {
    ADD_FAILURE() << v.status().message();
    throw std::runtime_error(v.status().message());
  }
  return std::move(v).value();
}

using Ptrs = std::vector<HostTensorPtr>;
using Outs = std::vector<HostTensor>;

HostTensorPtr F(Shape s, std::vector<float> v) {
  return std::make_shared<const HostTensor>(HostTensor::FromFloats(std::move(s), v));
}
HostTensorPtr I(Shape s, std::vector<int64_t> v) {
  return std::make_shared<const HostTensor>(HostTensor::FromInt64s(std::move(s), v));
}
HostTensorPtr B(Shape s, std::vector<int> v) {
  auto t = std::make_shared<HostTensor>(DType::kBool, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) t->bytes[i] = std::byte(v[i] ? 1 : 0);
  return t;
}
HostTensorPtr Rand(Shape s, uint64_t seed) {
  return std::make_shared<const HostTensor>(UniformTensor(s, -1.f, 1.f, seed));
}
TensorType F32(Shape s) { return {DType::kFloat32, std::move(s)}; }
TensorType I64(Shape s) { return {DType::kInt64, std::move(s)}; }
TensorType Bool(Shape s) { return {DType::kBool, std::move(s)}; }

std::vector<float> Fl(const HostTensor& t) {
  EXPECT_EQ(t.type.dtype, DType::kFloat32);
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}
std::vector<int64_t> In(const HostTensor& t) {
  EXPECT_EQ(t.type.dtype, DType::kInt64);
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.numel());
}
std::vector<int> Bo(const HostTensor& t) {
  EXPECT_EQ(t.type.dtype, DType::kBool);
  std::vector<int> out;
  for (std::byte b : t.bytes) out.push_back(static_cast<int>(b));
  return out;
}

void ExpectClose(const std::vector<float>& got, const std::vector<float>& want, double tol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(double(want[i]))))
        << "element " << i;
  }
}
void ExpectTensor(const HostTensor& t, const Shape& shape, const std::vector<float>& want,
                  double tol = 1e-5) {
  EXPECT_EQ(t.type.shape, shape);
  ExpectClose(Fl(t), want, tol);
}

Outs Collect(Graph& g, NodeId node, size_t n, const TensorMap& in) {
  for (size_t i = 0; i < n; ++i) {
    EXPECT_TRUE(g.AddOutput("out" + std::to_string(i), ValueRef{node, uint32_t(i)}).ok());
  }
  TensorMap out = Must(RunGraph(g, in));
  Outs r;
  for (size_t i = 0; i < n; ++i) r.push_back(*out.at("out" + std::to_string(i)));
  return r;
}

std::vector<ValueRef> AddInputs(Graph& g, const Ptrs& ins, TensorMap* map) {
  std::vector<ValueRef> refs;
  for (size_t i = 0; i < ins.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    refs.push_back({Must(g.AddInput(name, ins[i]->type)), 0});
    (*map)[name] = ins[i];
  }
  return refs;
}

/// Runs one vocabulary op on graph inputs holding `ins`; returns its outputs.
Outs Op(OpType op, const Ptrs& ins, Attrs attrs = {}) {
  Graph g;
  TensorMap map;
  auto refs = AddInputs(g, ins, &map);
  const NodeId n = Must(g.AddOp(op, refs, std::move(attrs), "op"));
  return Collect(g, n, g.node(n).outputs.size(), map);
}
HostTensor Op1(OpType op, const Ptrs& ins, Attrs attrs = {}) {
  return Op(op, ins, std::move(attrs))[0];
}

/// Runs one ONNX op as an Opaque node with the given output types.
Outs Onnx(const std::string& type, const Ptrs& ins, Attrs attrs, std::vector<TensorType> outs) {
  Graph g;
  TensorMap map;
  auto refs = AddInputs(g, ins, &map);
  const size_t n_out = outs.size();
  const NodeId n = Must(g.AddOpaque(type, "", refs, std::move(attrs), std::move(outs), "onnx_op"));
  return Collect(g, n, n_out, map);
}
HostTensor Onnx1(const std::string& type, const Ptrs& ins, Attrs attrs, TensorType out) {
  return Onnx(type, ins, std::move(attrs), {std::move(out)})[0];
}

// ---------------------------------------------------------------- independent references

/// Direct convolution loops. pads = {top, left, bottom, right}.
std::vector<float> NaiveConv2D(const HostTensor& x, const HostTensor& w, const HostTensor* bias,
                               Ints s, Ints p, Ints d, int64_t group, Shape* out_shape) {
  const int64_t N = x.type.shape[0], C = x.type.shape[1], H = x.type.shape[2], W = x.type.shape[3];
  const int64_t O = w.type.shape[0], Cg = w.type.shape[1], KH = w.type.shape[2],
                KW = w.type.shape[3];
  const int64_t OH = (H + p[0] + p[2] - ((KH - 1) * d[0] + 1)) / s[0] + 1;
  const int64_t OW = (W + p[1] + p[3] - ((KW - 1) * d[1] + 1)) / s[1] + 1;
  *out_shape = {N, O, OH, OW};
  const float* xv = x.data<float>();
  const float* wv = w.data<float>();
  std::vector<float> y;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t g = o / (O / group);
          double sum = bias ? bias->data<float>()[o] : 0.0;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * s[0] + kh * d[0] - p[0], iw = ow * s[1] + kw * d[1] - p[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                sum += double(xv[((n * C + g * Cg + c) * H + ih) * W + iw]) *
                       wv[((o * Cg + c) * KH + kh) * KW + kw];
              }
          y.push_back(static_cast<float>(sum));
        }
  return y;
}

/// Direct pooling loops over an output grid of OH x OW windows; pads = {t, l, b, r}.
std::vector<float> NaivePool(const HostTensor& x, int64_t k, int64_t s, Ints p, bool is_max,
                             bool count_include_pad, int64_t OH, int64_t OW) {
  const int64_t NC = x.type.shape[0] * x.type.shape[1], H = x.type.shape[2], W = x.type.shape[3];
  std::vector<float> y;
  for (int64_t c = 0; c < NC; ++c)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double acc = is_max ? -1e30 : 0.0;
        int64_t count = 0;
        for (int64_t i = oh * s - p[0]; i < oh * s - p[0] + k; ++i)
          for (int64_t j = ow * s - p[1]; j < ow * s - p[1] + k; ++j) {
            const bool inside = i >= 0 && i < H && j >= 0 && j < W;
            const bool in_padded = i >= -p[0] && i < H + p[2] && j >= -p[1] && j < W + p[3];
            if (count_include_pad ? in_padded : inside) ++count;
            if (!inside) continue;
            const double v = x.data<float>()[(c * H + i) * W + j];
            acc = is_max ? std::max(acc, v) : acc + v;
          }
        y.push_back(static_cast<float>(is_max ? acc : acc / count));
      }
  return y;
}

// ---------------------------------------------------------------- convolution

TEST(Conv2D, MatchesExplicitLoops) {
  auto x = Rand({1, 2, 4, 4}, 1), w = Rand({3, 2, 3, 3}, 2);
  HostTensor y = Op1(OpType::kConv2D, {x, w}, {{"pads", Ints{1, 1, 1, 1}}});
  Shape shape;
  auto want = NaiveConv2D(*x, *w, nullptr, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, &shape);
  ExpectTensor(y, shape, want);
  EXPECT_EQ(shape, (Shape{1, 3, 4, 4}));
}

TEST(Conv2D, AsymmetricPadsStridesDilationsAndBias) {
  auto x = Rand({2, 2, 5, 6}, 3), w = Rand({4, 2, 2, 3}, 4), b = Rand({4}, 5);
  Attrs a{{"pads", Ints{0, 1, 2, 1}}, {"strides", Ints{2, 1}}, {"dilations", Ints{1, 2}}};
  HostTensor y = Op1(OpType::kConv2D, {x, w, b}, a);
  Shape shape;
  auto want = NaiveConv2D(*x, *w, b.get(), {2, 1}, {0, 1, 2, 1}, {1, 2}, 1, &shape);
  ExpectTensor(y, shape, want);
}

TEST(Conv2D, GroupedConvolution) {
  auto x = Rand({1, 4, 4, 4}, 6), w = Rand({6, 2, 3, 3}, 7);
  HostTensor y = Op1(OpType::kConv2D, {x, w}, {{"pads", Ints{1, 1, 1, 1}}, {"group", int64_t{2}}});
  Shape shape;
  auto want = NaiveConv2D(*x, *w, nullptr, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2, &shape);
  ExpectTensor(y, shape, want);
}

TEST(Conv2D, FusedActivations) {
  auto x = Rand({1, 2, 4, 4}, 8), w = Rand({2, 2, 3, 3}, 9), b = Rand({2}, 10);
  Shape shape;
  auto plain = NaiveConv2D(*x, *w, b.get(), {1, 1}, {1, 0, 1, 0}, {1, 1}, 1, &shape);
  for (std::string act : {"relu", "sigmoid", "tanh"}) {
    HostTensor y =
        Op1(OpType::kConv2D, {x, w, b}, {{"pads", Ints{1, 0, 1, 0}}, {"activation", act}});
    std::vector<float> want;
    for (float v : plain) {
      want.push_back(act == "relu"      ? std::max(v, 0.f)
                     : act == "sigmoid" ? 1.f / (1.f + std::exp(-v))
                                        : std::tanh(v));
    }
    ExpectTensor(y, shape, want);
  }
}

// ---------------------------------------------------------------- pooling

HostTensorPtr Iota(Shape s) {
  std::vector<float> v(NumElements(s));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i);
  return F(s, v);
}

TEST(MaxPool2D, CeilModeKeepsThePartialLastWindow) {
  auto x = Iota({1, 1, 5, 5});
  HostTensor y =
      Op1(OpType::kMaxPool2D, {x},
          {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}});
  ExpectTensor(y, {1, 1, 3, 3}, {6, 8, 9, 16, 18, 19, 21, 23, 24});
  HostTensor floor =
      Op1(OpType::kMaxPool2D, {x}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
  ExpectTensor(floor, {1, 1, 2, 2}, {6, 8, 16, 18});
}

TEST(MaxPool2D, PaddingAndCeilModeMatchLoops) {
  auto x = Rand({1, 2, 5, 5}, 11);
  // in 5, k 2, s 2, pads 1/1: ceil gives 4 windows, but the 4th would start in the padding.
  HostTensor y = Op1(OpType::kMaxPool2D, {x},
                     {{"kernel_shape", Ints{2, 2}},
                      {"strides", Ints{2, 2}},
                      {"pads", Ints{1, 1, 1, 1}},
                      {"ceil_mode", int64_t{1}}});
  ExpectTensor(y, {1, 2, 3, 3}, NaivePool(*x, 2, 2, {1, 1, 1, 1}, true, false, 3, 3));
  // Asymmetric pads with ceil mode: in 6, k 3, s 2, pads 0/1 (top/left) and 1/0.
  auto x2 = Rand({1, 1, 6, 6}, 12);
  HostTensor y2 = Op1(OpType::kMaxPool2D, {x2},
                      {{"kernel_shape", Ints{3, 3}},
                       {"strides", Ints{2, 2}},
                       {"pads", Ints{0, 1, 1, 0}},
                       {"ceil_mode", int64_t{1}}});
  ExpectTensor(y2, {1, 1, 3, 3}, NaivePool(*x2, 3, 2, {0, 1, 1, 0}, true, false, 3, 3));
}

TEST(AvgPool2D, CountIncludePadChangesTheDivisorAtTheBorder) {
  auto ones = F({1, 1, 4, 4}, std::vector<float>(16, 1.f));
  Attrs a{{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}};
  ExpectTensor(Op1(OpType::kAvgPool2D, {ones}, a), {1, 1, 2, 2}, {1, 1, 1, 1});
  a.Set("count_include_pad", int64_t{1});
  ExpectTensor(Op1(OpType::kAvgPool2D, {ones}, a), {1, 1, 2, 2}, {4.f / 9, 6.f / 9, 6.f / 9, 1});
}

TEST(AvgPool2D, CeilModeAndAsymmetricPadsMatchLoops) {
  auto x = Iota({1, 1, 5, 5});
  HostTensor y =
      Op1(OpType::kAvgPool2D, {x},
          {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}});
  ExpectTensor(y, {1, 1, 3, 3}, {3, 5, 6.5f, 13, 15, 16.5f, 20.5f, 22.5f, 24});
  // in 6, k 3, s 2, pads 1/1: the 4th window starts in the input and reaches past the trailing
  // pad (counted with count_include_pad) into the ceil extension (never counted).
  auto r = Rand({2, 1, 6, 5}, 13);
  for (int64_t cip : {0, 1}) {
    HostTensor z = Op1(OpType::kAvgPool2D, {r},
                       {{"kernel_shape", Ints{3, 3}},
                        {"strides", Ints{2, 2}},
                        {"pads", Ints{1, 0, 1, 1}},
                        {"ceil_mode", int64_t{1}},
                        {"count_include_pad", cip}});
    ASSERT_EQ(z.type.shape.size(), 4u);
    EXPECT_EQ(z.type.shape, (Shape{2, 1, 4, 3}));
    ExpectClose(Fl(z), NaivePool(*r, 3, 2, {1, 0, 1, 1}, false, cip, 4, 3));
  }
}

TEST(GlobalAvgPool, AveragesEachChannel) {
  ExpectTensor(Op1(OpType::kGlobalAvgPool, {F({1, 2, 2, 2}, {1, 2, 3, 4, -1, -1, -1, 3})}),
               {1, 2, 1, 1}, {2.5f, 0});
}

// ---------------------------------------------------------------- element-wise

TEST(Unary, MatchStandardFunctions) {
  const std::vector<float> v{-2.5f, -1, -0.25f, 0, 0.5f, 1, 3};
  auto x = F({7}, v);
  auto apply = [&](float (*f)(float)) {
    std::vector<float> out;
    for (float e : v) out.push_back(f(e));
    return out;
  };
  ExpectClose(Fl(Op1(OpType::kRelu, {x})), apply([](float e) { return std::max(e, 0.f); }));
  ExpectClose(Fl(Op1(OpType::kSigmoid, {x})),
              apply([](float e) { return 1.f / (1.f + std::exp(-e)); }));
  ExpectClose(Fl(Op1(OpType::kTanh, {x})), apply([](float e) { return std::tanh(e); }));
  ExpectClose(Fl(Op1(OpType::kExp, {x})), apply([](float e) { return std::exp(e); }));
  ExpectClose(Fl(Op1(OpType::kErf, {x})), apply([](float e) { return std::erf(e); }));
  ExpectClose(Fl(Op1(OpType::kGelu, {x})),
              apply([](float e) { return 0.5f * e * (1 + std::erf(e / std::sqrt(2.f))); }));
  ExpectClose(Fl(Op1(OpType::kLeakyRelu, {x}, {{"alpha", 0.1f}})),
              apply([](float e) { return e < 0 ? 0.1f * e : e; }));
  ExpectClose(Fl(Op1(OpType::kClip, {x}, {{"min", -1.f}, {"max", 0.75f}})),
              apply([](float e) { return std::clamp(e, -1.f, 0.75f); }));
  ExpectClose(Fl(Op1(OpType::kScalarMul, {x}, {{"scalar", -3.f}})),
              apply([](float e) { return -3 * e; }));
  ExpectClose(Fl(Op1(OpType::kDropout, {x})), v);
  ExpectClose(Fl(Op1(OpType::kIdentity, {x})), v);
  ExpectClose(Fl(Op1(OpType::kSqrt, {F({3}, {0, 4, 2.25f})})), {0, 2, 1.5f});
}

TEST(Cast, TruncatesTowardZeroAndMapsNonZeroToTrue) {
  auto x = F({4}, {-1.7f, 2.9f, 0.f, 0.5f});
  EXPECT_EQ(In(Op1(OpType::kCast, {x}, {{"to", int64_t{7}}})), (std::vector<int64_t>{-1, 2, 0, 0}));
  EXPECT_EQ(Bo(Op1(OpType::kCast, {x}, {{"to", int64_t{9}}})), (std::vector<int>{1, 1, 0, 1}));
  ExpectClose(Fl(Op1(OpType::kCast, {I({2}, {-3, 5})}, {{"to", int64_t{1}}})), {-3, 5});
}

TEST(Binary, BroadcastLikeNumpy) {
  auto a = F({2, 3}, {1, 2, 3, 4, 5, 6});
  auto row = F({3}, {10, 20, 30});
  auto col = F({2, 1}, {2, 4});
  ExpectTensor(Op1(OpType::kAdd, {a, row}), {2, 3}, {11, 22, 33, 14, 25, 36});
  ExpectTensor(Op1(OpType::kSub, {col, row}), {2, 3}, {-8, -18, -28, -6, -16, -26});
  ExpectTensor(Op1(OpType::kMul, {a, col}), {2, 3}, {2, 4, 6, 16, 20, 24});
  ExpectTensor(Op1(OpType::kDiv, {a, col}), {2, 3}, {0.5f, 1, 1.5f, 1, 1.25f, 1.5f});
  ExpectTensor(Op1(OpType::kPow, {a, F({1}, {2})}), {2, 3}, {1, 4, 9, 16, 25, 36});
}

TEST(Binary, IntegerDivisionTruncates) {
  EXPECT_EQ(In(Op1(OpType::kDiv, {I({3}, {-7, 7, -8}), I({3}, {2, -2, 3})})),
            (std::vector<int64_t>{-3, -3, -2}));
  EXPECT_EQ(In(Op1(OpType::kAdd, {I({2}, {1, 2}), I({1}, {5})})), (std::vector<int64_t>{6, 7}));
}

TEST(Where, SelectsWithBroadcasting) {
  ExpectTensor(Op1(OpType::kWhere, {B({2, 1}, {1, 0}), F({3}, {1, 2, 3}), F({1}, {-1})}), {2, 3},
               {1, 2, 3, -1, -1, -1});
}

// ---------------------------------------------------------------- normalisation

TEST(BatchNorm, InferenceFormula) {
  auto x = F({1, 2, 1, 2}, {1, 2, 3, 4});
  HostTensor y = Op1(OpType::kBatchNorm,
                     {x, F({2}, {2, 0.5f}), F({2}, {1, -1}), F({2}, {1.5f, 3}), F({2}, {0.25f, 4})},
                     {{"epsilon", 0.f}});
  // (x - mean) / sqrt(var) * scale + B
  ExpectTensor(y, {1, 2, 1, 2},
               {(1 - 1.5f) / 0.5f * 2 + 1, (2 - 1.5f) / 0.5f * 2 + 1, (3 - 3) / 2.f * 0.5f - 1,
                (4 - 3) / 2.f * 0.5f - 1});
}

TEST(LayerNorm, NormalisesTheTrailingAxes) {
  auto x = F({2, 4}, {1, 2, 3, 4, -1, 0, 0, 5});
  auto scale = F({4}, {1, 2, 1, 0.5f}), bias = F({4}, {0, 0, 1, 1});
  HostTensor y =
      Op1(OpType::kLayerNorm, {x, scale, bias}, {{"axis", int64_t{-1}}, {"epsilon", 1e-5f}});
  std::vector<float> want;
  const float* xv = x->data<float>();
  for (int r = 0; r < 2; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < 4; ++c) mean += xv[r * 4 + c] / 4.0;
    for (int c = 0; c < 4; ++c) var += (xv[r * 4 + c] - mean) * (xv[r * 4 + c] - mean) / 4.0;
    for (int c = 0; c < 4; ++c) {
      want.push_back(
          float((xv[r * 4 + c] - mean) / std::sqrt(var + 1e-5) * scale->data<float>()[c] +
                bias->data<float>()[c]));
    }
  }
  ExpectTensor(y, {2, 4}, want, 1e-4);
}

TEST(Softmax, AlongTheGivenAxis) {
  auto x = F({2, 3}, {1, 2, 3, 0, 0, 0});
  const float e1 = std::exp(1.f), e2 = std::exp(2.f), e3 = std::exp(3.f), s = e1 + e2 + e3;
  ExpectTensor(Op1(OpType::kSoftmax, {x}, {{"axis", int64_t{1}}}), {2, 3},
               {e1 / s, e2 / s, e3 / s, 1.f / 3, 1.f / 3, 1.f / 3});
  auto col = Fl(Op1(OpType::kSoftmax, {x}, {{"axis", int64_t{0}}}));
  EXPECT_NEAR(col[0], e1 / (e1 + 1), 1e-6);
  EXPECT_NEAR(col[3], 1 / (e1 + 1), 1e-6);
}

// ---------------------------------------------------------------- linear algebra

std::vector<float> NaiveMatMul(const float* a, const float* b, int m, int k, int n) {
  std::vector<float> y(m * n, 0.f);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      for (int p = 0; p < k; ++p) y[i * n + j] += a[i * k + p] * b[p * n + j];
  return y;
}

TEST(MatMul, BatchedWithBroadcastAndVectors) {
  auto a = Rand({2, 2, 3}, 20), b = Rand({3, 4}, 21);
  HostTensor y = Op1(OpType::kMatMul, {a, b});
  std::vector<float> want;
  for (int batch = 0; batch < 2; ++batch) {
    auto part = NaiveMatMul(a->data<float>() + batch * 6, b->data<float>(), 2, 3, 4);
    want.insert(want.end(), part.begin(), part.end());
  }
  ExpectTensor(y, {2, 2, 4}, want);
  ExpectTensor(Op1(OpType::kMatMul, {F({3}, {1, 2, 3}), F({3, 2}, {1, 0, 0, 1, 1, 1})}), {2},
               {4, 5});
}

TEST(Gemm, TransposesAlphaBetaAndBroadcastBias) {
  auto a = Rand({3, 2}, 22), b = Rand({4, 3}, 23), c = F({4}, {1, 2, 3, 4});
  HostTensor y =
      Op1(OpType::kGemm, {a, b, c},
          {{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 2.f}, {"beta", 0.5f}});
  std::vector<float> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = 0;
      for (int p = 0; p < 3; ++p) s += a->data<float>()[p * 2 + i] * b->data<float>()[j * 3 + p];
      want.push_back(float(2 * s + 0.5 * c->data<float>()[j]));
    }
  ExpectTensor(y, {2, 4}, want);
}

// ---------------------------------------------------------------- data movement

TEST(ConcatSplit, ConcatenateAndSplitBack) {
  auto a = F({2, 1}, {1, 2}), b = F({2, 2}, {3, 4, 5, 6});
  HostTensor c = Op1(OpType::kConcat, {a, b}, {{"axis", int64_t{-1}}});
  ExpectTensor(c, {2, 3}, {1, 3, 4, 2, 5, 6});
  Outs parts = Op(OpType::kSplit, {F({2, 3}, {1, 3, 4, 2, 5, 6})},
                  {{"axis", int64_t{1}}, {"split", Ints{1, 2}}});
  ASSERT_EQ(parts.size(), 2u);
  ExpectTensor(parts[0], {2, 1}, {1, 2});
  ExpectTensor(parts[1], {2, 2}, {3, 4, 5, 6});
  Outs rows =
      Op(OpType::kSplit, {F({3, 1}, {7, 8, 9})}, {{"axis", int64_t{0}}, {"split", Ints{2, 1}}});
  ExpectTensor(rows[0], {2, 1}, {7, 8});
  ExpectTensor(rows[1], {1, 1}, {9});
}

TEST(Reshape, ResolvedShapesZerosAndMinusOne) {
  auto x = Iota({2, 3, 4});
  ExpectTensor(Op1(OpType::kReshape, {x}, {{"shape", Ints{4, 6}}}), {4, 6}, Fl(*x));
  ExpectTensor(Op1(OpType::kReshape, {x}, {{"shape", Ints{0, -1}}}), {2, 12}, Fl(*x));
}

TEST(Transpose, PermutesAxes) {
  auto x = Iota({2, 3});
  ExpectTensor(Op1(OpType::kTranspose, {x}), {3, 2}, {0, 3, 1, 4, 2, 5});
  auto y = Iota({2, 2, 2});
  ExpectTensor(Op1(OpType::kTranspose, {y}, {{"perm", Ints{1, 0, 2}}}), {2, 2, 2},
               {0, 1, 4, 5, 2, 3, 6, 7});
}

TEST(Flatten, SquashesAroundTheAxis) {
  auto x = Iota({2, 3, 4});
  ExpectTensor(Op1(OpType::kFlatten, {x}, {{"axis", int64_t{2}}}), {6, 4}, Fl(*x));
  ExpectTensor(Op1(OpType::kFlatten, {x}, {{"axis", int64_t{0}}}), {1, 24}, Fl(*x));
}

TEST(SqueezeUnsqueeze, RemoveAndInsertUnitAxes) {
  auto x = Iota({1, 3, 1});
  ExpectTensor(Op1(OpType::kSqueeze, {x}, {{"axes", Ints{0}}}), {3, 1}, {0, 1, 2});
  ExpectTensor(Op1(OpType::kSqueeze, {x}), {3}, {0, 1, 2});
  ExpectTensor(Op1(OpType::kUnsqueeze, {Iota({3})}, {{"axes", Ints{0, -1}}}), {1, 3, 1}, {0, 1, 2});
}

TEST(Pad, ConstantValueOnEachSide) {
  // ONNX order: [x1_begin, x2_begin, x1_end, x2_end]
  HostTensor y =
      Op1(OpType::kPad, {F({2, 2}, {1, 2, 3, 4})}, {{"pads", Ints{1, 0, 0, 2}}, {"value", 9.f}});
  ExpectTensor(y, {3, 4}, {9, 9, 9, 9, 1, 2, 9, 9, 3, 4, 9, 9});
}

TEST(Slice, ClampsAndSupportsNegativeSteps) {
  auto x = Iota({10});
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(),
                    kMin = std::numeric_limits<int64_t>::min();
  ExpectTensor(
      Op1(OpType::kSlice, {x}, {{"starts", Ints{8}}, {"ends", Ints{1}}, {"steps", Ints{-3}}}), {3},
      {8, 5, 2});
  ExpectTensor(
      Op1(OpType::kSlice, {x}, {{"starts", Ints{-1}}, {"ends", Ints{kMin}}, {"steps", Ints{-4}}}),
      {3}, {9, 5, 1});
  ExpectTensor(Op1(OpType::kSlice, {x}, {{"starts", Ints{-3}}, {"ends", Ints{kMax}}}), {3},
               {7, 8, 9});
  auto m = Iota({3, 4});
  ExpectTensor(Op1(OpType::kSlice, {m},
                   {{"starts", Ints{1, 20}},
                    {"ends", Ints{kMax, 0}},
                    {"axes", Ints{1, 0}},
                    {"steps", Ints{2, -1}}}),
               {2, 2}, {9, 11, 5, 7});
}

TEST(Gather, NegativeIndicesAndIndexShape) {
  auto data = Iota({2, 3});
  HostTensor y = Op1(OpType::kGather, {data, I({2, 2}, {0, -1, 1, 1})}, {{"axis", int64_t{1}}});
  ExpectTensor(y, {2, 2, 2}, {0, 2, 1, 1, 3, 5, 4, 4});
  ExpectTensor(Op1(OpType::kGather, {data, I({}, {1})}, {{"axis", int64_t{0}}}), {3}, {3, 4, 5});
}

TEST(Reduce, MeanSumMaxOverAxes) {
  auto x = F({2, 3}, {1, 5, 3, -4, 0, 2});
  ExpectTensor(Op1(OpType::kReduceMean, {x}, {{"axes", Ints{1}}, {"keepdims", int64_t{0}}}), {2},
               {3, -2.f / 3});
  ExpectTensor(Op1(OpType::kReduceSum, {x}, {{"axes", Ints{0}}}), {1, 3}, {-3, 5, 5});
  ExpectTensor(Op1(OpType::kReduceMax, {x}, {{"keepdims", int64_t{0}}}), {}, {5});
  ExpectTensor(Op1(OpType::kReduceMax, {x}, {{"axes", Ints{-1}}}), {2, 1}, {5, 2});
}

// ---------------------------------------------------------------- TASO's weight transforms

TEST(Enlarge, CentresTheKernelInZeros) {
  HostTensor y = Op1(OpType::kEnlarge, {F({1, 1, 1, 1}, {7})}, {{"kernel_shape", Ints{3, 3}}});
  ExpectTensor(y, {1, 1, 3, 3}, {0, 0, 0, 0, 7, 0, 0, 0, 0});
  HostTensor z =
      Op1(OpType::kEnlarge, {F({1, 1, 1, 3}, {1, 2, 3})}, {{"kernel_shape", Ints{3, 5}}});
  ExpectTensor(z, {1, 1, 3, 5}, {0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 0, 0});
}

// A conv with the enlarged weight and pads grown by half the growth equals the original conv.
TEST(Enlarge, ConvWithEnlargedWeightAndExtraPaddingEqualsTheOriginal) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({1, 3, 7, 6})));
  const NodeId w = Must(g.AddWeight("w", {4, 3, 1, 3}, WeightInit{-1, 1, 5}));
  const NodeId big =
      Must(g.AddOp(OpType::kEnlarge, {{w, 0}}, {{"kernel_shape", Ints{5, 5}}}, "enlarge"));
  const NodeId c1 = Must(g.AddOp(OpType::kConv2D, {{x, 0}, {w, 0}},
                                 {{"pads", Ints{0, 1, 1, 1}}, {"strides", Ints{2, 1}}}, "small"));
  const NodeId c2 = Must(g.AddOp(OpType::kConv2D, {{x, 0}, {big, 0}},
                                 {{"pads", Ints{2, 2, 3, 2}}, {"strides", Ints{2, 1}}}, "large"));
  ASSERT_TRUE(g.AddOutput("small", {c1, 0}).ok());
  ASSERT_TRUE(g.AddOutput("large", {c2, 0}).ok());
  TensorMap out = Must(RunGraph(g, RandomInputs(g, 1)));
  EXPECT_EQ(out.at("small")->type, out.at("large")->type);
  Difference d = Must(Compare(*out.at("large"), *out.at("small")));
  EXPECT_LT(d.max_abs, 1e-5);
}

TEST(MergeGConv, BlockDiagonalLayout) {
  // 4 groups, 1 output channel each, 1 input channel per group, 1x1 kernel; merge pairs.
  HostTensor y = Op1(OpType::kMergeGConv, {F({4, 1, 1, 1}, {1, 2, 3, 4})},
                     {{"count", int64_t{2}}, {"group", int64_t{4}}});
  ExpectTensor(y, {4, 2, 1, 1}, {1, 0, 0, 2, 3, 0, 0, 4});
}

TEST(MergeGConv, MergedWeightWithFewerGroupsComputesTheSameConv) {
  for (int64_t count : {2, 4}) {
    Graph g;
    const NodeId x = Must(g.AddInput("x", F32({1, 8, 5, 5})));
    const NodeId w = Must(g.AddWeight("w", {12, 2, 3, 3}, WeightInit{-1, 1, 3}));
    const NodeId m = Must(
        g.AddOp(OpType::kMergeGConv, {{w, 0}}, {{"count", count}, {"group", int64_t{4}}}, "merge"));
    const NodeId c1 = Must(g.AddOp(OpType::kConv2D, {{x, 0}, {w, 0}},
                                   {{"pads", Ints{1, 1, 1, 1}}, {"group", int64_t{4}}}, "grouped"));
    const NodeId c2 = Must(g.AddOp(OpType::kConv2D, {{x, 0}, {m, 0}},
                                   {{"pads", Ints{1, 1, 1, 1}}, {"group", 4 / count}}, "merged"));
    ASSERT_TRUE(g.AddOutput("a", {c1, 0}).ok());
    ASSERT_TRUE(g.AddOutput("b", {c2, 0}).ok());
    TensorMap out = Must(RunGraph(g, RandomInputs(g, 2)));
    Difference d = Must(Compare(*out.at("b"), *out.at("a")));
    EXPECT_LT(d.max_abs, 1e-5) << "count " << count;
  }
}

// ---------------------------------------------------------------- opaque ONNX ops

TEST(Opaque, ComparisonAndLogic) {
  auto a = F({3}, {1, 2, 3}), b = F({1}, {2});
  EXPECT_EQ(Bo(Onnx1("Equal", {a, b}, {}, Bool({3}))), (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(Bo(Onnx1("Less", {a, b}, {}, Bool({3}))), (std::vector<int>{1, 0, 0}));
  EXPECT_EQ(Bo(Onnx1("Greater", {a, b}, {}, Bool({3}))), (std::vector<int>{0, 0, 1}));
  EXPECT_EQ(Bo(Onnx1("GreaterOrEqual", {a, b}, {}, Bool({3}))), (std::vector<int>{0, 1, 1}));
  auto p = B({4}, {0, 0, 1, 1}), q = B({4}, {0, 1, 0, 1});
  EXPECT_EQ(Bo(Onnx1("Not", {p}, {}, Bool({4}))), (std::vector<int>{1, 1, 0, 0}));
  EXPECT_EQ(Bo(Onnx1("And", {p, q}, {}, Bool({4}))), (std::vector<int>{0, 0, 0, 1}));
  EXPECT_EQ(Bo(Onnx1("Or", {p, q}, {}, Bool({4}))), (std::vector<int>{0, 1, 1, 1}));
  EXPECT_EQ(Bo(Onnx1("Xor", {p, q}, {}, Bool({4}))), (std::vector<int>{0, 1, 1, 0}));
}

TEST(Opaque, UnaryMath) {
  const std::vector<float> v{-2.5f, -0.5f, 0.5f, 1.5f};
  auto x = F({4}, v);
  auto apply = [&](float (*f)(float)) {
    std::vector<float> out;
    for (float e : v) out.push_back(f(e));
    return out;
  };
  ExpectClose(Fl(Onnx1("Neg", {x}, {}, F32({4}))), apply([](float e) { return -e; }));
  ExpectClose(Fl(Onnx1("Abs", {x}, {}, F32({4}))), apply([](float e) { return std::fabs(e); }));
  ExpectClose(Fl(Onnx1("Floor", {x}, {}, F32({4}))), apply([](float e) { return std::floor(e); }));
  ExpectClose(Fl(Onnx1("Ceil", {x}, {}, F32({4}))), apply([](float e) { return std::ceil(e); }));
  ExpectClose(Fl(Onnx1("Sin", {x}, {}, F32({4}))), apply([](float e) { return std::sin(e); }));
  ExpectClose(Fl(Onnx1("Cos", {x}, {}, F32({4}))), apply([](float e) { return std::cos(e); }));
  ExpectClose(Fl(Onnx1("Reciprocal", {x}, {}, F32({4}))), apply([](float e) { return 1 / e; }));
  ExpectClose(Fl(Onnx1("Sign", {x}, {}, F32({4}))), {-1, -1, 1, 1});
  ExpectClose(Fl(Onnx1("Round", {x}, {}, F32({4}))), {-2, -0.f, 0, 2});  // half to even
  ExpectClose(Fl(Onnx1("Log", {F({2}, {1, 4})}, {}, F32({2}))), {0, std::log(4.f)});
  ExpectClose(Fl(Onnx1("Softplus", {x}, {}, F32({4}))),
              apply([](float e) { return std::log1p(std::exp(e)); }));
  ExpectClose(Fl(Onnx1("Elu", {x}, {{"alpha", 0.5f}}, F32({4}))),
              apply([](float e) { return e > 0 ? e : 0.5f * (std::exp(e) - 1); }));
  ExpectClose(Fl(Onnx1("Selu", {x}, {}, F32({4}))), apply([](float e) {
                return 1.0507009873554805f * (e > 0 ? e : 1.6732632423543772f * (std::exp(e) - 1));
              }));
  ExpectClose(Fl(Onnx1("HardSigmoid", {x}, {}, F32({4}))),
              apply([](float e) { return std::clamp(0.2f * e + 0.5f, 0.f, 1.f); }));
  ExpectClose(Fl(Onnx1("HardSwish", {F({4}, {-4, -1, 1, 4})}, {}, F32({4}))),
              {0, -1.f / 3, 2.f / 3, 4});
  ExpectClose(Fl(Onnx1("Relu", {x}, {}, F32({4}))),
              {0, 0, 0.5f, 1.5f});  // runs the vocabulary twin
}

TEST(Opaque, VariadicMinMaxSumMean) {
  auto a = F({2}, {1, 5}), b = F({1}, {3}), c = F({2}, {-1, 7});
  ExpectClose(Fl(Onnx1("Min", {a, b, c}, {}, F32({2}))), {-1, 3});
  ExpectClose(Fl(Onnx1("Max", {a, b, c}, {}, F32({2}))), {3, 7});
  ExpectClose(Fl(Onnx1("Sum", {a, b, c}, {}, F32({2}))), {3, 15});
  ExpectClose(Fl(Onnx1("Mean", {a, b, c}, {}, F32({2}))), {1, 5});
}

TEST(Opaque, Mod) {
  EXPECT_EQ(In(Onnx1("Mod", {I({4}, {-7, 7, 7, -7}), I({4}, {3, -3, 3, -3})}, {}, I64({4}))),
            (std::vector<int64_t>{2, -2, 1, -1}));
  ExpectClose(
      Fl(Onnx1("Mod", {F({2}, {-7, 7}), F({2}, {3, -3})}, {{"fmod", int64_t{1}}}, F32({2}))),
      {-1, 1});
}

TEST(Opaque, ShapeGeneratorsAndBroadcasts) {
  auto x = Iota({2, 3, 4});
  EXPECT_EQ(In(Onnx1("Shape", {x}, {}, I64({3}))), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(In(Onnx1("Shape", {x}, {{"start", int64_t{-2}}}, I64({2}))),
            (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(In(Onnx1("Size", {x}, {}, I64({}))), (std::vector<int64_t>{24}));
  ExpectTensor(Onnx1("Expand", {F({3, 1}, {1, 2, 3}), I({3}, {2, 1, 2})}, {}, F32({2, 3, 2})),
               {2, 3, 2}, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  ExpectTensor(Onnx1("Tile", {F({1, 2}, {1, 2}), I({2}, {2, 2})}, {}, F32({2, 4})), {2, 4},
               {1, 2, 1, 2, 1, 2, 1, 2});
  Attrs seven{{"value", I({1}, {7})}};
  EXPECT_EQ(In(Onnx1("ConstantOfShape", {I({2}, {2, 2})}, seven, I64({2, 2}))),
            (std::vector<int64_t>{7, 7, 7, 7}));
  ExpectClose(Fl(Onnx1("ConstantOfShape", {I({1}, {3})}, {}, F32({3}))), {0, 0, 0});
  EXPECT_EQ(In(Onnx1("Range", {I({}, {1}), I({}, {10}), I({}, {3})}, {}, I64({3}))),
            (std::vector<int64_t>{1, 4, 7}));
  ExpectClose(Fl(Onnx1("Range", {F({}, {1}), F({}, {0}), F({}, {-0.25f})}, {}, F32({4}))),
              {1, 0.75f, 0.5f, 0.25f});
}

TEST(Opaque, ArgMaxReductionsAndTopK) {
  auto x = F({2, 3}, {1, 3, 3, 4, -1, 4});
  EXPECT_EQ(In(Onnx1("ArgMax", {x}, {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}}, I64({2}))),
            (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(In(Onnx1("ArgMax", {x}, {{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}},
                     I64({2, 1}))),
            (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(In(Onnx1("ArgMin", {x}, {{"axis", int64_t{0}}}, I64({1, 3}))),
            (std::vector<int64_t>{0, 1, 0}));
  ExpectClose(Fl(Onnx1("ReduceMin", {x}, {{"axes", Ints{1}}, {"keepdims", int64_t{0}}}, F32({2}))),
              {1, -1});
  ExpectClose(Fl(Onnx1("ReduceProd", {x}, {{"axes", Ints{0}}}, F32({1, 3}))), {4, -3, 12});
  ExpectClose(Fl(Onnx1("ReduceProd", {x}, {{"keepdims", int64_t{0}}}, F32({}))), {-144});
  ExpectClose(Fl(Onnx1("ReduceL2", {x, I({1}, {1})}, {{"keepdims", int64_t{0}}}, F32({2}))),
              {std::sqrt(19.f), std::sqrt(33.f)});
  ExpectClose(Fl(Onnx1("ReduceSum", {x, I({1}, {0})}, {{"keepdims", int64_t{0}}}, F32({3}))),
              {5, 2, 7});
  ExpectClose(Fl(Onnx1("ReduceSum", {x}, {{"noop_with_empty_axes", int64_t{1}}}, F32({2, 3}))),
              Fl(*x));
  Outs top = Onnx("TopK", {F({5}, {3, 1, 4, 1, 5}), I({1}, {2})}, {}, {F32({2}), I64({2})});
  ExpectClose(Fl(top[0]), {5, 4});
  EXPECT_EQ(In(top[1]), (std::vector<int64_t>{4, 2}));
}

TEST(Opaque, SoftmaxFamilyAndCumSum) {
  auto x = F({1, 3}, {1, 2, 3});
  const float lse = std::log(std::exp(1.f) + std::exp(2.f) + std::exp(3.f));
  ExpectClose(Fl(Onnx1("LogSoftmax", {x}, {}, F32({1, 3}))), {1 - lse, 2 - lse, 3 - lse});
  ExpectClose(Fl(Onnx1("Hardmax", {F({2, 3}, {1, 3, 3, 0, -1, -2})}, {}, F32({2, 3}))),
              {0, 1, 0, 1, 0, 0});
  ExpectClose(Fl(Onnx1("CumSum", {F({4}, {1, 2, 3, 4}), I({}, {0})}, {}, F32({4}))), {1, 3, 6, 10});
  ExpectClose(Fl(Onnx1("CumSum", {F({4}, {1, 2, 3, 4}), I({}, {0})},
                       {{"exclusive", int64_t{1}}, {"reverse", int64_t{1}}}, F32({4}))),
              {9, 7, 4, 0});
}

TEST(Opaque, TriluOneHotAndGlobalMaxPool) {
  auto m = Iota({3, 3});
  ExpectClose(Fl(Onnx1("Trilu", {m}, {}, F32({3, 3}))), {0, 1, 2, 0, 4, 5, 0, 0, 8});
  ExpectClose(Fl(Onnx1("Trilu", {m, I({}, {-1})}, {{"upper", int64_t{0}}}, F32({3, 3}))),
              {0, 0, 0, 3, 0, 0, 6, 7, 0});
  ExpectClose(
      Fl(Onnx1("OneHot", {I({3}, {0, 2, -1}), I({}, {3}), F({2}, {0, 5})}, {}, F32({3, 3}))),
      {5, 0, 0, 0, 0, 5, 0, 0, 5});
  ExpectTensor(Onnx1("GlobalMaxPool", {F({1, 2, 2, 1}, {1, 4, -3, -2})}, {}, F32({1, 2, 1, 1})),
               {1, 2, 1, 1}, {4, -2});
}

TEST(Opaque, ResizeNearestAndLinear) {
  auto x = F({1, 1, 2, 2}, {1, 2, 3, 4});
  auto scales = F({4}, {1, 1, 2, 2});
  Attrs nearest{{"mode", std::string("nearest")},
                {"coordinate_transformation_mode", std::string("asymmetric")},
                {"nearest_mode", std::string("floor")}};
  ExpectTensor(Onnx1("Resize", {x, scales}, nearest, F32({1, 1, 4, 4})), {1, 1, 4, 4},
               {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  // half_pixel linear: PyTorch's bilinear with align_corners=False. The roi operand (8 values)
  // only matters for tf_crop_and_resize.
  HostTensor lin = Onnx1("Resize", {x, F({8}, {0, 0, 0, 0, 1, 1, 1, 1}), scales},
                         {{"mode", std::string("linear")}}, F32({1, 1, 4, 4}));
  ExpectTensor(
      lin, {1, 1, 4, 4},
      {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4});
  HostTensor sized = Onnx1("Resize", {x, I({4}, {1, 1, 3, 3})},
                           {{"mode", std::string("linear")},
                            {"coordinate_transformation_mode", std::string("align_corners")}},
                           F32({1, 1, 3, 3}));
  ExpectTensor(sized, {1, 1, 3, 3}, {1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4});
}

TEST(Opaque, Conv1DAnd3DMatchLoops) {
  auto x = Rand({1, 2, 7}, 30), w = Rand({3, 2, 3}, 31);
  HostTensor y =
      Onnx1("Conv", {x, w}, {{"pads", Ints{2, 0}}, {"strides", Ints{2}}}, F32({1, 3, 4}));
  std::vector<float> want;  // (7 + 2 - 3) / 2 + 1 = 4 outputs
  for (int o = 0; o < 3; ++o)
    for (int t = 0; t < 4; ++t) {
      double s = 0;
      for (int c = 0; c < 2; ++c)
        for (int k = 0; k < 3; ++k) {
          const int i = t * 2 + k - 2;
          if (i >= 0 && i < 7)
            s += x->data<float>()[c * 7 + i] * w->data<float>()[(o * 2 + c) * 3 + k];
        }
      want.push_back(float(s));
    }
  ExpectTensor(y, {1, 3, 4}, want);

  auto x3 = Rand({1, 1, 3, 3, 3}, 32), w3 = Rand({2, 1, 2, 2, 2}, 33);
  HostTensor y3 = Onnx1("Conv", {x3, w3}, {}, F32({1, 2, 2, 2, 2}));
  std::vector<float> want3;
  for (int o = 0; o < 2; ++o)
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b)
        for (int c = 0; c < 2; ++c) {
          double s = 0;
          for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j)
              for (int k = 0; k < 2; ++k)
                s += x3->data<float>()[((a + i) * 3 + b + j) * 3 + c + k] *
                     w3->data<float>()[((o * 2 + i) * 2 + j) * 2 + k];
          want3.push_back(float(s));
        }
  ExpectTensor(y3, {1, 2, 2, 2, 2}, want3);
}

TEST(Opaque, ConvTranspose2DMatchesScatterLoops) {
  auto x = Rand({1, 2, 3, 3}, 34), w = Rand({2, 3, 3, 3}, 35), b = F({3}, {0.5f, -1, 2});
  // stride 2, pads 1 on every side, output_padding 1: out = (3-1)*2 + 3 + 1 - 2 = 6.
  Attrs a{{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}, {"output_padding", Ints{1, 1}}};
  HostTensor y = Onnx1("ConvTranspose", {x, w, b}, a, F32({1, 3, 6, 6}));
  std::vector<double> full(3 * 8 * 8, 0.0);  // un-cropped output (3-1)*2+3 = 7, +1 output padding
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        for (int o = 0; o < 3; ++o)
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw)
              full[(o * 8 + i * 2 + kh) * 8 + j * 2 + kw] +=
                  x->data<float>()[(c * 3 + i) * 3 + j] *
                  w->data<float>()[((c * 3 + o) * 3 + kh) * 3 + kw];
  std::vector<float> want;
  for (int o = 0; o < 3; ++o)
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 6; ++j)
        want.push_back(float(full[(o * 8 + i + 1) * 8 + j + 1] + b->data<float>()[o]));
  ExpectTensor(y, {1, 3, 6, 6}, want);
}

TEST(Opaque, EinsumDepthToSpaceAndIndexing) {
  auto a = Rand({2, 3}, 40), b = Rand({3, 2}, 41);
  ExpectTensor(Onnx1("Einsum", {a, b}, {{"equation", std::string("ij,jk->ik")}}, F32({2, 2})),
               {2, 2}, NaiveMatMul(a->data<float>(), b->data<float>(), 2, 3, 2));
  auto x = Iota({1, 4, 1, 1});
  ExpectTensor(Onnx1("DepthToSpace", {x}, {{"blocksize", int64_t{2}}}, F32({1, 1, 2, 2})),
               {1, 1, 2, 2}, {0, 1, 2, 3});
  auto x8 = Iota({1, 8, 1, 1});
  ExpectClose(Fl(Onnx1("DepthToSpace", {x8}, {{"blocksize", int64_t{2}}}, F32({1, 2, 2, 2}))),
              {0, 2, 4, 6, 1, 3, 5, 7});
  ExpectClose(
      Fl(Onnx1("DepthToSpace", {x8}, {{"blocksize", int64_t{2}}, {"mode", std::string("CRD")}},
               F32({1, 2, 2, 2}))),
      {0, 1, 2, 3, 4, 5, 6, 7});
  ExpectClose(Fl(Onnx1("SpaceToDepth", {Iota({1, 1, 2, 2})}, {{"blocksize", int64_t{2}}},
                       F32({1, 4, 1, 1}))),
              {0, 1, 2, 3});
  auto d = Iota({2, 3});
  ExpectClose(Fl(Onnx1("GatherElements", {d, I({2, 2}, {2, 0, -1, 1})}, {{"axis", int64_t{1}}},
                       F32({2, 2}))),
              {2, 0, 5, 4});
  ExpectClose(Fl(Onnx1("GatherND", {d, I({2, 2}, {1, 2, 0, 1})}, {}, F32({2}))), {5, 1});
  ExpectClose(Fl(Onnx1("GatherND", {d, I({1, 1}, {1})}, {}, F32({1, 3}))), {3, 4, 5});
  ExpectClose(Fl(Onnx1("ScatterND", {d, I({2, 1}, {1, 0}), F({2, 3}, {9, 9, 9, 7, 7, 7})}, {},
                       F32({2, 3}))),
              {7, 7, 7, 9, 9, 9});
}

TEST(Opaque, OperandsAsInputsForReshapeSliceSqueezeSplitPadClip) {
  auto x = Iota({2, 3});
  ExpectTensor(Onnx1("Reshape", {x, I({2}, {3, -1})}, {}, F32({3, 2})), {3, 2}, Fl(*x));
  ExpectTensor(
      Onnx1("Slice", {x, I({1}, {2}), I({1}, {0}), I({1}, {1}), I({1}, {-1})}, {}, F32({2, 2})),
      {2, 2}, {2, 1, 5, 4});
  ExpectTensor(Onnx1("Unsqueeze", {x, I({1}, {1})}, {}, F32({2, 1, 3})), {2, 1, 3}, Fl(*x));
  ExpectTensor(Onnx1("Squeeze", {Iota({1, 3}), I({1}, {0})}, {}, F32({3})), {3}, {0, 1, 2});
  Outs parts =
      Onnx("Split", {x, I({2}, {2, 1})}, {{"axis", int64_t{1}}}, {F32({2, 2}), F32({2, 1})});
  ExpectClose(Fl(parts[0]), {0, 1, 3, 4});
  ExpectClose(Fl(parts[1]), {2, 5});
  ExpectTensor(Onnx1("Pad", {F({3}, {1, 2, 3}), I({2}, {2, 1})}, {{"mode", std::string("reflect")}},
                     F32({6})),
               {6}, {3, 2, 1, 2, 3, 2});
  ExpectTensor(
      Onnx1("Pad", {F({3}, {1, 2, 3}), I({2}, {1, 2})}, {{"mode", std::string("edge")}}, F32({6})),
      {6}, {1, 1, 2, 3, 3, 3});
  ExpectTensor(Onnx1("Pad", {F({3}, {1, 2, 3}), I({2}, {1, -1}), F({}, {5})}, {}, F32({3})), {3},
               {5, 1, 2});
  ExpectClose(Fl(Onnx1("Clip", {F({3}, {-2, 0.5f, 2}), F({}, {-1}), F({}, {1})}, {}, F32({3}))),
              {-1, 0.5f, 1});
}

TEST(Opaque, NormalisationOps) {
  auto x = F({1, 2, 2}, {1, 3, 2, 2});
  HostTensor y =
      Onnx1("InstanceNormalization", {x, F({2}, {1, 1}), F({2}, {0, 5})}, {}, F32({1, 2, 2}));
  ExpectClose(Fl(y), {-1, 1, 5, 5}, 2e-5);  // channel 1 is constant: 0 / sqrt(eps) + 5
  Outs ln = Onnx("LayerNormalization", {F({1, 2}, {1, 3}), F({2}, {1, 1})}, {{"epsilon", 0.f}},
                 {F32({1, 2}), F32({1, 1}), F32({1, 1})});
  ExpectClose(Fl(ln[0]), {-1, 1});
  ExpectClose(Fl(ln[1]), {2});
  ExpectClose(Fl(ln[2]), {1});
}

TEST(Opaque, UnknownOpIsAnErrorNamingNodeAndOp) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({2})));
  const NodeId n = Must(g.AddOpaque("FancyOp", "", {{x, 0}}, {}, {F32({2})}, "fancy_node"));
  ASSERT_TRUE(g.AddOutput("y", {n, 0}).ok());
  auto r = RunGraph(g, {{"x", F({2}, {1, 2})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("fancy_node"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("FancyOp"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace rewire

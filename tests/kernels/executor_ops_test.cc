// Every vocabulary kernel of the reference executor against hand-computed values or an
// independent formula (explicit loops) on small tensors.

#include "tests/kernels/op_test_util.h"

namespace rewire {
namespace {

using namespace optest;  // NOLINT: the helpers are this file's vocabulary

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

TEST(HardSigmoid, MatchesTheFormulaAndTheOpaqueKernel) {
  const std::vector<float> v{-9, -3, -2.5f, -1, 0, 0.75f, 2.5f, 3, 9};
  auto x = F({3, 3}, v);
  auto hard_sigmoid = [&](float alpha, float beta) {
    std::vector<float> out;
    for (float e : v) out.push_back(std::max(0.f, std::min(1.f, alpha * e + beta)));
    return out;
  };
  ExpectTensor(Op1(OpType::kHardSigmoid, {x}), {3, 3}, hard_sigmoid(0.2f, 0.5f));  // defaults
  const Attrs torch{{"alpha", 1.f / 6}, {"beta", 0.5f}};  // what torch.nn.Hardsigmoid exports
  ExpectTensor(Op1(OpType::kHardSigmoid, {x}, torch), {3, 3}, hard_sigmoid(1.f / 6, 0.5f));
  // The same values as the ONNX op run as an Opaque node (a float16 HardSigmoid stays opaque).
  ExpectClose(Fl(Op1(OpType::kHardSigmoid, {x}, torch)),
              Fl(Onnx1("HardSigmoid", {x}, torch, F32({3, 3}))));
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

TEST(MatMul, FusedActivationsApplyToTheResult) {
  auto a = Rand({3, 4}, 30), b = Rand({4, 5}, 31);
  const HostTensor plain = Op1(OpType::kMatMul, {a, b});
  for (const char* act : {"relu", "sigmoid", "tanh", "gelu"}) {
    const HostTensor fused = Op1(OpType::kMatMul, {a, b}, {{"activation", std::string(act)}});
    const OpType op = std::string(act) == "relu"      ? OpType::kRelu
                      : std::string(act) == "sigmoid" ? OpType::kSigmoid
                      : std::string(act) == "tanh"    ? OpType::kTanh
                                                      : OpType::kGelu;
    const HostTensor want = Op1(op, {std::make_shared<const HostTensor>(plain)});
    ExpectClose(Fl(fused), Fl(want), 1e-6);
  }
  auto c = Rand({5}, 32);
  const HostTensor g = Op1(OpType::kGemm, {a, b, c}, {{"activation", std::string("relu")}});
  for (float v : Fl(g)) EXPECT_GE(v, 0.f);
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

}  // namespace
}  // namespace rewire

// The Opaque ONNX ops of the reference executor against hand-computed values or explicit loops.

#include "tests/kernels/op_test_util.h"

namespace rewire {
namespace {

using namespace optest;  // NOLINT: the helpers are this file's vocabulary

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

TEST(Opaque, ResizeAlignCornersByScalesDividesByTheUnroundedLength) {
  // ONNX's backend test resize_downsample_scales_linear_align_corners: the last axis (4 values,
  // scale 0.6) has 2 outputs and a resized length of 2.4, so output 1 reads input 3 / 1.4 =
  // 2.142857, not input 3 as the rounded length would have it.
  auto x = F({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto roi = F({8}, {0, 0, 0, 0, 1, 1, 1, 1});
  HostTensor y = Onnx1("Resize", {x, roi, F({4}, {1, 1, 0.6f, 0.6f})},
                       {{"mode", std::string("linear")},
                        {"coordinate_transformation_mode", std::string("align_corners")}},
                       F32({1, 1, 1, 2}));
  ExpectTensor(y, {1, 1, 1, 2}, {1, 3.142857f});
  // Nearest with align_corners reads the same coordinates: 2.142857 rounds to input 2 (value 3).
  HostTensor n = Onnx1("Resize", {x, roi, F({4}, {1, 1, 0.6f, 0.6f})},
                       {{"mode", std::string("nearest")},
                        {"coordinate_transformation_mode", std::string("align_corners")}},
                       F32({1, 1, 1, 2}));
  ExpectTensor(n, {1, 1, 1, 2}, {1, 3});
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

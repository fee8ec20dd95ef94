#include <gtest/gtest.h>

#include <limits>

#include "graph/graph.h"
#include "tests/graph/test_util.h"

namespace rewire {
namespace {

using testing::F32;

TensorType I64(Shape s) { return TensorType{DType::kInt64, std::move(s)}; }

Shape Infer(OpType op, Attrs attrs, std::vector<TensorType> in, size_t out_index = 0) {
  auto r = InferAndCanonicalize(op, &attrs, in);
  if (!r.ok()) {
    ADD_FAILURE() << r.status().message();
    return {};
  }
  return r->at(out_index).shape;
}

std::string ErrorOf(OpType op, Attrs attrs, std::vector<TensorType> in) {
  auto r = InferOutputTypes(op, attrs, in);
  return r.ok() ? "" : r.status().message();
}

TEST(ShapeInference, Conv2DStridesPadsGroupsDilations) {
  EXPECT_EQ(Infer(OpType::kConv2D, {}, {F32({1, 3, 224, 224}), F32({64, 3, 7, 7})}),
            (Shape{1, 64, 218, 218}));
  EXPECT_EQ(Infer(OpType::kConv2D, {{"strides", Ints{2, 2}}, {"pads", Ints{3, 3, 3, 3}}},
                  {F32({1, 3, 224, 224}), F32({64, 3, 7, 7}), F32({64})}),
            (Shape{1, 64, 112, 112}));
  EXPECT_EQ(Infer(OpType::kConv2D, {{"group", int64_t{32}}, {"pads", Ints{1, 1, 1, 1}}},
                  {F32({1, 128, 56, 56}), F32({128, 4, 3, 3})}),
            (Shape{1, 128, 56, 56}));
  EXPECT_EQ(
      Infer(OpType::kConv2D, {{"dilations", Ints{2, 2}}}, {F32({1, 1, 9, 9}), F32({1, 1, 3, 3})}),
      (Shape{1, 1, 5, 5}));
  // asymmetric padding
  EXPECT_EQ(
      Infer(OpType::kConv2D, {{"pads", Ints{0, 1, 2, 3}}}, {F32({1, 1, 5, 5}), F32({1, 1, 1, 1})}),
      (Shape{1, 1, 7, 9}));
}

TEST(ShapeInference, Conv2DErrorsNameTheProblem) {
  EXPECT_NE(
      ErrorOf(OpType::kConv2D, {}, {F32({1, 3, 8, 8}), F32({4, 2, 3, 3})}).find("input channels"),
      std::string::npos);
  EXPECT_NE(
      ErrorOf(OpType::kConv2D, {{"group", int64_t{2}}}, {F32({1, 3, 8, 8}), F32({4, 1, 3, 3})})
          .find("must divide"),
      std::string::npos);
  EXPECT_NE(ErrorOf(OpType::kConv2D, {}, {F32({1, 3, 2, 2}), F32({4, 3, 3, 3})}).find("larger"),
            std::string::npos);
  EXPECT_NE(ErrorOf(OpType::kConv2D, {{"activation", std::string("swish")}},
                    {F32({1, 3, 8, 8}), F32({4, 3, 3, 3})})
                .find("activation"),
            std::string::npos);
  EXPECT_NE(ErrorOf(OpType::kConv2D, {{"strides", Ints{1}}}, {F32({1, 3, 8, 8}), F32({4, 3, 3, 3})})
                .find("2 values"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf(OpType::kConv2D, {}, {F32({1, 3, 8, 8}), F32({4, 3, 3, 3}), F32({5})}).find("bias"),
      std::string::npos);
  EXPECT_NE(ErrorOf(OpType::kConv2D, {}, {F32({3, 8, 8}), F32({4, 3, 3, 3})}).find("rank 4"),
            std::string::npos);
}

TEST(ShapeInference, PoolingWithCeilMode) {
  EXPECT_EQ(Infer(OpType::kMaxPool2D, {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}},
                  {F32({1, 64, 112, 112})}),
            (Shape{1, 64, 55, 55}));
  EXPECT_EQ(
      Infer(OpType::kMaxPool2D,
            {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}},
            {F32({1, 64, 112, 112})}),
      (Shape{1, 64, 56, 56}));
  // ceil_mode: a window starting wholly in the right padding is dropped (PyTorch rule).
  EXPECT_EQ(Infer(OpType::kMaxPool2D,
                  {{"kernel_shape", Ints{2, 2}},
                   {"strides", Ints{2, 2}},
                   {"ceil_mode", int64_t{1}},
                   {"pads", Ints{1, 1, 1, 1}}},
                  {F32({1, 1, 4, 4})}),
            (Shape{1, 1, 3, 3}));
  EXPECT_EQ(Infer(OpType::kAvgPool2D, {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}},
                  {F32({1, 8, 17, 17})}),
            (Shape{1, 8, 17, 17}));
  EXPECT_EQ(Infer(OpType::kGlobalAvgPool, {}, {F32({2, 8, 7, 7})}), (Shape{2, 8, 1, 1}));
  EXPECT_FALSE(
      ErrorOf(OpType::kMaxPool2D, {}, {F32({1, 1, 4, 4})}).empty());  // kernel_shape required
}

TEST(ShapeInference, BroadcastingBinaryOps) {
  EXPECT_EQ(Infer(OpType::kAdd, {}, {F32({2, 1, 4}), F32({3, 1})}), (Shape{2, 3, 4}));
  EXPECT_EQ(Infer(OpType::kMul, {}, {F32({5}), F32({})}), (Shape{5}));
  EXPECT_NE(ErrorOf(OpType::kAdd, {}, {F32({2, 3}), F32({4})}).find("do not broadcast"),
            std::string::npos);
  EXPECT_NE(ErrorOf(OpType::kAdd, {}, {F32({2}), I64({2})}).find("differ"), std::string::npos);
  EXPECT_EQ(Infer(OpType::kWhere, {}, {TensorType{DType::kBool, {4, 1}}, F32({1, 3}), F32({})}),
            (Shape{4, 3}));
}

TEST(ShapeInference, MatMulAndGemm) {
  EXPECT_EQ(Infer(OpType::kMatMul, {}, {F32({16, 64, 64}), F32({16, 64, 32})}),
            (Shape{16, 64, 32}));
  EXPECT_EQ(Infer(OpType::kMatMul, {}, {F32({2, 1, 5, 3}), F32({4, 3, 6})}), (Shape{2, 4, 5, 6}));
  EXPECT_EQ(Infer(OpType::kMatMul, {}, {F32({3}), F32({3, 4})}), (Shape{4}));
  EXPECT_EQ(Infer(OpType::kMatMul, {}, {F32({2, 3}), F32({3})}), (Shape{2}));
  EXPECT_NE(ErrorOf(OpType::kMatMul, {}, {F32({2, 3}), F32({4, 5})}).find("inner"),
            std::string::npos);
  EXPECT_EQ(Infer(OpType::kGemm, {{"transB", int64_t{1}}},
                  {F32({1, 2048}), F32({1000, 2048}), F32({1000})}),
            (Shape{1, 1000}));
  EXPECT_FALSE(ErrorOf(OpType::kGemm, {}, {F32({1, 5}), F32({4, 6})}).empty());
}

TEST(ShapeInference, ConcatAndSplit) {
  EXPECT_EQ(Infer(OpType::kConcat, {{"axis", int64_t{-3}}}, {F32({1, 2, 4, 4}), F32({1, 5, 4, 4})}),
            (Shape{1, 7, 4, 4}));
  EXPECT_FALSE(
      ErrorOf(OpType::kConcat, {{"axis", int64_t{1}}}, {F32({1, 2, 4}), F32({1, 2, 5})}).empty());
  EXPECT_FALSE(ErrorOf(OpType::kConcat, {}, {F32({1})}).empty());  // axis required
  EXPECT_EQ(Infer(OpType::kSplit, {{"axis", int64_t{1}}, {"split", Ints{2, 6}}}, {F32({3, 8})}, 1),
            (Shape{3, 6}));
  EXPECT_NE(ErrorOf(OpType::kSplit, {{"axis", int64_t{1}}, {"split", Ints{2, 5}}}, {F32({3, 8})})
                .find("sum"),
            std::string::npos);
}

TEST(ShapeInference, ReshapeResolvesZeroAndMinusOne) {
  Attrs a{{"shape", Ints{0, -1, 16}}};
  auto r = InferAndCanonicalize(OpType::kReshape, &a, {F32({2, 64, 32})});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->at(0).shape, (Shape{2, 128, 16}));
  EXPECT_EQ(a.GetInts("shape"), (Ints{2, 128, 16}));  // canonical: resolved
  EXPECT_NE(
      ErrorOf(OpType::kReshape, {{"shape", Ints{5, -1}}}, {F32({2, 3})}).find("cannot reshape"),
      std::string::npos);
  EXPECT_FALSE(ErrorOf(OpType::kReshape, {{"shape", Ints{-1, -1}}}, {F32({2, 3})}).empty());
}

TEST(ShapeInference, TransposeFlattenSqueezeUnsqueeze) {
  EXPECT_EQ(Infer(OpType::kTranspose, {{"perm", Ints{0, 2, 1, 3}}}, {F32({1, 64, 16, 64})}),
            (Shape{1, 16, 64, 64}));
  EXPECT_EQ(Infer(OpType::kTranspose, {}, {F32({2, 3, 4})}), (Shape{4, 3, 2}));
  EXPECT_FALSE(ErrorOf(OpType::kTranspose, {{"perm", Ints{0, 0, 1}}}, {F32({2, 3, 4})}).empty());
  EXPECT_EQ(Infer(OpType::kFlatten, {}, {F32({2, 3, 4, 5})}), (Shape{2, 60}));
  EXPECT_EQ(Infer(OpType::kFlatten, {{"axis", int64_t{0}}}, {F32({2, 3})}), (Shape{1, 6}));
  EXPECT_EQ(Infer(OpType::kSqueeze, {}, {F32({1, 3, 1, 2})}), (Shape{3, 2}));
  EXPECT_EQ(Infer(OpType::kSqueeze, {{"axes", Ints{-2}}}, {F32({1, 3, 1, 2})}), (Shape{1, 3, 2}));
  EXPECT_FALSE(ErrorOf(OpType::kSqueeze, {{"axes", Ints{1}}}, {F32({1, 3})}).empty());
  EXPECT_EQ(Infer(OpType::kUnsqueeze, {{"axes", Ints{0, -1}}}, {F32({3, 4})}), (Shape{1, 3, 4, 1}));
}

TEST(ShapeInference, SliceClampsLikeOnnx) {
  Attrs a{
      {"starts", Ints{1}}, {"ends", Ints{std::numeric_limits<int64_t>::max()}}, {"axes", Ints{-1}}};
  auto r = InferAndCanonicalize(OpType::kSlice, &a, {F32({4, 10})});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->at(0).shape, (Shape{4, 9}));
  EXPECT_EQ(a.GetInts("axes"), (Ints{1}));
  EXPECT_EQ(a.GetInts("ends"), (Ints{10}));
  EXPECT_EQ(Infer(OpType::kSlice, {{"starts", Ints{0}}, {"ends", Ints{10}}, {"steps", Ints{3}}},
                  {F32({10})}),
            (Shape{4}));
  // Reverse the whole axis: start -1, end "before 0".
  Attrs rev{{"starts", Ints{-1}},
            {"ends", Ints{std::numeric_limits<int64_t>::min()}},
            {"steps", Ints{-1}}};
  auto rr = InferAndCanonicalize(OpType::kSlice, &rev, {F32({5})});
  ASSERT_TRUE(rr.ok());
  EXPECT_EQ(rr->at(0).shape, (Shape{5}));
  // Canonical attributes are a fixed point.
  Attrs again = rev;
  ASSERT_TRUE(InferAndCanonicalize(OpType::kSlice, &again, {F32({5})}).ok());
  EXPECT_EQ(again, rev);
  EXPECT_FALSE(ErrorOf(OpType::kSlice, {{"starts", Ints{0}}, {"ends", Ints{3}}, {"steps", Ints{0}}},
                       {F32({5})})
                   .empty());
  EXPECT_FALSE(
      ErrorOf(OpType::kSlice, {{"starts", Ints{3}}, {"ends", Ints{3}}}, {F32({5})}).empty());
}

TEST(ShapeInference, ReductionsNormsSoftmaxGather) {
  EXPECT_EQ(Infer(OpType::kReduceMean, {{"axes", Ints{-1}}}, {F32({2, 8, 16})}), (Shape{2, 8, 1}));
  EXPECT_EQ(
      Infer(OpType::kReduceSum, {{"axes", Ints{1}}, {"keepdims", int64_t{0}}}, {F32({2, 8, 16})}),
      (Shape{2, 16}));
  EXPECT_EQ(Infer(OpType::kReduceMax, {{"keepdims", int64_t{0}}}, {F32({2, 8})}), (Shape{}));
  EXPECT_EQ(Infer(OpType::kLayerNorm, {}, {F32({2, 8, 16}), F32({16}), F32({16})}),
            (Shape{2, 8, 16}));
  EXPECT_FALSE(ErrorOf(OpType::kLayerNorm, {}, {F32({2, 8, 16}), F32({8})}).empty());
  EXPECT_EQ(
      Infer(OpType::kBatchNorm, {}, {F32({1, 4, 2, 2}), F32({4}), F32({4}), F32({4}), F32({4})}),
      (Shape{1, 4, 2, 2}));
  EXPECT_FALSE(
      ErrorOf(OpType::kBatchNorm, {}, {F32({1, 4, 2, 2}), F32({3}), F32({4}), F32({4}), F32({4})})
          .empty());
  EXPECT_EQ(Infer(OpType::kSoftmax, {}, {F32({2, 5})}), (Shape{2, 5}));
  EXPECT_EQ(Infer(OpType::kGather, {{"axis", int64_t{1}}}, {F32({3, 10, 4}), I64({2, 5})}),
            (Shape{3, 2, 5, 4}));
  EXPECT_FALSE(ErrorOf(OpType::kGather, {}, {F32({3}), F32({1})}).empty());
}

TEST(ShapeInference, PadCastClipAndWeightTransforms) {
  EXPECT_EQ(Infer(OpType::kPad, {{"pads", Ints{0, 0, 1, 1, 0, 0, 1, 1}}}, {F32({1, 3, 4, 4})}),
            (Shape{1, 3, 6, 6}));
  EXPECT_FALSE(ErrorOf(OpType::kPad, {{"pads", Ints{0, 1}}}, {F32({1, 3})}).empty());
  auto cast = InferOutputTypes(OpType::kCast, {{"to", int64_t{7}}}, {F32({3})});
  ASSERT_TRUE(cast.ok());
  EXPECT_EQ(cast->at(0).dtype, DType::kInt64);
  EXPECT_FALSE(ErrorOf(OpType::kCast, {{"to", int64_t{11}}}, {F32({3})}).empty());  // double
  EXPECT_FALSE(ErrorOf(OpType::kClip, {{"min", 1.f}, {"max", 0.f}}, {F32({3})}).empty());
  EXPECT_EQ(Infer(OpType::kEnlarge, {{"kernel_shape", Ints{3, 3}}}, {F32({8, 4, 1, 1})}),
            (Shape{8, 4, 3, 3}));
  EXPECT_FALSE(
      ErrorOf(OpType::kEnlarge, {{"kernel_shape", Ints{2, 2}}}, {F32({8, 4, 1, 1})}).empty());
  EXPECT_EQ(Infer(OpType::kMergeGConv, {{"group", int64_t{4}}, {"count", int64_t{2}}},
                  {F32({8, 2, 3, 3})}),
            (Shape{8, 4, 3, 3}));
  EXPECT_FALSE(ErrorOf(OpType::kMergeGConv, {{"group", int64_t{4}}, {"count", int64_t{3}}},
                       {F32({8, 2, 3, 3})})
                   .empty());
  EXPECT_EQ(Infer(OpType::kScalarMul, {{"scalar", 0.125f}}, {F32({4})}), (Shape{4}));
  EXPECT_FALSE(ErrorOf(OpType::kScalarMul, {}, {F32({4})}).empty());
}

TEST(ShapeInference, DefaultsAreFilledSoEquivalentSpellingsAgree) {
  Attrs implicit;
  Attrs explicit_{{"strides", Ints{1, 1}},
                  {"pads", Ints{0, 0, 0, 0}},
                  {"dilations", Ints{1, 1}},
                  {"group", int64_t{1}},
                  {"activation", std::string("none")}};
  const std::vector<TensorType> in{F32({1, 3, 8, 8}), F32({4, 3, 3, 3})};
  ASSERT_TRUE(InferAndCanonicalize(OpType::kConv2D, &implicit, in).ok());
  ASSERT_TRUE(InferAndCanonicalize(OpType::kConv2D, &explicit_, in).ok());
  EXPECT_EQ(implicit, explicit_);
  Attrs neg{{"axis", int64_t{-1}}}, pos{{"axis", int64_t{1}}};
  ASSERT_TRUE(InferAndCanonicalize(OpType::kSoftmax, &neg, {F32({2, 5})}).ok());
  ASSERT_TRUE(InferAndCanonicalize(OpType::kSoftmax, &pos, {F32({2, 5})}).ok());
  EXPECT_EQ(neg, pos);
}

}  // namespace
}  // namespace rewire

namespace rewire {
namespace {

using testing::F32;

TEST(ShapeInference, HugeValuesAreErrorsNotOverflow) {
  auto err = [](OpType op, Attrs a, std::vector<TensorType> in) {
    auto r = InferOutputTypes(op, a, in);
    return r.ok() ? std::string() : r.status().message();
  };
  const int64_t big = int64_t{1} << 62;
  EXPECT_FALSE(err(OpType::kReshape, {{"shape", Ints{big, big, 0}}}, {F32({2, 3})}).empty());
  EXPECT_FALSE(
      err(OpType::kConv2D, {{"dilations", Ints{big, 1}}}, {F32({1, 1, 8, 8}), F32({1, 1, 3, 3})})
          .empty());
  EXPECT_FALSE(err(OpType::kSlice,
                   {{"starts", Ints{0}},
                    {"ends", Ints{5}},
                    {"steps", Ints{std::numeric_limits<int64_t>::min()}}},
                   {F32({5})})
                   .empty());
  // A huge positive step takes one element.
  auto one = InferOutputTypes(OpType::kSlice,
                              {{"starts", Ints{0}},
                               {"ends", Ints{5}},
                               {"steps", Ints{std::numeric_limits<int64_t>::max()}}},
                              {F32({5})});
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_EQ(one->at(0).shape, (Shape{1}));
  EXPECT_FALSE(err(OpType::kUnsqueeze, {{"axes", Ints{0}}}, {F32({1 << 30, 1 << 30})}).empty());
  EXPECT_NE(
      err(OpType::kLeakyRelu, {{"alpha", std::numeric_limits<float>::quiet_NaN()}}, {F32({2})})
          .find("NaN"),
      std::string::npos);
  Graph g;
  EXPECT_FALSE(g.AddInput("x", F32({1 << 30, 1 << 30})).ok());
}

}  // namespace
}  // namespace rewire

namespace rewire {
namespace {

using testing::F32;

TEST(ShapeInference, MatMulAndGemmTakeAFusedActivation) {
  Attrs relu{{"activation", std::string("gelu")}};
  ASSERT_TRUE(InferAndCanonicalize(OpType::kMatMul, &relu, {F32({2, 3}), F32({3, 4})}).ok());
  Attrs plain;
  ASSERT_TRUE(InferAndCanonicalize(OpType::kMatMul, &plain, {F32({2, 3}), F32({3, 4})}).ok());
  EXPECT_EQ(plain.GetString("activation"), "none");  // canonical default
  Attrs bad{{"activation", std::string("swish")}};
  EXPECT_FALSE(InferAndCanonicalize(OpType::kGemm, &bad, {F32({2, 3}), F32({3, 4})}).ok());
}

}  // namespace
}  // namespace rewire

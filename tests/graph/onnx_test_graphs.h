#pragma once
// Hand-built graphs shared by the ONNX tests (tests/graph/onnx_test.cc, and the checker test in
// tests/cli/zoo_onnx_test.cc).

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "tests/graph/test_util.h"

namespace rewire::testing {

inline NodeId Op(Graph& g, OpType op, std::vector<ValueRef> in, Attrs attrs = {},
                 const std::string& name = "") {
  return Must(g.AddOp(op, in, std::move(attrs), name));
}

inline HostTensorPtr I64(Shape s, std::vector<int64_t> v) {
  return std::make_shared<const HostTensor>(HostTensor::FromInt64s(std::move(s), v));
}
inline HostTensorPtr F(Shape s, std::vector<float> v) {
  return std::make_shared<const HostTensor>(HostTensor::FromFloats(std::move(s), v));
}

/// One graph with every op of the vocabulary (and two opaque ones).
inline Graph EveryOp() {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({1, 4, 8, 8})));
  const NodeId ids = Must(g.AddInput("ids", {DType::kInt64, {3}}));
  const NodeId w = Must(g.AddWeight("w", {4, 4, 3, 3}, {-0.5f, 0.5f, 1}));
  const NodeId b = Must(g.AddWeight("b", {4}, {-0.5f, 0.5f, 2}));
  const NodeId fused =
      Op(g, OpType::kConv2D, {V(x), V(w)},
         {{"pads", Ints{1, 1, 1, 1}}, {"activation", std::string("relu")}}, "fused");
  const NodeId conv =
      Op(g, OpType::kConv2D, {V(fused), V(w), V(b)}, {{"pads", Ints{1, 1, 1, 1}}}, "conv");
  const NodeId enl = Op(g, OpType::kEnlarge, {V(w)}, {{"kernel_shape", Ints{5, 5}}});
  const NodeId conv5 = Op(g, OpType::kConv2D, {V(conv), V(enl)},
                          {{"pads", Ints{2, 2, 2, 2}}, {"activation", std::string("tanh")}});
  const NodeId gw = Must(g.AddWeight("gw", {4, 2, 3, 3}, {}));
  const NodeId merged =
      Op(g, OpType::kMergeGConv, {V(gw)}, {{"group", int64_t{2}}, {"count", int64_t{2}}});
  const NodeId gconv = Op(g, OpType::kConv2D, {V(conv5), V(merged)}, {{"pads", Ints{1, 1, 1, 1}}});
  const NodeId scale = Must(g.AddWeight("bn.scale", {4}, {}));
  const NodeId bn =
      Op(g, OpType::kBatchNorm, {V(gconv), V(scale), V(b), V(b), V(scale)}, {{"epsilon", 1e-3f}});
  const NodeId mp =
      Op(g, OpType::kMaxPool2D, {V(bn)}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
  const NodeId ap = Op(g, OpType::kAvgPool2D, {V(mp)},
                       {{"kernel_shape", Ints{3, 3}},
                        {"pads", Ints{1, 1, 1, 1}},
                        {"count_include_pad", int64_t{1}}});
  const NodeId gap = Op(g, OpType::kGlobalAvgPool, {V(ap)});
  NodeId u = mp;
  for (OpType op : {OpType::kRelu, OpType::kSigmoid, OpType::kTanh, OpType::kExp, OpType::kSqrt,
                    OpType::kErf, OpType::kGelu, OpType::kDropout, OpType::kIdentity}) {
    u = Op(g, op, {V(u)});
  }
  u = Op(g, OpType::kLeakyRelu, {V(u)}, {{"alpha", 0.2f}});
  u = Op(g, OpType::kClip, {V(u)}, {{"min", 0.f}, {"max", 6.f}});
  u = Op(g, OpType::kScalarMul, {V(u)}, {{"scalar", 0.5f}});
  const NodeId to_int = Op(g, OpType::kCast, {V(u)}, {{"to", int64_t{7}}});
  u = Op(g, OpType::kCast, {V(to_int)}, {{"to", int64_t{1}}});
  const NodeId flat = Op(g, OpType::kFlatten, {V(u)}, {{"axis", int64_t{1}}});  // [1, 64]
  const NodeId ln_s = Must(g.AddWeight("ln.s", {64}, {}));
  const NodeId ln = Op(g, OpType::kLayerNorm, {V(flat), V(ln_s), V(ln_s)}, {{"epsilon", 1e-6f}});
  const NodeId sm = Op(g, OpType::kSoftmax, {V(ln)}, {{"axis", int64_t{-1}}});
  const NodeId c = Must(g.AddConstant("c", F({1}, {2.f})));
  NodeId e = sm;
  for (OpType op : {OpType::kAdd, OpType::kSub, OpType::kMul, OpType::kDiv, OpType::kPow})
    e = Op(g, op, {V(e), V(c)});
  std::vector<int64_t> mask(64);
  for (int i = 0; i < 64; ++i) mask[i] = i % 3 == 0;
  auto cond = std::make_shared<HostTensor>(DType::kBool, Shape{64});
  for (int i = 0; i < 64; ++i) cond->data<uint8_t>()[i] = static_cast<uint8_t>(mask[i]);
  const NodeId cn = Must(g.AddConstant("cond", cond));
  const NodeId wh = Op(g, OpType::kWhere, {V(cn), V(e), V(sm)});
  const NodeId w1 = Must(g.AddWeight("w1", {64, 10}, {}));
  const NodeId w2 = Must(g.AddWeight("w2", {10, 64}, {}));
  const NodeId bias = Must(g.AddWeight("bias", {10}, {}));
  const NodeId mm = Op(g, OpType::kMatMul, {V(wh), V(w1)});
  const NodeId gemm =
      Op(g, OpType::kGemm, {V(wh), V(w2), V(bias)}, {{"transB", int64_t{1}}, {"alpha", 0.5f}});
  const NodeId cat = Op(g, OpType::kConcat, {V(mm), V(gemm)}, {{"axis", int64_t{1}}});  // [1, 20]
  const NodeId sp = Op(g, OpType::kSplit, {V(cat)}, {{"axis", int64_t{1}}, {"split", Ints{5, 15}}});
  NodeId r = Op(g, OpType::kReshape, {V(sp, 0)}, {{"shape", Ints{5, -1}}});
  r = Op(g, OpType::kTranspose, {V(r)}, {{"perm", Ints{1, 0}}});
  r = Op(g, OpType::kSqueeze, {V(r)}, {{"axes", Ints{0}}});
  r = Op(g, OpType::kUnsqueeze, {V(r)}, {{"axes", Ints{0}}});
  r = Op(g, OpType::kPad, {V(r)}, {{"pads", Ints{0, 1, 0, 2}}, {"value", 1.5f}});  // [1, 8]
  r = Op(g, OpType::kSlice, {V(r)},
         {{"starts", Ints{1}}, {"ends", Ints{7}}, {"axes", Ints{1}}, {"steps", Ints{2}}});
  const NodeId rev =
      Op(g, OpType::kSlice, {V(sp, 1)},
         {{"starts", Ints{-1}}, {"ends", Ints{-100}}, {"axes", Ints{1}}, {"steps", Ints{-1}}});
  const NodeId emb = Must(g.AddWeight("emb", {10, 4}, {}));
  const NodeId idx = Must(g.AddConstant("idx", I64({2}, {1, 7})));
  const NodeId g1 = Op(g, OpType::kGather, {V(emb), V(ids)}, {{"axis", int64_t{0}}});
  const NodeId g2 = Op(g, OpType::kGather, {V(emb), V(idx)});
  const NodeId rm =
      Op(g, OpType::kReduceMean, {V(g1)}, {{"axes", Ints{1}}, {"keepdims", int64_t{0}}});
  const NodeId rs = Op(g, OpType::kReduceSum, {V(g2)}, {{"axes", Ints{-1}}});
  const NodeId rx = Op(g, OpType::kReduceMax, {V(g2)});
  const NodeId hs =
      Must(g.AddOpaque("HardSwish", "", {V(gap)}, {}, {F32({1, 4, 1, 1})}, "hardswish"));
  const NodeId lp =
      Must(g.AddOpaque("LpNormalization", "", {V(flat)}, {{"axis", int64_t{1}}, {"p", int64_t{2}}},
                       {F32({1, 64})}, "lpnorm"));
  for (auto [name, v] : std::vector<std::pair<std::string, NodeId>>{{"out_slice", r},
                                                                    {"out_rev", rev},
                                                                    {"out_mean", rm},
                                                                    {"out_sum", rs},
                                                                    {"out_max", rx},
                                                                    {"out_hs", hs},
                                                                    {"out_lp", lp},
                                                                    {"out_pool", gap}}) {
    EXPECT_TRUE(g.AddOutput(name, V(v)).ok());
  }
  EXPECT_TRUE(g.Validate().ok()) << g.Validate().message();
  return g;
}

}  // namespace rewire::testing

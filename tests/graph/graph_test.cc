#include "graph/graph.h"

#include <gtest/gtest.h>

#include "graph/weights.h"
#include "tests/graph/test_util.h"

namespace rewire {
namespace {

using testing::F32;
using testing::Must;
using testing::V;

// x[1,3,8,8] -> conv(w[4,3,3,3], pad 1) -> relu -> out
Graph SmallConvNet() {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({1, 3, 8, 8})));
  const NodeId w = Must(g.AddWeight("w", {4, 3, 3, 3}, WeightInit{-0.1f, 0.1f, 7}));
  const NodeId c =
      Must(g.AddOp(OpType::kConv2D, {V(x), V(w)}, {{"pads", Ints{1, 1, 1, 1}}}, "conv"));
  const NodeId r = Must(g.AddOp(OpType::kRelu, {V(c)}, {}, "relu"));
  EXPECT_TRUE(g.AddOutput("out", V(r)).ok());
  return g;
}

// Found by the onnx fuzzer (UBSan: signed overflow in NumElements): an initializer of
// dimensions [4, 2, ..., 5018397476422262507, ..., 0, ...] multiplied past int64 before
// reaching its 0. The overflow is only visible under UBSan; the test pins the result and the
// weight that carries it.
TEST(Graph, AZeroSizedDimensionAfterHugeOnesHasNoElements) {
  const Shape shape = {int64_t{1} << 40, int64_t{3} << 40, 0, int64_t{1} << 50};
  EXPECT_EQ(NumElements(shape), 0);
  Graph g;
  auto w =
      g.AddWeightData("w", std::make_shared<const HostTensor>(HostTensor(DType::kFloat32, shape)));
  EXPECT_TRUE(w.ok()) << w.status().message();
}

TEST(Graph, BuildsAndInfersTypes) {
  Graph g = SmallConvNet();
  EXPECT_EQ(g.num_nodes(), 4u);
  EXPECT_EQ(g.NumOperators(), 2);
  EXPECT_EQ(g.NumParameters(), 4 * 3 * 3 * 3);
  EXPECT_EQ(g.type(g.outputs()[0].value), F32({1, 4, 8, 8}));
  EXPECT_TRUE(g.Validate().ok()) << g.Validate().message();
}

TEST(Graph, AddOpCanonicalisesAttributes) {
  Graph g = SmallConvNet();
  const Node& conv = g.node(g.FindNode("conv"));
  EXPECT_EQ(conv.attrs.GetInts("strides"), (Ints{1, 1}));
  EXPECT_EQ(conv.attrs.GetInts("dilations"), (Ints{1, 1}));
  EXPECT_EQ(conv.attrs.GetInt("group"), 1);
  EXPECT_EQ(conv.attrs.GetString("activation"), "none");
}

TEST(Graph, RejectsImpossibleShapesAndLeavesGraphUnchanged) {
  Graph g = SmallConvNet();
  const size_t before = g.num_nodes();
  const NodeId w = Must(g.AddWeight("w2", {4, 5, 3, 3}, {}));
  auto bad = g.AddOp(OpType::kConv2D, {V(g.inputs()[0]), V(w)}, {}, "badconv");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("badconv"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("input channels"), std::string::npos)
      << bad.status().message();
  EXPECT_EQ(g.num_nodes(), before + 1);  // only the weight
  EXPECT_TRUE(g.Validate().ok());
}

TEST(Graph, RejectsWrongArityUnknownAttributesAndDanglingInputs) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({2, 3})));
  EXPECT_FALSE(g.AddOp(OpType::kAdd, {V(x)}).ok());
  auto unknown = g.AddOp(OpType::kRelu, {V(x)}, {{"alpha", 1.f}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown attribute 'alpha'"), std::string::npos);
  EXPECT_FALSE(g.AddOp(OpType::kRelu, {V(99)}).ok());
  EXPECT_FALSE(g.AddOp(OpType::kRelu, {V(x, 1)}).ok());
  EXPECT_FALSE(g.AddOp(OpType::kInput, {}).ok());
}

TEST(Graph, RejectsDuplicateLeafAndOutputNames) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({2})));
  EXPECT_FALSE(g.AddInput("x", F32({2})).ok());
  EXPECT_FALSE(g.AddWeight("x", {2}, {}).ok());
  EXPECT_FALSE(g.AddInput("", F32({2})).ok());
  EXPECT_FALSE(g.AddInput("z", F32({0, 2})).ok());
  EXPECT_TRUE(g.AddOutput("y", V(x)).ok());
  EXPECT_FALSE(g.AddOutput("y", V(x)).ok());
}

TEST(Graph, ConstantDataMustMatchItsType) {
  Graph g;
  auto t = std::make_shared<HostTensor>(DType::kFloat32, Shape{2, 2});
  t->bytes.resize(3);
  EXPECT_FALSE(g.AddConstant("c", t).ok());
  EXPECT_FALSE(g.AddConstant("d", nullptr).ok());
  auto i = std::make_shared<const HostTensor>(HostTensor::FromInt64s({2}, {1, 2}));
  EXPECT_TRUE(g.AddConstant("e", i).ok());
  EXPECT_FALSE(g.AddWeightData("f", i).ok());  // weights are float32
}

TEST(Graph, TopologicalOrderPutsProducersFirst) {
  Graph g = SmallConvNet();
  const auto order = g.TopologicalOrder();
  ASSERT_EQ(order.size(), g.num_nodes());
  std::vector<size_t> pos(g.id_bound());
  for (size_t i = 0; i < order.size(); ++i) pos[order[i]] = i;
  for (NodeId id : g.NodeIds()) {
    for (const ValueRef& in : g.node(id).inputs) EXPECT_LT(pos[in.node], pos[id]);
  }
}

TEST(Graph, CopiesShareNodesUntilWritten) {
  Graph a = SmallConvNet();
  Graph b = a;
  EXPECT_EQ(&a.node(0), &b.node(0));  // shared record
  const NodeId r = b.FindNode("relu");
  Must(b.AddOp(OpType::kSigmoid, {V(r)}, {}, "extra"));
  EXPECT_EQ(a.num_nodes(), 4u);
  EXPECT_EQ(b.num_nodes(), 5u);
  EXPECT_EQ(a.node(r).users[0].size(), 0u);  // a's relu is untouched
  EXPECT_EQ(b.node(r).users[0].size(), 1u);
  EXPECT_TRUE(a.Validate().ok());
  EXPECT_TRUE(b.Validate().ok());
}

TEST(Graph, LazyWeightsMaterialiseDeterministically) {
  Graph g = SmallConvNet();
  const Node& w = g.node(g.FindNode("w"));
  HostTensorPtr d1 = MaterializeData(w);
  HostTensorPtr d2 = MaterializeData(w);
  ASSERT_EQ(d1->numel(), 108);
  EXPECT_EQ(d1->bytes, d2->bytes);
  float lo = 1, hi = -1;
  for (int64_t i = 0; i < d1->numel(); ++i) {
    lo = std::min(lo, d1->data<float>()[i]);
    hi = std::max(hi, d1->data<float>()[i]);
  }
  EXPECT_GE(lo, -0.1f);
  EXPECT_LE(hi, 0.1f);
  EXPECT_LT(lo, hi);
  const HostTensor other = UniformTensor({4, 3, 3, 3}, -0.1f, 0.1f, 8);
  EXPECT_NE(other.bytes, d1->bytes);
}

TEST(Graph, OpaqueNodesCarryTheirTypeAndOutputs) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({2, 3})));
  const NodeId o = Must(g.AddOpaque("Neg", "", {V(x)}, {}, {F32({2, 3})}, "neg"));
  EXPECT_EQ(g.node(o).TypeName(), "Neg");
  EXPECT_EQ(g.node(o).op, OpType::kOpaque);
  EXPECT_FALSE(g.AddOpaque("", "", {V(x)}, {}, {F32({2})}).ok());
  EXPECT_FALSE(g.AddOpaque("Neg", "", {V(x)}, {}, {}).ok());
  EXPECT_TRUE(g.Validate().ok());
}

TEST(OpInfo, ComesFromTheOneList) {
  EXPECT_EQ(OpName(OpType::kConv2D), "Conv2D");
  EXPECT_EQ(GetOpInfo(OpType::kConv2D).onnx_name, "Conv");
  EXPECT_EQ(OpTypeFromName("MatMul"), OpType::kMatMul);
  EXPECT_EQ(OpTypeFromOnnx("", "BatchNormalization"), OpType::kBatchNorm);
  EXPECT_EQ(OpTypeFromOnnx("ai.rewire", "Enlarge"), OpType::kEnlarge);
  EXPECT_FALSE(OpTypeFromOnnx("", "Enlarge").has_value());
  EXPECT_FALSE(OpTypeFromName("NoSuchOp").has_value());
  for (int i = 0; i < kNumOpTypes; ++i) EXPECT_EQ(GetOpInfo(static_cast<OpType>(i)).index, i);
}

}  // namespace
}  // namespace rewire

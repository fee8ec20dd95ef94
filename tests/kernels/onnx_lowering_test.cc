// The standard-ONNX forms that the exporter writes for rewire's fused ops (activations, Gelu,
// ScalarMul, Enlarge, MergeGConv) compute what the fused ops compute: the exported file, read
// back, matches the original graph on the reference executor.

#include <gtest/gtest.h>

#include "graph/onnx/onnx_io.h"
#include "kernels/executor.h"
#include "tests/graph/onnx_test_graphs.h"
#include "tests/graph/test_util.h"

namespace rewire {
namespace {

using namespace rewire::testing;  // NOLINT: Op, Must, V, F32

void ExpectSameAfterStandardExport(const Graph& g) {
  auto bytes = ExportOnnxBytes(g);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto back = ImportOnnxBytes(*bytes, "standard.onnx");
  ASSERT_TRUE(back.ok()) << back.status().message();
  const Equivalence e = CheckEquivalent(g, *back, 1e-5);
  EXPECT_TRUE(e.verified) << e.message << " (max rel " << e.max_rel << ")";
}

TEST(OnnxLowering, EveryOpComputesTheSame) { ExpectSameAfterStandardExport(testing::EveryOp()); }

TEST(OnnxLowering, FusedActivationsAndComputedWeights) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({1, 4, 6, 6})));
  const NodeId wi = Must(g.AddInput("w", F32({4, 2, 3, 3})));
  const NodeId enl = Op(g, OpType::kEnlarge, {V(wi)}, {{"kernel_shape", Ints{5, 5}}});
  const NodeId merged =
      Op(g, OpType::kMergeGConv, {V(wi)}, {{"group", int64_t{2}}, {"count", int64_t{2}}});
  const NodeId a = Op(
      g, OpType::kConv2D, {V(x), V(enl)},
      {{"pads", Ints{2, 2, 2, 2}}, {"group", int64_t{2}}, {"activation", std::string("sigmoid")}});
  const NodeId b = Op(g, OpType::kConv2D, {V(x), V(merged)},
                      {{"pads", Ints{1, 1, 1, 1}}, {"activation", std::string("gelu")}});
  const NodeId mw = Must(g.AddWeight("mw", {6, 5}, {-0.5f, 0.5f, 3}));
  const NodeId flat = Op(g, OpType::kReshape, {V(b)}, {{"shape", Ints{24, 6}}});
  const NodeId mm = Op(g, OpType::kMatMul, {V(flat), V(mw)}, {{"activation", std::string("tanh")}});
  const NodeId sm = Op(g, OpType::kScalarMul, {V(mm)}, {{"scalar", 3.f}});
  ASSERT_TRUE(g.AddOutput("a", V(a)).ok());
  ASSERT_TRUE(g.AddOutput("m", V(sm)).ok());
  ExpectSameAfterStandardExport(g);
}

}  // namespace
}  // namespace rewire

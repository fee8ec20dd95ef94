// The kernels ONNX Runtime runs after its own fusions (runtimes/ort_kernels.h), on a graph it
// fuses: rewire's Conv with a fused ReLU is written as Conv then Relu, its Gelu in Erf's form,
// and ONNX Runtime runs each as one kernel. Skipped only when tools/ort has no onnxruntime-node.

#include "runtimes/ort_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "graph/onnx/onnx_io.h"
#include "kernels/executor.h"
#include "tests/graph/onnx_test_graphs.h"
#include "tests/graph/test_util.h"

namespace rewire {
namespace {

using namespace rewire::testing;  // NOLINT: Op, Must, V, F32

/// Conv+ReLU, Conv, Gelu; `gelu` false leaves the Gelu out.
Graph ConvNet(bool gelu) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({1, 16, 28, 28})));
  const NodeId w = Must(g.AddWeight("w", {16, 16, 3, 3}, {-0.1f, 0.1f, 1}));
  const NodeId a = Op(g, OpType::kConv2D, {V(x), V(w)},
                      {{"pads", Ints{1, 1, 1, 1}}, {"activation", std::string("relu")}});
  NodeId y = Op(g, OpType::kConv2D, {V(a), V(w)}, {{"pads", Ints{1, 1, 1, 1}}});
  if (gelu) y = Op(g, OpType::kGelu, {V(y)});
  EXPECT_TRUE(g.AddOutput("y", V(y)).ok());
  return g;
}

class OrtKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!OrtInstalled())
      GTEST_SKIP() << "ONNX Runtime is not installed in tools/ort (run scripts/install-deps.sh)";
    OrtRunnerOptions o;
    o.threads = 1;
    auto ort = OrtRunner::Start(o);
    ASSERT_TRUE(ort.ok()) << ort.status().message();
    ort_ = std::move(*ort);
  }
  OrtKernelProfile Profile(const Graph& g) {
    auto bytes = ExportOnnxBytes(g);
    EXPECT_TRUE(bytes.ok()) << bytes.status().message();
    NamedTensors feed;
    for (const auto& [name, t] : RandomInputs(g, 1)) feed.emplace_back(name, *t);
    auto p = ProfileKernels(*ort_, *bytes, "the test graph", feed, 1, 3);
    EXPECT_TRUE(p.ok()) << p.status().message();
    return p.ok() ? *p : OrtKernelProfile{};
  }
  std::unique_ptr<OrtRunner> ort_;
};

TEST_F(OrtKernels, AFusedGraphRunsFewerKernelsThanItsOnnxNodesWithTheirSignatures) {
  const Graph g = ConvNet(true);
  const std::string onnx = *ExportOnnxBytes(g);
  ASSERT_NE(onnx.find("Erf"), std::string::npos) << "the file writes Gelu in Erf's form";
  ASSERT_NE(onnx.find("Relu"), std::string::npos) << "the file writes the ReLU as its own node";
  const OrtKernelProfile p = Profile(g);
  ASSERT_FALSE(p.kernels.empty());
  bool conv_relu = false, gelu = false;
  for (const OrtKernel& k : p.kernels) {
    EXPECT_NE(k.op, "Relu") << k.Signature();
    EXPECT_NE(k.op, "Erf") << k.Signature();
    EXPECT_GE(k.median_us, 0);
    if (k.op == "Conv" && k.attrs.find("activation=Relu") != std::string::npos) {
      conv_relu = true;
      // The signature names the op as it runs, its attributes and its shapes.
      const std::string sig = k.Signature();
      EXPECT_NE(sig.find("Conv(activation=Relu"), std::string::npos) << sig;
      EXPECT_NE(sig.find("float[16x16x3x3]"), std::string::npos) << sig;
      EXPECT_NE(sig.find("pads=1x1x1x1"), std::string::npos) << sig;
    }
    if (k.op == "Gelu") {
      gelu = true;
      EXPECT_EQ(k.domain, "com.microsoft") << k.Signature();
      EXPECT_NE(k.Signature().find("[1x16x28x28]"), std::string::npos) << k.Signature();
    }
  }
  EXPECT_TRUE(conv_relu) << "no Conv with a fused ReLU among " << p.kernels.size() << " kernels";
  EXPECT_TRUE(gelu) << "no fused Gelu among " << p.kernels.size() << " kernels";
  EXPECT_GT(p.median_ms, 0);
  EXPECT_GT(p.kernel_ms, 0);
}

TEST_F(OrtKernels, TheDiffOfTwoGraphsNamesTheKernelsThatChanged) {
  const OrtKernelProfile with = Profile(ConvNet(true));
  const OrtKernelProfile without = Profile(ConvNet(false));
  EXPECT_TRUE(DiffKernels(with, with).empty());
  const std::vector<KernelChange> diff = DiffKernels(with, without);
  ASSERT_FALSE(diff.empty());
  bool gelu_gone = false;
  for (const KernelChange& c : diff) {
    EXPECT_NE(c.before, c.after) << c.signature;
    if (c.signature.find("Gelu") != std::string::npos) {
      gelu_gone = c.before == 1 && c.after == 0;
      EXPECT_GE(c.before_us, 0);
      EXPECT_EQ(c.after_us, 0);
    }
  }
  EXPECT_TRUE(gelu_gone);
  EXPECT_GT(with.Counts().size(), without.Counts().size());
}

TEST(OrtKernelProfileByType, SumsEachKernelTypeCostliestFirst) {
  OrtKernelProfile p;
  auto kernel = [&p](const std::string& domain, const std::string& op, double us) {
    OrtKernel k;
    k.domain = domain;
    k.op = op;
    k.median_us = us;
    p.kernels.push_back(k);
  };
  kernel("com.microsoft.nchwc", "Conv", 300);
  kernel("com.microsoft.nchwc", "ReorderOutput", 40);
  kernel("", "Split", 50);
  kernel("com.microsoft.nchwc", "Conv", 200);
  kernel("com.microsoft.nchwc", "ReorderInput", 30);
  kernel("com.microsoft.nchwc", "ReorderInput", 30);
  kernel("", "Conv", 5);  // the plain one is another type
  const std::vector<OrtKernelProfile::TypeTotal> t = p.ByType();
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[0].type, "com.microsoft.nchwc:Conv");
  EXPECT_DOUBLE_EQ(t[0].us, 500);
  EXPECT_EQ(t[0].kernels, 2);
  EXPECT_EQ(t[1].type, "com.microsoft.nchwc:ReorderInput");
  EXPECT_DOUBLE_EQ(t[1].us, 60);
  EXPECT_EQ(t[1].kernels, 2);
  EXPECT_EQ(t[2].type, "Split");
  EXPECT_EQ(t[3].type, "com.microsoft.nchwc:ReorderOutput");
  EXPECT_EQ(t[4].type, "Conv");
  EXPECT_DOUBLE_EQ(t[4].us, 5);
  EXPECT_TRUE(OrtKernelProfile{}.ByType().empty());
}

TEST_F(OrtKernels, ASplitBetweenBlockedConvolutionsRunsLayoutReorders) {
  // Conv (32 channels), split into two 16-channel halves, a Conv on each, added. ONNX Runtime
  // runs the convolutions in its blocked NCHWc layout, which Split does not take: it converts
  // out of the layout before the Split and back into it after, in kernels no node of the graph
  // names. ByType shows them.
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({1, 32, 28, 28})));
  const NodeId w = Must(g.AddWeight("w", {32, 32, 1, 1}, {-0.1f, 0.1f, 1}));
  const NodeId v = Must(g.AddWeight("v", {16, 16, 3, 3}, {-0.1f, 0.1f, 2}));
  const NodeId c = Op(g, OpType::kConv2D, {V(x), V(w)}, {});
  const NodeId sp = Op(g, OpType::kSplit, {V(c)}, {{"axis", int64_t{1}}, {"split", Ints{16, 16}}});
  const NodeId a = Op(g, OpType::kConv2D, {V(sp, 0), V(v)}, {{"pads", Ints{1, 1, 1, 1}}});
  const NodeId b = Op(g, OpType::kConv2D, {V(sp, 1), V(v)}, {{"pads", Ints{1, 1, 1, 1}}});
  ASSERT_TRUE(g.AddOutput("y", V(Op(g, OpType::kAdd, {V(a), V(b)}))).ok());
  const OrtKernelProfile p = Profile(g);
  const std::vector<OrtKernelProfile::TypeTotal> t = p.ByType();
  double sum = 0;
  int kernels = 0;
  for (const auto& type : t) {
    sum += type.us;
    kernels += type.kernels;
  }
  EXPECT_NEAR(sum / 1000, p.kernel_ms, 1e-6 + 1e-9 * p.kernel_ms);
  EXPECT_EQ(kernels, static_cast<int>(p.kernels.size()));
  for (size_t i = 1; i < t.size(); ++i) EXPECT_GE(t[i - 1].us, t[i].us);
  auto has = [&t](const std::string& type) {
    return std::any_of(t.begin(), t.end(), [&](const auto& x) { return x.type == type; });
  };
  EXPECT_TRUE(has("Split"));
  if (!has("com.microsoft.nchwc:Conv")) {
    GTEST_SKIP() << "ONNX Runtime does not run this CPU's convolutions blocked (no AVX2)";
  }
  EXPECT_TRUE(has("com.microsoft.nchwc:ReorderOutput"));
  EXPECT_TRUE(has("com.microsoft.nchwc:ReorderInput"));
}

}  // namespace
}  // namespace rewire

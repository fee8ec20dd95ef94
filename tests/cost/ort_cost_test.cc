// The ort cost model: ops timed in ONNX Runtime as one-node models, memoised in the SQLite cost
// cache like the cpu backend. Skipped only when tools/ort has no onnxruntime-node.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cost/cost_cache.h"
#include "cost/cost_registry.h"
#include "cost/measured_cost.h"
#include "cost/ort_cost.h"
#include "graph/onnx/onnx_io.h"
#include "kernels/executor.h"
#include "runtimes/ort_runner.h"
#include "tests/graph/onnx_test_graphs.h"
#include "tests/graph/test_util.h"

namespace rewire {
namespace {

using namespace rewire::testing;  // NOLINT: Op, Must, V, F32

Graph ConvNet() {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({1, 16, 28, 28})));
  const NodeId w = Must(g.AddWeight("w", {16, 16, 3, 3}, {-0.1f, 0.1f, 1}));
  const NodeId a = Op(g, OpType::kConv2D, {V(x), V(w)},
                      {{"pads", Ints{1, 1, 1, 1}}, {"activation", std::string("relu")}});
  const NodeId b = Op(g, OpType::kConv2D, {V(a), V(w)}, {{"pads", Ints{1, 1, 1, 1}}});
  const NodeId c = Op(g, OpType::kGelu, {V(b)});
  EXPECT_TRUE(g.AddOutput("y", V(c)).ok());
  return g;
}

TEST(OrtCost, MeasuresOpsAndReusesTheCache) {
  if (!OrtInstalled())
    GTEST_SKIP() << "ONNX Runtime is not installed in tools/ort (run scripts/install-deps.sh)";
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("rewire-ort-cost-test-" + std::to_string(::getpid()) + ".sqlite"))
                               .string();
  OrtCostOptions options;
  options.num_threads = 1;
  options.timing.repeats = 3;
  double first = 0;
  {
    auto cache = CostCache::Open(path);
    ASSERT_TRUE(cache.ok()) << cache.status().message();
    auto model = OrtCostModel::Create(options, *cache);
    ASSERT_TRUE(model.ok()) << model.status().message();
    EXPECT_NE((*model)->Name().find("ort("), std::string::npos);
    auto ms = GraphCostMs(**model, ConvNet());
    ASSERT_TRUE(ms.ok()) << ms.status().message();
    first = *ms;
    EXPECT_GT(first, 0);
    EXPECT_EQ((*model)->measurements().measured, 3);  // conv+relu, conv, gelu
  }
  {
    auto cache = CostCache::Open(path);
    ASSERT_TRUE(cache.ok());
    auto model = OrtCostModel::Create(options, *cache);
    ASSERT_TRUE(model.ok());
    auto ms = GraphCostMs(**model, ConvNet());
    ASSERT_TRUE(ms.ok());
    EXPECT_EQ(*ms, first);
    EXPECT_EQ((*model)->measurements().measured, 0);
    EXPECT_EQ((*model)->measurements().cache_hits, 3);
  }
  std::filesystem::remove(path);
}

TEST(OrtRunner, AProfiledSessionReportsItsKernelTimesWithinEachRun) {
  if (!OrtInstalled())
    GTEST_SKIP() << "ONNX Runtime is not installed in tools/ort (run scripts/install-deps.sh)";
  const Graph g = ConvNet();
  auto bytes = ExportOnnxBytes(g);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("rewire-ort-profile-test-" + std::to_string(::getpid()) + ".onnx"))
                               .string();
  {
    std::ofstream f(path, std::ios::binary);
    f << *bytes;
  }
  OrtRunnerOptions ro;
  ro.threads = 1;
  auto runner = OrtRunner::Start(ro);
  ASSERT_TRUE(runner.ok()) << runner.status().message();
  NamedTensors feed;
  for (const auto& [name, t] : RandomInputs(g, 1)) feed.emplace_back(name, *t);

  ASSERT_TRUE((*runner)->Load("p", path, /*profile=*/true).ok());
  ASSERT_TRUE((*runner)->Run("p", feed).ok());  // profiled too, not reported as a timed run
  auto t = (*runner)->Time("p", feed, /*warmups=*/2, /*repeats=*/4);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->times_ms.size(), 4u);
  ASSERT_EQ(t->kernel_ms.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    // The kernels run inside the run that the runner timed from outside.
    EXPECT_GT(t->kernel_ms[i], 0) << i;
    EXPECT_LE(t->kernel_ms[i], t->times_ms[i]) << i;
  }
  EXPECT_GT(Median(t->kernel_ms), 0);
  // Profiling ended with that request; the profile file was read and removed.
  auto again = (*runner)->Time("p", feed, 0, 2);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_TRUE(again->kernel_ms.empty());
  // A session loaded without profiling reports wall times only.
  ASSERT_TRUE((*runner)->Load("q", path).ok());
  auto plain = (*runner)->Time("q", feed, 0, 2);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_TRUE(plain->kernel_ms.empty());
  EXPECT_EQ(plain->times_ms.size(), 2u);
  std::filesystem::remove(path);
}

TEST(OrtCost, IsAKnownBackend) {
  bool listed = false;
  for (const auto& k : CostModelKinds()) listed = listed || k == "ort";
  EXPECT_TRUE(listed);
}

}  // namespace
}  // namespace rewire

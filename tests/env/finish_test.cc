// FinishSearch: the end of every optimisation (fold, cost, verify, predictions, ONNX).

#include "env/finish.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "graph/onnx/onnx_io.h"
#include "tests/ruleset/shipped_rules.h"

namespace rewire {
namespace {

/// y = (x @ w1) @ w2 with x [2, 3], or, with `merged`, the same as x @ (w1 @ w2): the product
/// of the two weights is a weight-only subgraph that folding computes ahead of time.
/// `broken` leaves out w2 (y = x @ w1 @ w1-shaped junk): a graph that computes something else.
Graph Chain(bool merged, bool broken = false) {
  Graph g;
  const NodeId x = *g.AddInput("x", {DType::kFloat32, {2, 3}});
  const NodeId w1 = *g.AddWeight("w1", {3, 4}, {});
  const NodeId w2 = *g.AddWeight("w2", {4, 5}, {});
  NodeId y;
  if (broken) {
    const NodeId m = *g.AddOp(OpType::kMatMul, {{x, 0}, {w1, 0}});
    y = *g.AddOp(OpType::kMatMul, {{m, 0}, {w2, 0}});
    y = *g.AddOp(OpType::kRelu, {{y, 0}});
  } else if (merged) {
    const NodeId w = *g.AddOp(OpType::kMatMul, {{w1, 0}, {w2, 0}});
    y = *g.AddOp(OpType::kMatMul, {{x, 0}, {w, 0}});
  } else {
    const NodeId m = *g.AddOp(OpType::kMatMul, {{x, 0}, {w1, 0}});
    y = *g.AddOp(OpType::kMatMul, {{m, 0}, {w2, 0}});
  }
  EXPECT_TRUE(g.AddOutput("y", {y, 0}).ok());
  return g;
}

std::string ReadBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(FinishSearch, FoldsCostsVerifiesPredictsAndExports) {
  auto cost = testing::AnalyticCost();
  ASSERT_TRUE(cost);
  const Graph input = Chain(false);
  const std::string onnx_path = (std::filesystem::temp_directory_path() /
                                 ("rewire_finish_" + std::to_string(::getpid()) + ".onnx"))
                                    .string();
  FinishOptions o;
  o.export_onnx = true;
  o.onnx_path = onnx_path;
  CostModelOptions other;
  other.kind = "analytic";
  other.device = "h200";
  other.devices_dir = std::string(REWIRE_SOURCE_DIR) + "/configs/devices";
  o.also_cost = {other};
  auto done = FinishSearch(input, Chain(true), *cost, o);
  ASSERT_TRUE(done.ok()) << done.status().message();

  EXPECT_EQ(done->folded_ops, 1);  // w1 @ w2 became a weight
  EXPECT_EQ(done->graph.NumOperators(), 1);
  EXPECT_TRUE(done->equivalence.verified) << done->equivalence.message;
  EXPECT_LE(done->equivalence.max_rel, o.rtol);
  EXPECT_DOUBLE_EQ(done->final_cost_ms, *GraphCostMs(*cost, done->graph));
  EXPECT_LT(done->final_cost_ms, *GraphCostMs(*cost, input));

  ASSERT_EQ(done->predictions.size(), 1u);
  auto h200 = MakeCostModel(other);
  ASSERT_TRUE(h200.ok());
  EXPECT_EQ(done->predictions[0].cost_model, (*h200)->Name());
  EXPECT_DOUBLE_EQ(done->predictions[0].initial_ms, *GraphCostMs(**h200, input));
  EXPECT_DOUBLE_EQ(done->predictions[0].final_ms, *GraphCostMs(**h200, done->graph));

  // The ONNX bytes are the folded graph's, and the file holds them.
  ASSERT_FALSE(done->onnx.empty());
  EXPECT_EQ(done->onnx, *ExportOnnxBytes(done->graph));
  EXPECT_EQ(ReadBytes(onnx_path), done->onnx);
  auto back = ImportOnnxBytes(done->onnx);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->NumOperators(), 1);
  std::filesystem::remove(onnx_path);
}

TEST(FinishSearch, AResultThatDiffersIsDataAndNothingIsExported) {
  auto cost = testing::AnalyticCost();
  ASSERT_TRUE(cost);
  const std::string onnx_path = (std::filesystem::temp_directory_path() /
                                 ("rewire_finish_bad_" + std::to_string(::getpid()) + ".onnx"))
                                    .string();
  FinishOptions o;
  o.export_onnx = true;
  o.onnx_path = onnx_path;
  auto done = FinishSearch(Chain(false), Chain(false, /*broken=*/true), *cost, o);
  ASSERT_TRUE(done.ok()) << done.status().message();
  EXPECT_FALSE(done->equivalence.verified);
  EXPECT_FALSE(done->equivalence.message.empty());
  EXPECT_GT(done->final_cost_ms, 0);
  EXPECT_TRUE(done->onnx.empty());
  EXPECT_FALSE(std::filesystem::exists(onnx_path));
}

TEST(FinishSearch, ExportOnlyWhenAsked) {
  auto cost = testing::AnalyticCost();
  ASSERT_TRUE(cost);
  auto done = FinishSearch(Chain(false), Chain(true), *cost, FinishOptions{});
  ASSERT_TRUE(done.ok()) << done.status().message();
  EXPECT_TRUE(done->equivalence.verified);
  EXPECT_TRUE(done->onnx.empty());
  EXPECT_TRUE(done->predictions.empty());
}

TEST(FinishSearch, BadOtherCostModelAndUnwritablePathAreErrors) {
  auto cost = testing::AnalyticCost();
  ASSERT_TRUE(cost);
  FinishOptions o;
  CostModelOptions quantum;
  quantum.kind = "quantum";
  o.also_cost = {quantum};
  auto bad = FinishSearch(Chain(false), Chain(true), *cost, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("quantum"), std::string::npos) << bad.status().message();
  FinishOptions p;
  p.onnx_path = "/nonexistent-dir/x.onnx";
  auto unwritable = FinishSearch(Chain(false), Chain(true), *cost, p);
  ASSERT_FALSE(unwritable.ok());
  EXPECT_NE(unwritable.status().message().find("/nonexistent-dir/x.onnx"), std::string::npos);
}

}  // namespace
}  // namespace rewire

// Cost models: analytic costs against hand-computed rooflines, graph cost = sum of node costs,
// O(diff) candidate costs equal to full recomputation over every rule match of bert and
// inceptionv3, device profiles with clear errors, the cpu backend, and the cuda backend's clean
// refusal where it cannot run.

#include "cost/cost_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "cost/analytic_cost.h"
#include "cost/cost_registry.h"
#include "cost/cpu_cost.h"
#include "cost/cuda/cuda_cost.h"
#include "cost/device_profile.h"
#include "graph/models/zoo.h"
#include "graph/rules/candidates.h"
#include "graph/rules/matcher.h"
#include "graph/rules/rule.h"
#include "tests/cost/shipped_rules.h"

namespace rewire {
namespace {

const std::string kSourceDir = REWIRE_SOURCE_DIR;
const std::string kDevicesDir = kSourceDir + "/configs/devices";

/// 1 TFLOP/s, 100 GB/s, 10 us per launch: round numbers for hand-computed rooflines.
DeviceProfile UnitDevice() {
  auto p = ParseDeviceProfile(
      "name = \"unit\"\n"
      "peak_fp32_tflops = 1.0\n"
      "memory_bandwidth_gbs = 100\n"
      "launch_overhead_us = 10\n",
      "unit.toml");
  EXPECT_TRUE(p.ok()) << p.status().message();
  return *p;
}

TensorType F32(Shape s) { return TensorType{DType::kFloat32, std::move(s)}; }

double Cost(CostModel& m, const Graph& g, NodeId id) {
  auto c = m.NodeCostMs(g, id);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? *c : -1;
}

// ---------------------------------------------------------------------------- analytic

TEST(AnalyticCost, MatMulIsComputeBound) {
  Graph g;
  const NodeId x = *g.AddInput("x", F32({64, 1024}));
  const NodeId w = *g.AddWeight("w", {1024, 1024}, {});
  const NodeId mm = *g.AddOp(OpType::kMatMul, {{x, 0}, {w, 0}});
  AnalyticCostModel m(UnitDevice());
  // flops 2*64*1024*1024 = 134217728 -> 0.134217728 ms; bytes 4*(65536+1048576+65536) -> 0.04718592
  // ms.
  EXPECT_NEAR(Cost(m, g, mm), 0.01 + 0.134217728, 1e-12);
  const OpWork work = AnalyticWork(g, g.node(mm));
  EXPECT_DOUBLE_EQ(work.flops, 134217728.0);
  EXPECT_DOUBLE_EQ(work.bytes, 4.0 * (65536 + 1048576 + 65536));
}

TEST(AnalyticCost, ElementwiseOpsCostTheirFlopsColumn) {
  Graph g;
  const NodeId x = *g.AddInput("x", F32({1000}));
  const NodeId hs = *g.AddOp(OpType::kHardSigmoid, {{x, 0}});
  const NodeId relu = *g.AddOp(OpType::kRelu, {{x, 0}});
  EXPECT_DOUBLE_EQ(AnalyticWork(g, g.node(hs)).flops, 4000.0);  // ops.def: 4 per element
  EXPECT_DOUBLE_EQ(AnalyticWork(g, g.node(relu)).flops, 1000.0);
  EXPECT_DOUBLE_EQ(AnalyticWork(g, g.node(hs)).bytes, 8000.0);  // read and write once
}

TEST(AnalyticCost, ConvCountsMacsAndItsFusedActivationIsFree) {
  Graph g;
  const NodeId x = *g.AddInput("x", F32({1, 64, 56, 56}));
  const NodeId w = *g.AddWeight("w", {64, 64, 3, 3}, {});
  const Attrs conv{{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{1, 1}}};
  Attrs fused = conv;
  fused.Set("activation", std::string("relu"));
  const NodeId c = *g.AddOp(OpType::kConv2D, {{x, 0}, {w, 0}}, conv);
  const NodeId cr = *g.AddOp(OpType::kConv2D, {{x, 0}, {w, 0}}, fused);
  AnalyticCostModel m(UnitDevice());
  // flops 2 * (64*56*56) * (64*3*3) = 231211008 -> 0.231211008 ms (bytes take 0.0175 ms).
  EXPECT_NEAR(Cost(m, g, c), 0.01 + 0.231211008, 1e-12);
  EXPECT_DOUBLE_EQ(Cost(m, g, cr), Cost(m, g, c));
}

TEST(AnalyticCost, ElementwiseOpsAreMemoryBound) {
  Graph g;
  const NodeId x = *g.AddInput("x", F32({1, 64, 56, 56}));
  const NodeId r = *g.AddOp(OpType::kRelu, {{x, 0}});
  const NodeId h = *g.AddInput("h", F32({8, 128, 768}));
  const NodeId b = *g.AddWeight("b", {768}, {});
  const NodeId add = *g.AddOp(OpType::kAdd, {{h, 0}, {b, 0}});
  const NodeId s = *g.AddInput("s", F32({16, 64, 64}));
  const NodeId sm = *g.AddOp(OpType::kSoftmax, {{s, 0}}, {{"axis", int64_t{-1}}});
  AnalyticCostModel m(UnitDevice());
  // Relu: 2 * 200704 floats = 1605632 bytes -> 0.01605632 ms.
  EXPECT_NEAR(Cost(m, g, r), 0.01 + 0.01605632, 1e-12);
  // Add with a broadcast bias: 4 * (786432 + 768 + 786432) bytes -> 0.06294528 ms.
  EXPECT_NEAR(Cost(m, g, add), 0.01 + 0.06294528, 1e-12);
  // Softmax: 2 * 65536 floats -> 0.00524288 ms (5 flops per element take 0.00032768 ms).
  EXPECT_NEAR(Cost(m, g, sm), 0.01 + 0.00524288, 1e-12);
}

TEST(AnalyticCost, PoolsReductionsAndCopies) {
  Graph g;
  const NodeId x = *g.AddInput("x", F32({1, 64, 112, 112}));
  const NodeId mp =
      *g.AddOp(OpType::kMaxPool2D, {{x, 0}},
               {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}});
  const NodeId t = *g.AddOp(OpType::kTranspose, {{x, 0}}, {{"perm", Ints{0, 2, 3, 1}}});
  const NodeId rm =
      *g.AddOp(OpType::kReduceMean, {{x, 0}}, {{"axes", Ints{2, 3}}, {"keepdims", int64_t{1}}});
  const NodeId sl =
      *g.AddOp(OpType::kSlice, {{x, 0}},
               {{"starts", Ints{0}}, {"ends", Ints{32}}, {"axes", Ints{1}}, {"steps", Ints{1}}});
  AnalyticCostModel m(UnitDevice());
  const double in_bytes = 4.0 * 64 * 112 * 112;  // 3211264
  // MaxPool 3x3/2 -> 1x64x56x56: bytes 3211264 + 802816 -> 0.0401408 ms; flops 9*200704 smaller.
  EXPECT_NEAR(Cost(m, g, mp), 0.01 + (in_bytes + 802816) / 1e11 * 1e3, 1e-12);
  EXPECT_NEAR(Cost(m, g, t), 0.01 + 2 * in_bytes / 1e11 * 1e3, 1e-12);
  EXPECT_NEAR(Cost(m, g, rm), 0.01 + (in_bytes + 256) / 1e11 * 1e3, 1e-12);
  // Slice reads only what it keeps: 2 * half the input.
  EXPECT_NEAR(Cost(m, g, sl), 0.01 + in_bytes / 1e11 * 1e3, 1e-12);
}

TEST(AnalyticCost, LeavesViewsAndWeightOnlyOpsCostNothing) {
  Graph g;
  const NodeId x = *g.AddInput("x", F32({4, 6}));
  const NodeId w = *g.AddWeight("w", {8, 6}, {});
  const NodeId wt = *g.AddOp(OpType::kTranspose, {{w, 0}}, {{"perm", Ints{1, 0}}});  // weight-only
  const NodeId wr = *g.AddOp(OpType::kRelu, {{wt, 0}});                              // weight-only
  const NodeId mm = *g.AddOp(OpType::kMatMul, {{x, 0}, {wr, 0}});
  const NodeId rs = *g.AddOp(OpType::kReshape, {{mm, 0}}, {{"shape", Ints{32}}});
  const NodeId sp =
      *g.AddOp(OpType::kSplit, {{mm, 0}}, {{"axis", int64_t{1}}, {"split", Ints{4, 4}}});
  const NodeId id = *g.AddOp(OpType::kIdentity, {{mm, 0}});
  AnalyticCostModel m(UnitDevice());
  for (NodeId n : {x, w, wt, wr, rs, sp, id}) EXPECT_EQ(Cost(m, g, n), 0.0) << g.node(n).TypeName();
  EXPECT_GT(Cost(m, g, mm), 0.0);
  // The caller-supplied flag is honoured.
  EXPECT_EQ(*m.NodeCostMs(g, mm, /*weight_only=*/true), 0.0);
}

TEST(AnalyticCost, OpaqueOpsAreEstimatedFromTheirBytes) {
  Graph g;
  const NodeId x = *g.AddInput("x", F32({1, 8, 32, 32}));
  const NodeId op = *g.AddOpaque("Resize", "", {{x, 0}}, {}, {F32({1, 8, 64, 64})});
  AnalyticCostModel m(UnitDevice());
  // bytes 4*(8192 + 32768) -> 0.0016384 ms; 16 flops per output element -> 0.000524288 ms.
  EXPECT_NEAR(Cost(m, g, op), 0.01 + 0.0016384, 1e-12);
}

TEST(AnalyticCost, MissingNodeIsAnError) {
  Graph g;
  AnalyticCostModel m(UnitDevice());
  auto c = m.NodeCostMs(g, 3);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
}

TEST(GraphCost, IsTheSumOfNodeCosts) {
  for (const char* model : {"bert", "inceptionv3", "nasrnn"}) {
    SCOPED_TRACE(model);
    ModelParams params;
    if (std::string(model) == "bert") params.layers = 2;
    auto g = BuildModel(model, params);
    ASSERT_TRUE(g.ok()) << g.status().message();
    AnalyticCostModel m(*FindDeviceProfile("h100", kDevicesDir));
    auto total = GraphCostMs(m, *g);
    ASSERT_TRUE(total.ok()) << total.status().message();
    double sum = 0;
    int costed = 0;
    for (NodeId id : g->NodeIds()) {
      const double c = Cost(m, *g, id);  // weight-only found by walking ancestors
      sum += c;
      costed += c > 0;
    }
    EXPECT_NEAR(*total, sum, 1e-9 * sum);
    EXPECT_GT(*total, 0.0);
    EXPECT_GT(costed, 10);
  }
}

// ---------------------------------------------------------------------------- O(diff) costs

using testing::ShippedRules;

class DiffCost : public ::testing::TestWithParam<std::string> {};

TEST_P(DiffCost, EqualsFullRecomputationForEveryCandidate) {
  const auto& rules = ShippedRules();
  ASSERT_FALSE(rules.empty());
  auto built = BuildModel(GetParam());
  ASSERT_TRUE(built.ok()) << built.status().message();
  const Graph g = std::move(built).value();
  AnalyticCostModel m(*FindDeviceProfile("h100", kDevicesDir));
  auto table = CostTable::Build(m, g);
  ASSERT_TRUE(table.ok()) << table.status().message();
  ASSERT_NEAR(table->total_ms(), *GraphCostMs(m, g), 1e-12);

  rules::CandidateOptions opts;
  opts.dedup = rules::Dedup::kNone;
  opts.max_candidates = 100000;
  const auto set = rules::EnumerateCandidates(g, rules, opts);
  ASSERT_FALSE(set.candidates.empty()) << "no rule applies to " << GetParam();
  int changed = 0;
  for (const auto& c : set.candidates) {
    const rules::Rule& rule = rules[c.match.rule];
    Graph after = g;
    auto diff = rules::ApplyMatch(after, rule, c.match);
    ASSERT_TRUE(diff.ok()) << rule.name << ": " << diff.status().message();
    auto incremental = table->CostAfterMs(after, *diff);
    ASSERT_TRUE(incremental.ok()) << rule.name << ": " << incremental.status().message();
    auto full = GraphCostMs(m, after);
    ASSERT_TRUE(full.ok()) << full.status().message();
    EXPECT_NEAR(*incremental, *full, 1e-9 * *full) << rule.name;
    changed += std::fabs(*incremental - table->total_ms()) > 1e-9;
  }
  EXPECT_GT(changed, 0) << "no candidate changes the cost";
  std::cout << GetParam() << ": " << set.candidates.size() << " candidates, " << changed
            << " change the cost\n";
}

TEST_P(DiffCost, AppliedSequencesKeepTheTableExact) {
  const auto& rules = ShippedRules();
  auto built = BuildModel(GetParam());
  ASSERT_TRUE(built.ok()) << built.status().message();
  Graph g = std::move(built).value();
  AnalyticCostModel m(*FindDeviceProfile("h100", kDevicesDir));
  auto table = CostTable::Build(m, g);
  ASSERT_TRUE(table.ok());
  std::mt19937_64 rng(7);
  for (int step = 0; step < 15; ++step) {
    rules::CandidateOptions opts;
    opts.dedup = rules::Dedup::kNone;
    const auto set = rules::EnumerateCandidates(g, rules, opts);
    if (set.candidates.empty()) break;
    const auto& c = set.candidates[rng() % set.candidates.size()];
    Graph after = g;
    auto diff = rules::ApplyMatch(after, rules[c.match.rule], c.match);
    ASSERT_TRUE(diff.ok()) << diff.status().message();
    auto predicted = table->CostAfterMs(after, *diff);
    ASSERT_TRUE(predicted.ok()) << predicted.status().message();
    ASSERT_TRUE(table->Apply(after, *diff).ok());
    g = std::move(after);
    const double full = *GraphCostMs(m, g);
    EXPECT_NEAR(table->total_ms(), full, 1e-9 * full) << "step " << step;
    EXPECT_DOUBLE_EQ(table->total_ms(), *predicted);
    EXPECT_EQ(table->size(), g.num_nodes());
    const rules::MatchIndex index(g);
    for (NodeId id : g.NodeIds()) {
      ASSERT_TRUE(table->Holds(id));
      EXPECT_EQ(table->weight_only(id), index.WeightOnly(id)) << "node " << id;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, DiffCost, ::testing::Values("bert", "inceptionv3"));

// A consumer whose weight-only status changes through an added node is re-costed.
TEST(CostTable, RecostsConsumersWhoseWeightOnlyStatusChanges) {
  Graph g;
  const NodeId x = *g.AddInput("x", F32({16, 16}));
  const NodeId w = *g.AddWeight("w", {16, 16}, {});
  const NodeId a = *g.AddOp(OpType::kAdd, {{x, 0}, {w, 0}});
  const NodeId r = *g.AddOp(OpType::kRelu, {{a, 0}});
  const NodeId t = *g.AddOp(OpType::kTanh, {{r, 0}});
  ASSERT_TRUE(g.AddOutput("y", {t, 0}).ok());
  AnalyticCostModel m(UnitDevice());
  auto table = CostTable::Build(m, g);
  ASSERT_TRUE(table.ok());
  EXPECT_GT(table->node_ms(r), 0.0);

  Graph after = g;
  Rewriter rw(after);
  const NodeId sq = *rw.AddOp(OpType::kMul, {{w, 0}, {w, 0}});  // weight-only replacement
  ASSERT_TRUE(rw.ReplaceAllUses({a, 0}, {sq, 0}).ok());
  ASSERT_TRUE(rw.RemoveNode(a).ok());
  const GraphDiff diff = rw.TakeDiff();
  auto predicted = table->CostAfterMs(after, diff);
  ASSERT_TRUE(predicted.ok()) << predicted.status().message();
  EXPECT_NEAR(*predicted, *GraphCostMs(m, after), 1e-12);
  EXPECT_NEAR(*predicted, 0.0, 1e-12);  // everything left is weight-only
  ASSERT_TRUE(table->Apply(after, diff).ok());
  EXPECT_TRUE(table->weight_only(r));
  EXPECT_TRUE(table->weight_only(t));
  EXPECT_EQ(table->node_ms(t), 0.0);
}

TEST(CostTable, RejectsADiffThatDoesNotFit) {
  Graph g;
  const NodeId x = *g.AddInput("x", F32({4}));
  const NodeId r = *g.AddOp(OpType::kRelu, {{x, 0}});
  ASSERT_TRUE(g.AddOutput("y", {r, 0}).ok());
  AnalyticCostModel m(UnitDevice());
  auto table = CostTable::Build(m, g);
  ASSERT_TRUE(table.ok());
  const double before = table->total_ms();

  GraphDiff unknown_removed{{42}, {}};
  auto d1 = table->DiffCostMs(g, unknown_removed);
  ASSERT_FALSE(d1.ok());
  EXPECT_NE(d1.status().message().find("does not hold"), std::string::npos)
      << d1.status().message();

  GraphDiff still_there{{r}, {}};
  EXPECT_FALSE(table->DiffCostMs(g, still_there).ok());

  GraphDiff already_held{{}, {r}};
  EXPECT_FALSE(table->DiffCostMs(g, already_held).ok());
  EXPECT_FALSE(table->Apply(g, already_held).ok());
  EXPECT_EQ(table->total_ms(), before);  // unchanged on error
  EXPECT_EQ(table->size(), g.num_nodes());
}

// ---------------------------------------------------------------------------- device profiles

TEST(DeviceProfile, ShippedProfilesLoadWithTheirSources) {
  for (const char* name : {"h100", "h200", "gtx1080", "cpu_dev"}) {
    SCOPED_TRACE(name);
    auto p = FindDeviceProfile(name, kDevicesDir);
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(p->name, name);
    EXPECT_GT(p->peak_flops, 1e10);
    EXPECT_GT(p->memory_bandwidth, 1e9);
    EXPECT_GT(p->launch_overhead_ms, 0.0);
    EXPECT_FALSE(p->description.empty());
  }
  auto h100 = FindDeviceProfile("h100", kDevicesDir);
  auto h200 = FindDeviceProfile(kDevicesDir + "/h200.toml", kDevicesDir);  // by path
  ASSERT_TRUE(h100.ok() && h200.ok());
  EXPECT_EQ(h100->kind, "gpu");
  EXPECT_GT(h200->memory_bandwidth, h100->memory_bandwidth);
  EXPECT_EQ(FindDeviceProfile("cpu_dev", kDevicesDir)->kind, "cpu");
}

TEST(DeviceProfile, ConvertsUnits) {
  const DeviceProfile p = UnitDevice();
  EXPECT_EQ(p.name, "unit");
  EXPECT_DOUBLE_EQ(p.peak_flops, 1e12);
  EXPECT_DOUBLE_EQ(p.memory_bandwidth, 1e11);
  EXPECT_DOUBLE_EQ(p.launch_overhead_ms, 0.01);
  EXPECT_EQ(p.source, "unit.toml");
}

TEST(DeviceProfile, ErrorsNameTheFileAndLine) {
  const std::string good_tail = "memory_bandwidth_gbs = 100\nlaunch_overhead_us = 3\n";
  struct Case {
    std::string text;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"name = \"d\"\npeak_fp32_tflops = 1\npeak_tflops = 2\n" + good_tail,
       "d.toml:3:1: unknown key 'peak_tflops'"},
      {"name = \"d\"\n" + good_tail, "d.toml: missing required key 'peak_fp32_tflops'"},
      {"peak_fp32_tflops = 1\n" + good_tail, "d.toml: missing required key 'name'"},
      {"name = \"d\"\npeak_fp32_tflops = \"fast\"\n" + good_tail,
       "d.toml:2:20: 'peak_fp32_tflops' must be a number"},
      {"name = \"d\"\npeak_fp32_tflops = -1\n" + good_tail,
       "d.toml:2:20: 'peak_fp32_tflops' must be positive"},
      {"name = \"d\"\npeak_fp32_tflops = 1\n" + good_tail + "kind = \"tpu\"\n",
       "d.toml:5:8: 'kind' must be"},
      {"name = \"d\"\npeak_fp32_tflops = = 1\n", "d.toml:2:"},
      {"name = 3\npeak_fp32_tflops = 1\n" + good_tail, "d.toml:1:8: 'name' must be a string"},
      {"[device]\nname = \"d\"\n", "d.toml:1:2: unknown key 'device'"},
  };
  for (const Case& c : cases) {
    auto p = ParseDeviceProfile(c.text, "d.toml");
    ASSERT_FALSE(p.ok()) << c.text;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find(c.expect), std::string::npos)
        << "got: " << p.status().message() << "\nwant: " << c.expect;
  }
}

TEST(DeviceProfile, UnknownNamesAndFilesAreNotFound) {
  auto p = FindDeviceProfile("tpu9", kDevicesDir);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kNotFound);
  EXPECT_NE(p.status().message().find("h100"), std::string::npos) << p.status().message();
  auto f = LoadDeviceProfile("/nonexistent/x.toml");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
}

// ---------------------------------------------------------------------------- backends

TEST(CostBackends, MakesEachKindOrSaysWhyNot) {
  CostModelOptions o;
  o.devices_dir = kDevicesDir;
  auto analytic = MakeCostModel(o);
  ASSERT_TRUE(analytic.ok()) << analytic.status().message();
  EXPECT_EQ((*analytic)->Name(), "analytic(h100)");

  o.kind = "cpu";
  auto cpu = MakeCostModel(o);
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  EXPECT_EQ((*cpu)->Name().rfind("cpu(cpu_dev, ", 0), 0u) << (*cpu)->Name();

  o.kind = "tpu";
  auto bad = MakeCostModel(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("known: analytic, cpu, cuda"), std::string::npos);

  o.kind = "analytic";
  o.device = "nosuch";
  EXPECT_EQ(MakeCostModel(o).status().code(), StatusCode::kNotFound);

  o.kind = "cuda";
  o.device = "";
  auto cuda = MakeCostModel(o);
  if (!cuda.ok()) {
    EXPECT_EQ(cuda.status().code(), StatusCode::kUnimplemented);
  }

  // A corrupt cost cache is a clear error, not a crash.
  const std::string garbage = ::testing::TempDir() + "/not_a_cost_cache.db";
  {
    std::ofstream out(garbage, std::ios::binary | std::ios::trunc);
    out << std::string(8192, 'x');
  }
  o.kind = "cpu";
  o.cache_path = garbage;
  auto corrupt = MakeCostModel(o);
  ASSERT_FALSE(corrupt.ok());
  EXPECT_EQ(corrupt.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(corrupt.status().message().find(garbage), std::string::npos);
}

TEST(CudaCost, RunsOnlyWhereAGpuIsAndSaysSoElsewhere) {
  CudaCostOptions o;
  o.timing.repeats = 3;
  auto model = MakeCudaCostModel(o);
  if (!model.ok()) {
    EXPECT_EQ(model.status().code(), StatusCode::kUnimplemented) << model.status().message();
    const std::string& msg = model.status().message();
    EXPECT_TRUE(msg.find("built without CUDA") != std::string::npos ||
                msg.find("no CUDA device") != std::string::npos)
        << msg;
    GTEST_SKIP() << msg;
  }
  // On a GPU: every kind of kernel path gives a positive, memoised cost.
  Graph g;
  const NodeId x = *g.AddInput("x", F32({1, 64, 56, 56}));
  const NodeId w = *g.AddWeight("w", {64, 64, 3, 3}, {});
  const NodeId conv = *g.AddOp(OpType::kConv2D, {{x, 0}, {w, 0}},
                               {{"pads", Ints{1, 1, 1, 1}}, {"activation", std::string("relu")}});
  const NodeId pool = *g.AddOp(OpType::kMaxPool2D, {{conv, 0}},
                               {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
  const NodeId h = *g.AddInput("h", F32({4, 64, 256}));
  const NodeId wm = *g.AddWeight("wm", {256, 256}, {});
  const NodeId mm = *g.AddOp(OpType::kMatMul, {{h, 0}, {wm, 0}});
  const NodeId add = *g.AddOp(OpType::kAdd, {{mm, 0}, {h, 0}});
  const NodeId sm = *g.AddOp(OpType::kSoftmax, {{add, 0}}, {{"axis", int64_t{-1}}});
  const NodeId tr = *g.AddOp(OpType::kTranspose, {{sm, 0}}, {{"perm", Ints{0, 2, 1}}});
  const NodeId cc = *g.AddOp(OpType::kConcat, {{sm, 0}, {h, 0}}, {{"axis", int64_t{1}}});
  for (NodeId id : {conv, pool, mm, add, sm, tr, cc}) {
    auto c = (*model)->NodeCostMs(g, id);
    ASSERT_TRUE(c.ok()) << g.node(id).TypeName() << ": " << c.status().message();
    EXPECT_GT(*c, 0.0) << g.node(id).TypeName();
    std::cout << "cuda " << g.node(id).TypeName() << ": " << *c << " ms\n";
  }
  EXPECT_EQ((*model)->measurements().measured, 7);
}

TEST(CudaCost, FusedActivationsBiasesAndBatchedMatmulsAreTimed) {
  CudaCostOptions o;
  o.timing.repeats = 3;
  auto model = MakeCudaCostModel(o);
  if (!model.ok()) GTEST_SKIP() << model.status().message();
  Graph g;
  const NodeId x = *g.AddInput("x", F32({1, 32, 28, 28}));
  const NodeId w = *g.AddWeight("w", {32, 32, 3, 3}, {});
  const NodeId b = *g.AddWeight("b", {32}, {});
  std::vector<NodeId> ops;
  // Conv2D: bias only (cuDNN's fused identity path), relu (fused), gelu (our kernel after).
  for (const char* act : {"none", "relu", "gelu", "sigmoid"}) {
    ops.push_back(*g.AddOp(OpType::kConv2D, {{x, 0}, {w, 0}, {b, 0}},
                           {{"pads", Ints{1, 1, 1, 1}}, {"activation", std::string(act)}}));
  }
  // MatMul: plain, relu and gelu epilogues, tanh after; batched with a broadcast operand.
  const NodeId h = *g.AddInput("h", F32({4, 64, 128}));
  const NodeId wm = *g.AddWeight("wm", {128, 256}, {});
  for (const char* act : {"none", "relu", "gelu", "tanh"}) {
    ops.push_back(*g.AddOp(OpType::kMatMul, {{h, 0}, {wm, 0}}, {{"activation", std::string(act)}}));
  }
  const NodeId h1 = *g.AddInput("h1", F32({1, 64, 128}));
  const NodeId k3 = *g.AddInput("k3", F32({4, 128, 32}));
  ops.push_back(*g.AddOp(OpType::kMatMul, {{h1, 0}, {k3, 0}}));  // left operand broadcast
  ops.push_back(*g.AddOp(OpType::kMatMul, {{h, 0}, {k3, 0}}));   // batched, strided
  // Gemm: row-vector bias (epilogue) with relu, a full bias, transposes.
  const NodeId a2 = *g.AddInput("a2", F32({64, 128}));
  const NodeId b2 = *g.AddWeight("b2", {256, 128}, {});
  const NodeId c_row = *g.AddWeight("c_row", {256}, {});
  const NodeId c_full = *g.AddWeight("c_full", {64, 256}, {});
  ops.push_back(*g.AddOp(OpType::kGemm, {{a2, 0}, {b2, 0}, {c_row, 0}},
                         {{"transB", int64_t{1}}, {"activation", std::string("relu")}}));
  ops.push_back(*g.AddOp(OpType::kGemm, {{a2, 0}, {b2, 0}, {c_full, 0}}, {{"transB", int64_t{1}}}));
  for (NodeId id : ops) {
    auto c = (*model)->NodeCostMs(g, id);
    ASSERT_TRUE(c.ok()) << g.node(id).TypeName() << " "
                        << g.node(id).attrs.GetString("activation", "") << ": "
                        << c.status().message();
    EXPECT_GT(*c, 0.0);
    std::cout << "cuda " << g.node(id).TypeName() << " "
              << g.node(id).attrs.GetString("activation", "none") << ": " << *c << " ms\n";
  }
  EXPECT_EQ((*model)->measurements().measured,
            static_cast<int64_t>(ops.size()));  // every variant is its own signature
}

// ---------------------------------------------------------------------------- cpu

CpuCostOptions QuickCpu() {
  CpuCostOptions o;
  o.timing.warmups = 1;
  o.timing.repeats = 3;
  o.timing.min_sample_ms = 0.05;
  return o;
}

TEST(CpuCost, TimesOpsAndMemoisesBySignature) {
  Graph g;
  const NodeId x = *g.AddInput("x", F32({1, 16, 28, 28}));
  const NodeId w = *g.AddWeight("w", {16, 16, 3, 3}, {});
  const Attrs attrs{{"pads", Ints{1, 1, 1, 1}}};
  const NodeId c1 = *g.AddOp(OpType::kConv2D, {{x, 0}, {w, 0}}, attrs);
  const NodeId c2 = *g.AddOp(OpType::kConv2D, {{c1, 0}, {w, 0}}, attrs);  // same signature as c1
  const NodeId r = *g.AddOp(OpType::kRelu, {{c2, 0}});
  const NodeId rs = *g.AddOp(OpType::kReshape, {{r, 0}}, {{"shape", Ints{16, 784}}});
  ASSERT_TRUE(g.AddOutput("y", {rs, 0}).ok());
  auto model = CpuCostModel::Create(QuickCpu());
  ASSERT_TRUE(model.ok()) << model.status().message();
  CpuCostModel& m = **model;
  const double conv1 = Cost(m, g, c1), conv2 = Cost(m, g, c2), relu = Cost(m, g, r);
  EXPECT_GT(conv1, 0.0);
  EXPECT_EQ(conv2, conv1);  // memoised, not re-timed
  EXPECT_GT(relu, 0.0);
  EXPECT_EQ(Cost(m, g, rs), 0.0);
  EXPECT_EQ(m.measurements().measured, 2);
  EXPECT_EQ(m.measurements().memo_hits, 1);
  auto total = GraphCostMs(m, g);
  ASSERT_TRUE(total.ok());
  EXPECT_NEAR(*total, conv1 + conv2 + relu, 1e-12);
  EXPECT_EQ(OpSignature(g, g.node(c1)), OpSignature(g, g.node(c2)));
  EXPECT_NE(OpSignature(g, g.node(c1)), OpSignature(g, g.node(r)));
}

TEST(CpuCost, SharesMeasurementsThroughThePersistentCache) {
  const std::string path = ::testing::TempDir() + "/cpu_cost_cache_test.db";
  std::filesystem::remove(path);
  Graph g;
  const NodeId x = *g.AddInput("x", F32({64, 128}));
  const NodeId w = *g.AddWeight("w", {128, 128}, {});
  const NodeId mm = *g.AddOp(OpType::kMatMul, {{x, 0}, {w, 0}});
  const NodeId gl = *g.AddOp(OpType::kGelu, {{mm, 0}});
  double first_mm = 0, first_gl = 0;
  {
    auto cache = CostCache::Open(path);
    ASSERT_TRUE(cache.ok()) << cache.status().message();
    auto m = CpuCostModel::Create(QuickCpu(), *cache);
    ASSERT_TRUE(m.ok());
    first_mm = Cost(**m, g, mm);
    first_gl = Cost(**m, g, gl);
    EXPECT_EQ((*m)->measurements().measured, 2);
    EXPECT_EQ(*(*cache)->Count((*m)->device_key()), 2);
  }
  auto cache = CostCache::Open(path);
  ASSERT_TRUE(cache.ok());
  auto m = CpuCostModel::Create(QuickCpu(), *cache);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(Cost(**m, g, mm), first_mm);
  EXPECT_EQ(Cost(**m, g, gl), first_gl);
  EXPECT_EQ((*m)->measurements().measured, 0);
  EXPECT_EQ((*m)->measurements().cache_hits, 2);
}

TEST(CpuCost, ConstantOperandsAreReadAsValues) {
  // Gather reads its indices: a Constant operand is used as it is (and is part of the signature).
  Graph g;
  const NodeId table = *g.AddInput("table", F32({100, 32}));
  auto idx = std::make_shared<HostTensor>(HostTensor::FromInt64s({3}, {5, 99, 0}));
  const NodeId i = *g.AddConstant("idx", idx);
  const NodeId gather = *g.AddOp(OpType::kGather, {{table, 0}, {i, 0}}, {{"axis", int64_t{0}}});
  auto model = CpuCostModel::Create(QuickCpu());
  ASSERT_TRUE(model.ok());
  EXPECT_GT(Cost(**model, g, gather), 0.0);
  EXPECT_NE(OpSignature(g, g.node(gather)).find("i64[3]#"), std::string::npos)
      << OpSignature(g, g.node(gather));
}

TEST(CpuCost, RejectsBadOptions) {
  CpuCostOptions o;
  o.timing.repeats = 0;
  EXPECT_EQ(CpuCostModel::Create(o).status().code(), StatusCode::kInvalidArgument);
  o = CpuCostOptions();
  o.num_threads = -1;
  EXPECT_EQ(CpuCostModel::Create(o).status().code(), StatusCode::kInvalidArgument);
}

TEST(CpuCost, EndToEndLatencyOfAWholeGraph) {
  ModelParams p;
  p.layers = 1;
  p.seq_len = 16;
  p.hidden = 64;
  p.heads = 4;
  auto g = BuildModel("bert", p);
  ASSERT_TRUE(g.ok()) << g.status().message();
  TimingOptions t;
  t.warmups = 1;
  t.repeats = 3;
  auto lat = MeasureGraphLatency(*g, t);
  ASSERT_TRUE(lat.ok()) << lat.status().message();
  EXPECT_EQ(lat->runs, 3);
  EXPECT_GT(lat->min_ms, 0.0);
  EXPECT_LE(lat->min_ms, lat->median_ms);
  EXPECT_GE(lat->mean_ms, lat->min_ms);
}

TEST(Timing, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(Median({}), 0.0);
  EXPECT_EQ(Median({3, 1, 2}), 2.0);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(Median({5}), 5.0);
}

// A device profile's text is checked before toml++ reads it (graph/toml_text.h): U+00E9 where
// whitespace may stand is an error with its position, never undefined behaviour.
TEST(DeviceProfile, TextIsCheckedBeforeParsing) {
  auto p = ParseDeviceProfile(std::string("name = \"x\"\npeak_fp32_tflops = 1") + "\xc3\xa9" + "\n",
                              "d.toml");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message().rfind("d.toml:2:21: character U+00E9 outside a string", 0), 0u)
      << p.status().message();
}

}  // namespace
}  // namespace rewire

// The kernel model (cost/kernel_cost.h): an operator's context as a runtime's fusions see it;
// the fit learning, from profiled kernels, a runtime whose fusions absorb operators, so that it
// ranks the rewrites of a model it never saw (and an unfitted model does not); the CostTable
// staying exact when an operator's cost depends on its neighbours; kernels joined to the
// operators they came from; the file, and models of another runtime refused.

#include "cost/kernel_cost.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "cost/cost_registry.h"
#include "cost/kernel_profile.h"
#include "cost/learned_cost.h"
#include "graph/models/zoo.h"
#include "graph/rules/candidates.h"
#include "graph/rules/matcher.h"
#include "graph/rules/rule.h"
#include "kernels/fold.h"
#include "tests/cost/shipped_rules.h"

namespace rewire {
namespace {

const std::string kSourceDir = REWIRE_SOURCE_DIR;

using testing::ShippedRules;

Graph Zoo(const std::string& name, int layers) {
  ModelParams p;
  p.layers = layers;
  auto g = BuildModel(name, p);
  EXPECT_TRUE(g.ok()) << g.status().message();
  Graph f = std::move(g).value();
  EXPECT_TRUE(FoldWeightSubgraphs(f).ok());
  return f;
}

/// Every graph one rewrite away from `g` (folded as written), `g` first.
std::vector<Graph> Neighbours(const Graph& g) {
  std::vector<Graph> out{g};
  rules::CandidateOptions opts;
  opts.dedup = rules::Dedup::kNone;
  for (const auto& c : rules::EnumerateCandidates(g, ShippedRules(), opts).candidates) {
    Graph n = g;
    if (!rules::ApplyMatch(n, ShippedRules()[c.match.rule], c.match).ok()) continue;
    if (!FoldWeightSubgraphs(n).ok() || !n.Validate().ok()) continue;
    out.push_back(std::move(n));
  }
  return out;
}

/// `n` graphs of a walk of random rewrites from `start` (the start first), folded as written.
std::vector<Graph> Walk(Graph start, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Graph> out{start};
  while (static_cast<int>(out.size()) < n) {
    const auto set = rules::EnumerateCandidates(out.back(), ShippedRules(), {});
    if (set.candidates.empty()) break;
    const auto& c = set.candidates[rng() % set.candidates.size()];
    Graph g = out.back();
    if (!rules::ApplyMatch(g, ShippedRules()[c.match.rule], c.match).ok()) continue;
    if (!FoldWeightSubgraphs(g).ok() || !g.Validate().ok()) continue;
    out.push_back(std::move(g));
  }
  return out;
}

/// A runtime the fit must learn: a MatMul's bias Add and a Transpose feeding a MatMul are
/// absorbed into the MatMul's kernel (0 us of their own); a small GEMM is slow per flop; every
/// other kernel costs a launch and its bytes.
double RuntimeUs(const KernelFeatures& f) {
  if (f.op == "Add" && f.producer == "MatMul") return 0;
  if (f.op == "Transpose" && f.consumer == "MatMul") return 0;
  if (f.op == "MatMul") return 4 + 2e-5 * f.flops + 1e-3 * f.flops / std::max(1.0, f.smallest_dim);
  return 3 + 1.5e-4 * f.bytes;
}

/// A graph as that runtime's profiler would give it: every costing operator's kernel time,
/// off by up to +-3%.
KernelGraphSample Profiled(const Graph& g, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> noise(0.97, 1.03);
  KernelGraphSample s;
  s.hash = g.Hash();
  const rules::MatchIndex index(g);
  double us = 0;
  for (NodeId id : g.TopologicalOrder()) {
    const Node& n = g.node(id);
    if (n.IsLeaf() || IsViewOp(n.op) || index.WeightOnly(id)) continue;
    KernelSample k{KernelFeaturesOf(g, id), 0};
    k.us = RuntimeUs(k.features) * noise(rng);
    us += k.us + 2;
    s.nodes.push_back(std::move(k));
  }
  s.e2e_ms = us / 1000;
  return s;
}

/// The runtime's true time of `g` and the model's prediction, over the graphs.
double RankingOf(const KernelCostParams& p, const std::vector<Graph>& graphs) {
  std::vector<double> truth, predicted;
  for (const Graph& g : graphs) {
    std::mt19937_64 exact(1);
    KernelGraphSample s = Profiled(g, exact);
    double t = 0;
    for (const KernelSample& k : s.nodes) t += RuntimeUs(k.features);
    truth.push_back(t);
    predicted.push_back(PredictGraphMs(p, s.nodes));
  }
  return SpearmanCorrelation(predicted, truth);
}

TEST(KernelFeatures, NameTheNeighboursAFusionWouldMergeWith) {
  Graph g;
  const NodeId x = *g.AddInput("x", TensorType{DType::kFloat32, {8, 16}});
  const NodeId w = *g.AddWeight("w", {16, 32}, WeightInit{});
  const NodeId b = *g.AddWeight("b", {32}, WeightInit{});
  const NodeId mm = *g.AddOp(OpType::kMatMul, {{x, 0}, {w, 0}});
  const NodeId add = *g.AddOp(OpType::kAdd, {{mm, 0}, {b, 0}});
  const NodeId relu = *g.AddOp(OpType::kRelu, {{add, 0}});
  const NodeId other = *g.AddOp(OpType::kRelu, {{x, 0}});
  ASSERT_TRUE(g.AddOutput("y", {relu, 0}).ok());
  ASSERT_TRUE(g.AddOutput("z", {other, 0}).ok());

  const KernelFeatures m = KernelFeaturesOf(g, mm);
  EXPECT_EQ(m.op, "MatMul");
  EXPECT_EQ(m.producer, "");  // fed by an input
  EXPECT_EQ(m.consumer, "Add");
  EXPECT_DOUBLE_EQ(m.smallest_dim, 8);
  const KernelFeatures a = KernelFeaturesOf(g, add);
  EXPECT_EQ(a.producer, "MatMul");
  EXPECT_EQ(a.consumer, "Relu");
  EXPECT_DOUBLE_EQ(a.producer_flops, m.flops);
  EXPECT_EQ(a.Keys().front(), "Add|p=mm|c=ew");
  EXPECT_EQ(a.Keys().back(), "");
  // A graph output is a use of its own: the Relu has no consumer to fuse with.
  EXPECT_EQ(KernelFeaturesOf(g, relu).consumer, "");
  EXPECT_EQ(KernelFeaturesOf(g, relu).producer, "Add");
  // x has two users: nothing merges with an input anyway; `other` is alone.
  EXPECT_EQ(KernelFeaturesOf(g, other).producer, "");
}

TEST(KernelFeatures, APredictionTakesTheFirstOfItsKeysTheModelHolds) {
  // PredictKernelUs looks its keys up without building Keys(): it must take the same key, in
  // Keys()' order, for every operator of real graphs, also where the most specific keys are
  // missing and it falls back.
  auto shipped = LoadKernelCost(ShippedKernelModelPath(kSourceDir + "/configs/devices", 1));
  ASSERT_TRUE(shipped.ok()) << shipped.status().message();
  auto reference = [](const KernelCostParams& p, const KernelFeatures& f) {
    for (const std::string& key : f.Keys()) {
      auto it = p.keys.find(key);
      if (it == p.keys.end()) continue;
      const auto x = f.Vector();
      double us = 0;
      for (int j = 0; j < kKernelFeatureCount; ++j) us += it->second[j] * x[j];
      return us;
    }
    return 0.0;
  };
  std::vector<KernelFeatures> features;
  for (const auto& [name, layers] : std::vector<std::pair<std::string, int>>{
           {"bert", 2}, {"squeezenet", 0}, {"nasrnn", 0}, {"xrlflow-tt", 1}}) {
    const Graph g = Zoo(name, layers);
    for (NodeId id : g.NodeIds()) {
      if (!g.node(id).IsLeaf()) features.push_back(KernelFeaturesOf(g, id));
    }
  }
  KernelFeatures unknown;
  unknown.op = "SomeOnnxOp";
  unknown.producer = "Conv2D";
  unknown.flops = 1e6;
  features.push_back(unknown);
  ASSERT_GT(features.size(), 100u);
  // The shipped model, and copies of it with every third or every second of its keys gone.
  std::vector<KernelCostParams> models = {*shipped};
  for (size_t every : {3, 2}) {
    KernelCostParams fewer = *shipped;
    size_t i = 0;
    for (auto it = fewer.keys.begin(); it != fewer.keys.end();) {
      it = (++i % every == 0 && !it->first.empty()) ? fewer.keys.erase(it) : std::next(it);
    }
    models.push_back(fewer);
  }
  int fallbacks = 0;
  for (const KernelCostParams& p : models) {
    for (const KernelFeatures& f : features) {
      ASSERT_DOUBLE_EQ(PredictKernelUs(p, f), reference(p, f)) << f.Keys().front();
      if (p.keys.count(f.Keys().front()) == 0) ++fallbacks;
    }
  }
  EXPECT_GT(fallbacks, 100);
}

TEST(KernelFeatures, AGemmCarriesOnlyTheProducerWorkItsKernelCanAbsorb) {
  Graph g;
  const NodeId x = *g.AddInput("x", TensorType{DType::kFloat32, {8, 16}});
  const NodeId w1 = *g.AddWeight("w1", {16, 32}, WeightInit{});
  const NodeId w2 = *g.AddWeight("w2", {32, 8}, WeightInit{});
  const NodeId w3 = *g.AddWeight("w3", {8, 8}, WeightInit{});
  const NodeId w4 = *g.AddWeight("w4", {8, 4}, WeightInit{});
  const NodeId first = *g.AddOp(OpType::kMatMul, {{x, 0}, {w1, 0}});
  const NodeId second = *g.AddOp(OpType::kMatMul, {{first, 0}, {w2, 0}});
  const NodeId t =
      *g.AddOp(OpType::kTranspose, {{x, 0}}, Attrs{{"perm", std::vector<int64_t>{1, 0}}});
  const NodeId relu = *g.AddOp(OpType::kRelu, {{t, 0}});
  const NodeId after_relu = *g.AddOp(OpType::kMatMul, {{relu, 0}, {w4, 0}});
  const NodeId add = *g.AddOp(OpType::kAdd, {{second, 0}, {w3, 0}});
  ASSERT_TRUE(g.AddOutput("y", {add, 0}).ok());
  ASSERT_TRUE(g.AddOutput("z", {after_relu, 0}).ok());

  // A GEMM fed by a GEMM: two kernels; the second's features do not carry the first's work.
  const KernelFeatures s = KernelFeaturesOf(g, second);
  EXPECT_EQ(s.producer, "MatMul");
  EXPECT_GT(s.producer_flops, 0);
  EXPECT_FALSE(s.AbsorbsProducer());
  EXPECT_EQ(s.Vector()[3], 0);
  EXPECT_EQ(s.Vector()[4], 0);
  // An elementwise producer can land in the GEMM's kernel: its work is a feature.
  const KernelFeatures r = KernelFeaturesOf(g, after_relu);
  EXPECT_EQ(r.producer, "Relu");
  EXPECT_TRUE(r.AbsorbsProducer());
  EXPECT_DOUBLE_EQ(r.Vector()[4], r.producer_bytes);
  EXPECT_GT(r.Vector()[4], 0);
  // The Add after the GEMM (its bias, absorbed into the GEMM's epilogue) keeps its producer's.
  const KernelFeatures a = KernelFeaturesOf(g, add);
  EXPECT_TRUE(a.AbsorbsProducer());
  EXPECT_DOUBLE_EQ(a.Vector()[3], s.flops);
  // Coefficients fitted on absorbed producers do not price a producing GEMM a second time.
  KernelCostParams p;
  p.keys["MatMul"] = KernelCoefficients{1, 1e-6, 0, 1e-3, 1e-3, 0};
  KernelFeatures alone = s;
  alone.producer = "";
  EXPECT_DOUBLE_EQ(PredictKernelUs(p, s), PredictKernelUs(p, alone));
}

TEST(KernelFit, LearnsFusionsAndRanksTheRewritesOfAnUnseenModel) {
  // Fitted on walks of two models, scored on a third's (never seen): the rewrites of ViT.
  std::mt19937_64 rng(3);
  std::vector<KernelGraphSample> train;
  for (const Graph& g : Walk(Zoo("bert", 1), 12, 1)) train.push_back(Profiled(g, rng));
  for (const Graph& g : Walk(Zoo("xrlflow-bert", 1), 12, 2)) train.push_back(Profiled(g, rng));
  for (const Graph& g : Walk(Zoo("gpt2", 1), 12, 4)) train.push_back(Profiled(g, rng));
  // The rewrites of one graph of a model never seen: what a search must order.
  const std::vector<Graph> unseen = Neighbours(Walk(Zoo("vit", 1), 4, 5).back());
  ASSERT_GE(unseen.size(), 12u);

  auto fitted = FitKernelCost(train);
  ASSERT_TRUE(fitted.ok()) << fitted.status().message();
  // The absorbed operators are learned as (nearly) free, an unfused Add as a kernel.
  KernelFeatures bias;
  bias.op = "Add";
  bias.producer = "MatMul";
  bias.bytes = 1e5;
  KernelFeatures plain = bias;
  plain.producer = "";
  EXPECT_LT(PredictKernelUs(*fitted, bias), 1.0);
  EXPECT_GT(PredictKernelUs(*fitted, plain), 10.0);

  const double trained = RankingOf(*fitted, unseen);
  // Without training the model has nothing but a per-operator cost for every kernel: it ranks
  // the rewrites by how many operators they leave, which misses every fusion.
  KernelCostParams untrained;
  untrained.keys[""] = KernelCoefficients{1, 0, 0, 0, 0, 0};
  const double before = RankingOf(untrained, unseen);
  // Fitted without the context (every key but the shared row refused): fusions unseen.
  KernelFitOptions blind;
  blind.min_samples = 1 << 30;
  const double context_free = RankingOf(*FitKernelCost(train, blind), unseen);
  std::cout << "Spearman on unseen rewrites: trained " << trained << ", context-free "
            << context_free << ", untrained " << before << "\n";
  EXPECT_GE(trained, 0.9);
  EXPECT_LT(before, trained - 0.1);
  EXPECT_LT(context_free, trained - 0.1);
}

TEST(KernelFit, RefusesNoSamples) {
  EXPECT_EQ(FitKernelCost({}).status().code(), StatusCode::kInvalidArgument);
}

class KernelDiffCost : public ::testing::TestWithParam<std::string> {};

/// Costs that depend on the neighbours, as the fitted runtime's do.
KernelCostParams ContextParams() {
  std::mt19937_64 rng(3);
  std::vector<KernelGraphSample> train;
  for (const Graph& g : Walk(Zoo("bert", 1), 8, 1)) train.push_back(Profiled(g, rng));
  for (const Graph& g : Walk(Zoo("squeezenet", 0), 8, 1)) train.push_back(Profiled(g, rng));
  KernelFitOptions o;
  o.min_samples = 1;
  return *FitKernelCost(train, o);
}

TEST_P(KernelDiffCost, TableStaysExactWhenNeighboursChange) {
  KernelCostModel m(ContextParams());
  ASSERT_TRUE(m.context_dependent());
  Graph g = Zoo(GetParam(), 1);
  auto table = CostTable::Build(m, g);
  ASSERT_TRUE(table.ok()) << table.status().message();
  std::mt19937_64 rng(11);
  int context_changes = 0;
  for (int step = 0; step < 25; ++step) {
    rules::CandidateOptions opts;
    opts.dedup = rules::Dedup::kNone;
    const auto set = rules::EnumerateCandidates(g, ShippedRules(), opts);
    if (set.candidates.empty()) break;
    // Every candidate's incremental cost is the full cost of the graph it makes.
    for (size_t i = 0; i < set.candidates.size(); i += 7) {
      const auto& c = set.candidates[i];
      Graph after = g;
      auto diff = rules::ApplyMatch(after, ShippedRules()[c.match.rule], c.match);
      ASSERT_TRUE(diff.ok());
      std::vector<CostTable::NodeCost> updates;
      auto inc = table->DiffCostMs(after, *diff, &updates);
      ASSERT_TRUE(inc.ok()) << inc.status().message();
      const double full = *GraphCostMs(m, after);
      EXPECT_NEAR(table->total_ms() + *inc, full, 1e-9 * full) << ShippedRules()[c.match.rule].name;
      for (const auto& u : updates)
        if (std::find(diff->added.begin(), diff->added.end(), u.id) == diff->added.end())
          ++context_changes;
    }
    const auto& c = set.candidates[rng() % set.candidates.size()];
    Graph after = g;
    auto diff = rules::ApplyMatch(after, ShippedRules()[c.match.rule], c.match);
    ASSERT_TRUE(diff.ok());
    ASSERT_TRUE(table->Apply(after, *diff).ok());
    g = std::move(after);
    const double full = *GraphCostMs(m, g);
    ASSERT_NEAR(table->total_ms(), full, 1e-9 * full) << "step " << step;
  }
  // The re-costing of neighbours was needed: some operator outside a diff changed its cost.
  EXPECT_GT(context_changes, 0);
}

INSTANTIATE_TEST_SUITE_P(Zoo, KernelDiffCost, ::testing::Values("bert", "squeezenet", "nasrnn"));

TEST(KernelProfile, JoinsKernelsToTheOperatorsTheyCameFrom) {
  Graph g;
  const NodeId x = *g.AddInput("x", TensorType{DType::kFloat32, {8, 16}});
  const NodeId w = *g.AddWeight("w", {16, 16}, WeightInit{});
  const NodeId b = *g.AddWeight("b", {16}, WeightInit{});
  const NodeId scale = *g.AddWeight("scale", {16}, WeightInit{});
  const NodeId mm = *g.AddOp(OpType::kMatMul, {{x, 0}, {w, 0}});
  const NodeId add = *g.AddOp(OpType::kAdd, {{mm, 0}, {b, 0}});
  const NodeId res = *g.AddOp(OpType::kAdd, {{add, 0}, {x, 0}});
  const NodeId norm = *g.AddOp(OpType::kLayerNorm, {{res, 0}, {scale, 0}});
  const NodeId relu = *g.AddOp(OpType::kRelu, {{norm, 0}});
  ASSERT_TRUE(g.AddOutput("y", {relu, 0}).ok());

  OrtKernelProfile p;
  p.median_ms = 0.2;
  auto kernel = [&](const std::string& name, const std::string& op, double us) {
    OrtKernel k;
    k.node = name;
    k.op = op;
    k.median_us = us;
    p.kernels.push_back(k);
  };
  const std::string n = "n" + std::to_string(mm);
  kernel(n + "/MatMulAddFusion", "Gemm", 40);  // the MatMul, its bias Add absorbed
  kernel("SkipLayerNormalization", "SkipLayerNormalization", 9);  // residual Add + LayerNorm
  kernel("fused n" + std::to_string(relu), "Relu", 2);            // FusedGemm's naming
  kernel("gemm_input_reshape", "Reshape", 1);                     // ORT's own
  const KernelGraphSample s = KernelSamplesOf(g, p);
  ASSERT_EQ(s.nodes.size(), 5u);
  std::map<std::string, double> by_op;
  for (const KernelSample& k : s.nodes) by_op[k.features.op + "<" + k.features.producer] += k.us;
  EXPECT_DOUBLE_EQ(by_op["MatMul<"], 40);
  EXPECT_DOUBLE_EQ(by_op["Add<MatMul"], 0);  // absorbed
  EXPECT_DOUBLE_EQ(by_op["Add<Add"], 0);     // absorbed into SkipLayerNormalization
  EXPECT_DOUBLE_EQ(by_op["LayerNorm<Add"], 9);
  EXPECT_DOUBLE_EQ(by_op["Relu<LayerNorm"], 2);
  EXPECT_DOUBLE_EQ(s.unattributed_us, 1);

  // Its line of the sample file reads back.
  auto back = ParseKernelGraphSample(KernelGraphSampleJson(s));
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->nodes.size(), s.nodes.size());
  EXPECT_EQ(back->nodes[1].features.producer, s.nodes[1].features.producer);
  EXPECT_DOUBLE_EQ(back->nodes[0].us, 40);
  EXPECT_FALSE(ParseKernelGraphSample("{\"nodes\": [[1, 2]]}").ok());
}

TEST(KernelCostFile, RoundTripsAndModelsOfAnotherRuntimeAreRefused) {
  KernelCostParams p = ContextParams();
  p.runtime = "ort-cpu";
  p.runtime_version = "1.30.0";
  p.threads = 1;
  p.machine = "test machine";
  const std::string path = ::testing::TempDir() + "/kernel_model.json";
  ASSERT_TRUE(SaveKernelCost(p, path).ok());
  ASSERT_TRUE(IsKernelCostFile(path));
  auto back = LoadKernelCost(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->keys.size(), p.keys.size());
  EXPECT_EQ(back->machine, "test machine");
  const Graph g = Zoo("bert", 1);
  EXPECT_NEAR(*GraphCostMs(*std::make_unique<KernelCostModel>(*back), g),
              *GraphCostMs(*std::make_unique<KernelCostModel>(p), g), 1e-6);

  // Through the registry: learned:PATH reads it; a run that targets another runtime or thread
  // count refuses it, naming both.
  CostModelOptions o;
  o.kind = "learned:" + path;
  auto made = MakeCostModel(o);
  ASSERT_TRUE(made.ok()) << made.status().message();
  EXPECT_NE((*made)->Name().find("ort-cpu 1.30.0, 1 thread"), std::string::npos);
  o.target_runtime = "ort-cpu";
  o.num_threads = 2;
  auto threads = MakeCostModel(o);
  ASSERT_FALSE(threads.ok());
  EXPECT_NE(threads.status().message().find("not the runtime this run targets (ort-cpu, 2"),
            std::string::npos)
      << threads.status().message();
  p.runtime = "cuda:h100";
  ASSERT_TRUE(SaveKernelCost(p, path).ok());
  o.num_threads = 1;
  auto gpu = MakeCostModel(o);
  ASSERT_FALSE(gpu.ok());
  EXPECT_NE(gpu.status().message().find("predicts cuda:h100"), std::string::npos)
      << gpu.status().message();

  // Bad files say what is wrong.
  {
    std::ofstream f(path);
    f << "{\"format\": \"rewire-kernel-cost\", \"version\": 1, \"runtime\": \"ort-cpu\", "
         "\"threads\": 1, \"calibration\": [1, 0], \"keys\": {\"Add\": [1, -2, 0, 0, 0, 0]}}";
  }
  auto bad = LoadKernelCost(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("key 'Add'"), std::string::npos);
  EXPECT_EQ(LoadKernelCost(path + ".none").status().code(), StatusCode::kNotFound);
}

TEST(KernelCostFile, TheShippedModelsLoadAndNameTheirMachine) {
  for (int threads : {1, 2}) {
    const std::string path = ShippedKernelModelPath(kSourceDir + "/configs/devices", threads);
    auto p = LoadKernelCost(path);
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(p->runtime, "ort-cpu");
    EXPECT_EQ(p->threads, threads);
    EXPECT_FALSE(p->machine.empty());
    // `learned` at that thread count is that model.
    CostModelOptions o;
    o.kind = "learned";
    o.devices_dir = kSourceDir + "/configs/devices";
    o.num_threads = threads;
    o.target_runtime = "ort-cpu";
    auto m = MakeCostModel(o);
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_NE((*m)->Name().find(std::to_string(threads) + (threads == 1 ? " thread" : " threads")),
              std::string::npos)
        << (*m)->Name();
  }
  // There is none for 3 threads: the error says how to fit one.
  CostModelOptions three;
  three.kind = "learned";
  three.devices_dir = kSourceDir + "/configs/devices";
  three.num_threads = 3;
  auto none = MakeCostModel(three);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("rewire cost profile --threads N"), std::string::npos);
  CostModelOptions o;
  o.kind = "learned";
  o.devices_dir = kSourceDir + "/configs/devices";
  auto m = MakeCostModel(o);
  ASSERT_TRUE(m.ok()) << m.status().message();
  // It costs every zoo model.
  for (const ModelInfo& info : ZooModels()) {
    const std::string name = info.name;
    auto g = BuildModel(name);
    ASSERT_TRUE(g.ok());
    auto ms = GraphCostMs(**m, *g);
    ASSERT_TRUE(ms.ok()) << name << ": " << ms.status().message();
    EXPECT_GT(*ms, 0) << name;
  }
}

}  // namespace
}  // namespace rewire

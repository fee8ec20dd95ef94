#include "env/eqsat/extract.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "env/eqsat/saturate.h"
#include "env/search_registry.h"
#include "graph/models/zoo.h"
#include "tests/graph/test_util.h"
#include "tests/ruleset/shipped_rules.h"

namespace rewire::eqsat {
namespace {

using testing::F32;
using testing::Must;
using testing::V;

ClassId ClassOfOrigin(const EGraph& eg, NodeId origin) {
  for (ClassId c : eg.Classes()) {
    for (ENodeId n : eg.Nodes(c)) {
      if (eg.Origin(n) == origin) return c;
    }
  }
  return kNone;
}

/// y = Relu(Tanh(x)) on an x of `shape`, built into `g`; its nodes.
struct TanhRelu {
  NodeId x, tanh, relu;
};
TanhRelu BuildTanhRelu(Graph* g, Shape shape) {
  TanhRelu n;
  n.x = Must(g->AddInput("x", F32(std::move(shape))));
  n.tanh = Must(g->AddOp(OpType::kTanh, {V(n.x)}));
  n.relu = Must(g->AddOp(OpType::kRelu, {V(n.tanh)}));
  EXPECT_TRUE(g->AddOutput("y", V(n.relu)).ok());
  return n;
}

/// y = Relu(Tanh(x)), and then Tanh(x)'s class also holds Identity(y): choosing the Identity
/// costs nothing and drops the Tanh, but reads the output from which it is read, a cycle.
EGraph TemptingEGraph(Graph* g) {
  const TanhRelu n = BuildTanhRelu(g, {64, 64});
  EGraph eg = Must(EGraph::FromGraph(*g));
  const ClassId ct = ClassOfOrigin(eg, n.tanh), cr = ClassOfOrigin(eg, n.relu);
  const ClassId id = Must(eg.AddOp(OpType::kIdentity, {}, {cr}));
  EXPECT_TRUE(eg.Union(ct, id));
  eg.Rebuild();
  return eg;
}

TEST(Extract, IlpNeverReturnsACyclicGraph) {
  Graph g;
  EGraph eg = TemptingEGraph(&g);
  auto cost = rewire::testing::AnalyticCost();
  ASSERT_TRUE(CostENodes(eg, *cost).ok());
  const ExtractionBasis basis = MakeBasis(eg);
  const Choice greedy = Must(GreedyChoice(eg, basis, TreeCost::kPerConsumer));
  IlpOptions o;
  o.warm_start = false;  // the solver's own solution, not the greedy one handed back
  const IlpOutcome ilp = IlpChoice(eg, basis, greedy, o);
  ASSERT_TRUE(ilp.solved) << ilp.note;
  EXPECT_TRUE(ilp.optimal);
  // Three columns (Tanh, Identity, Relu). Without order the problem's optimum is the cycle (the
  // Identity is free): one cycle is cut, and the second integer round returns the input.
  EXPECT_EQ(ilp.variables, 3u);
  EXPECT_EQ(ilp.cycle_cuts, 1u);
  EXPECT_EQ(ilp.rounds, 2u);
  const double c = Must(ChoiceCost(eg, basis, ilp.choice));
  EXPECT_NEAR(c, Must(GraphCostMs(*cost, g)), 1e-12);  // the input: Tanh and Relu
  const Graph out = Must(BuildGraph(eg, ilp.choice));
  EXPECT_TRUE(out.Validate().ok());
  EXPECT_EQ(out.OpCounts().count(OpType::kTanh), 1u);
}

TEST(Extract, TheCycleIsCheaperWhenOrderIsIgnored) {
  // The same e-graph: the Identity would be chosen if a cycle were allowed, which is what makes
  // the test above a temptation. Its cost: the Relu alone.
  Graph g;
  EGraph eg = TemptingEGraph(&g);
  auto cost = rewire::testing::AnalyticCost();
  ASSERT_TRUE(CostENodes(eg, *cost).ok());
  const ExtractionBasis basis = MakeBasis(eg);
  Choice cyclic(eg.class_bound(), kNone);
  for (ClassId c : eg.Classes()) {
    for (ENodeId n : eg.Nodes(c)) {
      const ENode& e = eg.node(n);
      if (e.kind == ENodeKind::kLeaf || e.op == OpType::kIdentity || e.op == OpType::kRelu)
        cyclic[c] = n;
    }
  }
  EXPECT_FALSE(ChoiceCost(eg, basis, cyclic).ok());
  EXPECT_FALSE(BuildGraph(eg, cyclic).ok());
}

/// NASRNN's e-graph after a few rounds of the shipped rules.
EGraph NasrnnEGraph(int rounds) {
  const Graph g = Must(BuildModel("nasrnn"));
  RewriteState s{Must(EGraph::FromGraph(g)), {}};
  std::vector<ERule> rules;
  const auto& shipped = rewire::testing::VerifiedShippedRules();
  for (size_t i = 0; i < shipped.size(); ++i) rules.emplace_back(shipped[i], static_cast<int>(i));
  SaturationOptions o;
  o.iteration_limit = rounds;
  EXPECT_TRUE(Saturate(s, rules, o).ok());
  return std::move(s.egraph);
}

TEST(Extract, IlpIsNoWorseThanGreedyAndCostsWhatItsGraphCosts) {
  EGraph eg = NasrnnEGraph(3);
  auto cost = rewire::testing::AnalyticCost();
  ExtractOptions o;
  o.kind = "ilp";
  o.ilp.time_limit_s = 2;
  const Extraction x = Must(Extract(eg, *cost, o));
  EXPECT_LE(x.cost_ms, x.incumbent_cost_ms + 1e-12);
  EXPECT_LE(x.incumbent_cost_ms, x.greedy_cost_ms + 1e-12);
  EXPECT_NEAR(x.cost_ms, Must(GraphCostMs(*cost, x.graph)), 1e-9);
  EXPECT_TRUE(x.graph.Validate().ok());
}

TEST(Extract, AnIlpTooLargeFallsBackToGreedyWithANote) {
  EGraph eg = NasrnnEGraph(2);
  auto cost = rewire::testing::AnalyticCost();
  ExtractOptions o;
  o.kind = "ilp";
  o.ilp.max_nodes = 10;
  const Extraction x = Must(Extract(eg, *cost, o));
  EXPECT_EQ(x.kind, "greedy");
  EXPECT_NE(x.note.find("over the ILP limit of 10"), std::string::npos) << x.note;
  EXPECT_NE(x.note.find("greedy extraction (with local search) used instead"), std::string::npos);
  EXPECT_TRUE(x.graph.Validate().ok());
}

TEST(Extract, AnIlpOutOfTimeFallsBackToGreedyWithANote) {
  EGraph eg = NasrnnEGraph(3);
  auto cost = rewire::testing::AnalyticCost();
  ExtractOptions o;
  o.kind = "ilp";
  o.ilp.time_limit_s = 1e-6;
  o.ilp.warm_start = false;
  const Extraction x = Must(Extract(eg, *cost, o));
  EXPECT_EQ(x.kind, "greedy");
  EXPECT_NE(x.note.find("no solution within the time limit of 1e-06 s"), std::string::npos)
      << x.note;
  EXPECT_NEAR(x.cost_ms, x.incumbent_cost_ms, 1e-12);
  EXPECT_TRUE(x.graph.Validate().ok());
}

/// Every operator costs 1 ms, but Tanh is free where a Relu reads it (a runtime fusing the
/// pair) and Sigmoid costs 0.8 ms: costed alone, as an e-node is, Sigmoid is the cheaper.
class FusingCost : public CostModel {
 public:
  std::string Name() const override { return "fusing"; }
  bool context_dependent() const override { return true; }

 protected:
  StatusOr<double> OpCostMs(const Graph& g, const Node& n) override {
    if (n.op == OpType::kSigmoid) return 0.8;
    if (n.op == OpType::kTanh) {
      for (const Use& u : n.users[0]) {
        if (g.node(u.node).op == OpType::kRelu) return 0.0;
      }
    }
    return 1.0;
  }
};

/// y = Relu(Tanh(x)), Tanh(x)'s class also holding Sigmoid(x) (extraction does not care what
/// the class means).
EGraph TanhOrSigmoid(Graph* g) {
  const TanhRelu n = BuildTanhRelu(g, {8, 8});
  EGraph eg = Must(EGraph::FromGraph(*g));
  const ClassId sigmoid = Must(eg.AddOp(OpType::kSigmoid, {}, {ClassOfOrigin(eg, n.x)}));
  EXPECT_TRUE(eg.Union(ClassOfOrigin(eg, n.tanh), sigmoid));
  eg.Rebuild();
  return eg;
}

TEST(Extract, TheShippedKernelModelPricesTheAdditivePickAsTheWholeGraphDoes) {
  // Equality saturation extracts under the kernel model's context-free part and prices the
  // pick whole. On BERT the e-graph fuses the GELU into the first feed-forward GEMM and the bias
  // into the second, so a GEMM feeds a GEMM: the whole model must not carry the first one's work
  // into the second's kernel (it once priced that pick at 5x the input, 121.9 ms against 24.0
  // ms additive, and every e-graph search on BERT kept the input).
  auto cost = testing::ShippedKernelCost();
  ASSERT_NE(cost, nullptr);
  ASSERT_TRUE(cost->context_dependent());
  ModelParams p;
  p.layers = 2;
  const Graph g = Must(BuildModel("bert", p));
  const SearchResult r = Must(RunSearch("eqsat", g, rewire::testing::VerifiedShippedRules(), *cost,
                                        {}, {{"egraph-nodes", "10000"}, {"extract", "greedy"}}));
  const double additive = r.stats.Number("greedy_cost_ms");
  const double whole = r.stats.Number("additive_pick_whole_cost_ms");
  ASSERT_GT(r.stats.Number("reranked"), 0);
  ASSERT_GT(additive, 0);
  EXPECT_LT(std::abs(whole / additive - 1), 0.1)
      << "additive " << additive << " ms, costed whole " << whole << " ms";
  // The graph taken is the additive pick's kind: the GELUs fused away, cheaper than the input.
  EXPECT_EQ(r.best.OpCounts()[OpType::kGelu], 0) << r.stats.Text("note");
  EXPECT_LT(r.final_cost_ms, r.initial_cost_ms);
}

TEST(Extract, AContextDependentCostReranksTheExtractionsWhole) {
  for (const std::string kind : {"greedy", "ilp"}) {
    Graph g;
    EGraph eg = TanhOrSigmoid(&g);
    FusingCost cost;
    ExtractOptions o;
    o.kind = kind;
    const Extraction x = Must(Extract(eg, cost, o));
    // The additive part takes Sigmoid (0.8 + 1); costed whole the input's Tanh, fused into the
    // Relu, is cheaper (0 + 1), and is taken.
    EXPECT_GE(x.reranked, 3u) << kind;
    EXPECT_NEAR(x.additive_pick_whole_cost_ms, 1.8, 1e-12) << kind;
    EXPECT_NEAR(x.whole_cost_ms, 1.0, 1e-12) << kind;
    EXPECT_NEAR(Must(GraphCostMs(cost, x.graph)), 1.0, 1e-12) << kind;
    EXPECT_EQ(x.graph.OpCounts()[OpType::kTanh], 1) << kind;
    EXPECT_EQ(x.graph.OpCounts()[OpType::kSigmoid], 0) << kind;
    EXPECT_NE(x.note.find("re-ranked by the whole model: taken from the input's e-nodes"),
              std::string::npos)
        << x.note;
    // Without re-ranking the additive optimum is taken.
    o.rerank_whole = false;
    const Extraction plain = Must(Extract(eg, cost, o));
    EXPECT_EQ(plain.reranked, 0u);
    EXPECT_EQ(plain.graph.OpCounts()[OpType::kSigmoid], 1) << kind;
    EXPECT_NEAR(plain.cost_ms, 1.8, 1e-12) << kind;
  }
  // A context-free model is never re-ranked: its additive optimum is its optimum.
  Graph g;
  EGraph eg = TanhOrSigmoid(&g);
  auto analytic = rewire::testing::AnalyticCost();
  EXPECT_EQ(Must(Extract(eg, *analytic, {})).reranked, 0u);
}

/// y = Transpose(Relu(Transpose(x))) and the same function as Relu(x), on the same input node.
struct TwoForms {
  TwoForms() {
    const NodeId x = Must(input.AddInput("x", F32({16, 32})));
    const NodeId t1 = Must(input.AddOp(OpType::kTranspose, {V(x)}, {{"perm", Ints{1, 0}}}));
    const NodeId r = Must(input.AddOp(OpType::kRelu, {V(t1)}));
    const NodeId t2 = Must(input.AddOp(OpType::kTranspose, {V(r)}, {{"perm", Ints{1, 0}}}));
    EXPECT_TRUE(input.AddOutput("y", V(t2)).ok());
    // The seed as a search would leave it: the input's leaf (node 0), new operators.
    const NodeId sx = Must(seed.AddInput("x", F32({16, 32})));
    EXPECT_EQ(sx, x);
    EXPECT_TRUE(seed.AddOutput("y", V(Must(seed.AddOp(OpType::kRelu, {V(sx)})))).ok());
  }
  Graph input, seed;
};

TEST(EGraphSeed, ASeedJoinsTheInputsRootsAndIsExtracted) {
  TwoForms f;
  EGraph eg = Must(EGraph::FromGraph(f.input));
  const size_t before = eg.num_nodes();
  ASSERT_TRUE(eg.AddSeed(f.seed).ok());
  EXPECT_EQ(eg.num_nodes(), before + 1);  // Relu(x): the input's leaf is shared
  ASSERT_EQ(eg.roots().size(), 1u);
  auto cost = rewire::testing::AnalyticCost();
  for (const char* kind : {"greedy", "ilp"}) {
    EGraph copy = eg;
    ExtractOptions o;
    o.kind = kind;
    const Extraction x = Must(Extract(copy, *cost, o));
    EXPECT_EQ(x.graph.NumOperators(), 1) << kind;
    EXPECT_EQ(x.graph.OpCounts()[OpType::kRelu], 1) << kind;
    EXPECT_NEAR(x.cost_ms, Must(GraphCostMs(*cost, f.seed)), 1e-12) << kind;
  }
}

TEST(EGraphSeed, RefusesASeedThatIsNotOfTheInput) {
  TwoForms f;
  EGraph eg = Must(EGraph::FromGraph(f.input));
  // A leaf the input does not have.
  Graph other;
  const NodeId z = Must(other.AddInput("z", F32({16, 32})));
  ASSERT_TRUE(other.AddOutput("y", V(Must(other.AddOp(OpType::kRelu, {V(z)})))).ok());
  EXPECT_EQ(eg.AddSeed(other).message(),
            "seeding the e-graph: the seed's Input 'z' (node 0) is not the input graph's");
  // An output the input does not have.
  Graph renamed = f.seed;
  ASSERT_TRUE(renamed.AddOutput("w", renamed.outputs()[0].value).ok());
  EXPECT_EQ(eg.AddSeed(renamed).message(),
            "seeding the e-graph: the seed has an output 'w' the input graph does not have");
}

/// The cheapest acyclic extraction by enumeration: every combination of extractable e-nodes over
/// the classes reachable from the roots (through any extractable e-node), each costed by
/// ChoiceCost (cyclic ones fail and are skipped). `combinations` receives how many were tried.
double BruteForceOptimum(const EGraph& eg, const ExtractionBasis& basis, size_t* combinations) {
  std::vector<ClassId> reach;
  std::vector<bool> seen(eg.class_bound(), false);
  for (const EGraph::Root& r : eg.roots()) {
    const ClassId c = eg.Find(r.cls);
    if (!seen[c]) reach.push_back(c), seen[c] = true;
  }
  for (size_t i = 0; i < reach.size(); ++i) {
    for (ENodeId n : eg.Nodes(reach[i])) {
      if (!basis.extractable[n]) continue;
      for (ClassId child : eg.node(n).children) {
        const ClassId c = eg.Find(child);
        if (!seen[c]) reach.push_back(c), seen[c] = true;
      }
    }
  }
  std::vector<std::vector<ENodeId>> options;
  for (ClassId c : reach) {
    std::vector<ENodeId> usable;
    for (ENodeId n : eg.Nodes(c))
      if (basis.extractable[n]) usable.push_back(n);
    options.push_back(usable);
  }
  Choice choice(eg.class_bound(), kNone);
  double best = std::numeric_limits<double>::infinity();
  *combinations = 0;
  std::function<void(size_t)> walk = [&](size_t i) {
    if (i == reach.size()) {
      ++*combinations;
      const StatusOr<double> c = ChoiceCost(eg, basis, choice);
      if (c.ok()) best = std::min(best, *c);
      return;
    }
    if (options[i].empty()) return walk(i + 1);
    for (ENodeId n : options[i]) {
      choice[reach[i]] = n;
      walk(i + 1);
    }
    choice[reach[i]] = kNone;
  };
  walk(0);
  return best;
}

/// `k` MatMuls of one input, each through a Relu, after `rounds` rounds of the shipped rules:
/// the merged MatMuls (a Concat of the weights, a Split) compete with the k.
EGraph SharedInputEGraph(int k = 2, int rounds = 2) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({32, 64})));
  for (int i = 0; i < k; ++i) {
    const NodeId w = Must(g.AddWeight("W" + std::to_string(i), {64, 64}, WeightInit{}));
    const NodeId mm = Must(g.AddOp(OpType::kMatMul, {V(x), V(w)}));
    EXPECT_TRUE(
        g.AddOutput("y" + std::to_string(i), V(Must(g.AddOp(OpType::kRelu, {V(mm)})))).ok());
  }
  RewriteState s{Must(EGraph::FromGraph(g)), {}};
  std::vector<ERule> rules;
  const auto& shipped = rewire::testing::VerifiedShippedRules();
  for (size_t i = 0; i < shipped.size(); ++i) rules.emplace_back(shipped[i], static_cast<int>(i));
  SaturationOptions o;
  o.iteration_limit = rounds;
  EXPECT_TRUE(Saturate(s, rules, o).ok());
  return std::move(s.egraph);
}

/// A zoo model's e-graph (one layer or cell) after `rounds` rounds of the shipped rules
/// (multi-pattern rules in all), at most 3,000 e-nodes.
EGraph ZooEGraph(const std::string& model, int rounds) {
  ModelParams params;
  params.layers = 1;
  const Graph g = Must(BuildModel(model, params));
  RewriteState s{Must(EGraph::FromGraph(g)), {}};
  std::vector<ERule> rules;
  const auto& shipped = rewire::testing::VerifiedShippedRules();
  for (size_t i = 0; i < shipped.size(); ++i) rules.emplace_back(shipped[i], static_cast<int>(i));
  SaturationOptions o;
  o.iteration_limit = rounds;
  o.multi_iterations = rounds;
  o.round.node_limit = 3000;
  EXPECT_TRUE(Saturate(s, rules, o).ok());
  return std::move(s.egraph);
}

TEST(Extract, RequirementRowsRaiseTheRelaxationAndHoldForTheOptimum) {
  // The relaxation supports a class by many e-nodes at a small fraction each, all requiring one
  // costly class that it then pays a small fraction of; the rows "an e-node's choice requires
  // class m: no more of them than of m" close that. On NASRNN's e-graph they close it all.
  for (const char* model : {"nasrnn", "squeezenet", "xrlflow-bert"}) {
    EGraph eg = ZooEGraph(model, 2);
    auto cost = rewire::testing::AnalyticCost();
    ASSERT_TRUE(CostENodes(eg, *cost).ok());
    const ExtractionBasis basis = MakeBasis(eg);
    const Choice greedy = Must(GreedyChoice(eg, basis, TreeCost::kPerConsumer));
    IlpOptions io;
    io.time_limit_s = 60;
    const IlpOutcome ilp = IlpChoice(eg, basis, greedy, io);
    ASSERT_TRUE(ilp.solved) << model << ": " << ilp.note;
    ASSERT_TRUE(ilp.optimal) << model << ": " << ilp.note;
    const double optimum = Must(ChoiceCost(eg, basis, ilp.choice));
    EXPECT_GT(ilp.requirement_rows, 0u) << model;
    EXPECT_GE(ilp.lp_rounds, 2u) << model;
    // Both relaxations are lower bounds, the rows' the higher by far.
    EXPECT_LE(ilp.relaxation_bound, optimum * (1 + 1e-9)) << model;
    EXPECT_GT(ilp.relaxation_bound, 1.4 * ilp.plain_bound) << model;
    if (std::string(model) == "nasrnn") {
      EXPECT_LT(ilp.plain_bound, 0.5 * optimum);
      EXPECT_NEAR(ilp.relaxation_bound, optimum, 1e-9 * optimum);
    }
    // Without the rows the integer problem is the same: its optimum is too.
    io.requirement_rows = false;
    io.time_limit_s = 2;
    const IlpOutcome plain = IlpChoice(eg, basis, greedy, io);
    EXPECT_EQ(plain.requirement_rows, 0u) << model;
    if (plain.optimal) {
      EXPECT_NEAR(Must(ChoiceCost(eg, basis, plain.choice)), optimum, 1e-9 * optimum) << model;
    }
  }
}

TEST(Extract, AnIntegerProblemThatWouldOverrunTheLimitIsNotBegunAndTheStartKeepsTheLpBound) {
  // Where the integer problem's root LP (taken to last integer_root_factor times the LP rounds)
  // would not end within the limit, the LP rounds have the limit and the start is returned with
  // their bound; a factor no LP can meet makes that so here, whatever the machine's speed.
  EGraph eg = ZooEGraph("xrlflow-bert", 2);
  auto cost = rewire::testing::AnalyticCost();
  ASSERT_TRUE(CostENodes(eg, *cost).ok());
  const ExtractionBasis basis = MakeBasis(eg);
  Choice start = Must(GreedyChoice(eg, basis, TreeCost::kPerConsumer));
  const double start_cost = ImproveChoice(eg, basis, &start, Clock::time_point::max());
  IlpOptions io;
  io.time_limit_s = 60;
  const IlpOutcome full = IlpChoice(eg, basis, start, io);
  ASSERT_TRUE(full.solved && full.optimal) << full.note;
  const double optimum = Must(ChoiceCost(eg, basis, full.choice));
  ASSERT_LT(optimum, start_cost * (1 - 1e-6)) << "the integer problem improves on this start";
  io.integer_root_factor = 1e12;
  const IlpOutcome lp_only = IlpChoice(eg, basis, start, io);
  ASSERT_TRUE(lp_only.solved) << lp_only.note;
  EXPECT_NE(lp_only.note.find("leaves the integer problem no time"), std::string::npos)
      << lp_only.note;
  EXPECT_EQ(lp_only.rounds, 0u);
  EXPECT_FALSE(lp_only.optimal);
  EXPECT_NEAR(Must(ChoiceCost(eg, basis, lp_only.choice)), start_cost, 1e-9 * start_cost);
  // The LP rounds ran to the end (no row left to add): the same bound as with the integer
  // rounds' time, a lower bound on the optimum, and above the plain relaxation's.
  EXPECT_GE(lp_only.lp_rounds, 2u);
  EXPECT_NEAR(lp_only.relaxation_bound, full.relaxation_bound, 1e-9 * optimum);
  EXPECT_NEAR(lp_only.bound, lp_only.relaxation_bound, 1e-12);
  EXPECT_LE(lp_only.bound, optimum * (1 + 1e-9));
  EXPECT_GT(lp_only.bound, lp_only.plain_bound);
}

TEST(Extract, TheIlpFindsTheBruteForceOptimumOfASmallEGraph) {
  for (const char* name : {"tempting", "tanh-or-sigmoid", "shared-input"}) {
    Graph g;
    EGraph eg = std::string(name) == "tempting"          ? TemptingEGraph(&g)
                : std::string(name) == "tanh-or-sigmoid" ? TanhOrSigmoid(&g)
                                                         : SharedInputEGraph();
    auto cost = rewire::testing::AnalyticCost();
    ASSERT_TRUE(CostENodes(eg, *cost).ok());
    const ExtractionBasis basis = MakeBasis(eg);
    size_t combinations = 0;
    const double optimum = BruteForceOptimum(eg, basis, &combinations);
    ASSERT_TRUE(std::isfinite(optimum)) << name;
    // The ILP alone (not handed greedy's choice) proves the optimum and reaches it.
    const Choice greedy = Must(GreedyChoice(eg, basis, TreeCost::kPerConsumer));
    IlpOptions io;
    io.warm_start = false;
    io.time_limit_s = 30;
    const IlpOutcome ilp = IlpChoice(eg, basis, greedy, io);
    ASSERT_TRUE(ilp.solved) << name << ": " << ilp.note;
    EXPECT_TRUE(ilp.optimal) << name;
    EXPECT_NEAR(Must(ChoiceCost(eg, basis, ilp.choice)), optimum, 1e-9) << name;
    // Extract (greedy and local search, then the ILP) gives a graph of that cost.
    ExtractOptions o;
    o.ilp.time_limit_s = 30;
    const Extraction x = Must(Extract(eg, *cost, o));
    EXPECT_NEAR(x.cost_ms, optimum, 1e-9) << name << " (" << combinations << " extractions)";
    EXPECT_NEAR(Must(GraphCostMs(*cost, x.graph)), optimum, 1e-9) << name;
    // Proved optimal: the bound meets the cost and the gap the report carries is 0.
    EXPECT_TRUE(x.ilp_optimal) << name;
    EXPECT_NEAR(x.ilp_bound_ms, optimum, 1e-6) << name;
    EXPECT_NEAR(x.ilp_gap, 0.0, 1e-6) << name;
    if (std::string(name) == "shared-input") {
      // An e-graph with a choice to make: more than the input's one extraction.
      EXPECT_GT(combinations, 10u) << name;
      // The merged MatMul is in it and cheaper than the input's two.
      const Choice input = InputChoice(eg, basis, greedy);
      EXPECT_LT(optimum, Must(ChoiceCost(eg, basis, input)) - 1e-9) << name;
      EXPECT_LE(combinations, 5000000u) << name << ": the enumeration is too large for a test";
    }
  }
}

TEST(Extract, RejectsAnUnknownKind) {
  Graph g;
  EGraph eg = TemptingEGraph(&g);
  auto cost = rewire::testing::AnalyticCost();
  EXPECT_EQ(Extract(eg, *cost, {"best", {}}).status().message(),
            "unknown extraction 'best' (known: greedy, ilp)");
}

}  // namespace
}  // namespace rewire::eqsat

// The graph matcher (graph/rules/matcher.h) and the e-graph matcher (env/eqsat/ematch.h) give a
// rule the same meaning: on the e-graph of a graph, before any rewrite, the e-matches are the
// graph's matches plus those the graph matcher rejects for what only one graph has (an interior
// value that escapes, a rewrite that would close a cycle). Checked for every rule under
// configs/rules on every zoo model at small sizes, except the models with identical operators
// (the e-graph holds them as one e-node, the graph matcher matches each copy).

#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "env/eqsat/ematch.h"
#include "graph/models/zoo.h"
#include "graph/rules/matcher.h"
#include "graph/weights.h"
#include "tests/graph/test_util.h"

namespace rewire::eqsat {
namespace {

using testing::Must;

/// `g` rebuilt so that its node ids follow its own topological order, the order in which
/// EGraph::FromGraph numbers classes: `precedes` (node ids in a graph, class ids in an e-graph)
/// then orders both the same way. Null when an id order is not reached (or a node is opaque).
std::optional<Graph> WithTopologicalIds(Graph g) {
  for (int round = 0; round < 8; ++round) {
    const std::vector<NodeId> order = g.TopologicalOrder();
    if (order == g.NodeIds()) return g;
    Graph out;
    std::map<NodeId, NodeId> id;
    for (NodeId old : order) {
      const Node& n = g.node(old);
      StatusOr<NodeId> added = InvalidArgument("opaque");
      if (n.op == OpType::kInput) {
        added = out.AddInput(n.name, n.outputs[0]);
      } else if (n.op == OpType::kWeight) {
        added = n.data ? out.AddWeightData(n.name, n.data)
                       : out.AddWeight(n.name, n.outputs[0].shape, GetWeightInit(n));
      } else if (n.op == OpType::kConstant) {
        added = out.AddConstant(n.name, n.data);
      } else if (n.op != OpType::kOpaque) {
        std::vector<ValueRef> inputs;
        for (const ValueRef& in : n.inputs) inputs.push_back({id.at(in.node), in.index});
        added = out.AddOp(n.op, inputs, n.attrs, n.name);
      }
      if (!added.ok()) return std::nullopt;
      id[old] = *added;
    }
    for (const GraphOutput& o : g.outputs()) {
      if (!out.AddOutput(o.name, {id.at(o.value.node), o.value.index}).ok()) return std::nullopt;
    }
    g = std::move(out);
  }
  return std::nullopt;
}

/// A match in e-graph terms, comparable.
using Binding = std::pair<std::vector<ENodeId>, std::vector<ClassId>>;

/// The e-node of every node of the graph an e-graph was built from, and the class of every value.
struct Correspondence {
  std::map<NodeId, ENodeId> node;
  std::map<ValueRef, ClassId> value;
};

/// Null when two operators of the graph share one e-node (identical operators are hash-consed:
/// the graph has a match per copy, the e-graph one).
std::optional<Correspondence> Correspond(const Graph& g, const EGraph& eg) {
  Correspondence c;
  for (ENodeId n = 0; n < eg.node_bound(); ++n) {
    const ENode& en = eg.node(n);
    if (en.kind == ENodeKind::kProject) continue;
    const NodeId origin = en.kind == ENodeKind::kOp ? eg.Origin(n) : en.aux;
    if (origin != kNoNode) c.node[origin] = n;
  }
  for (NodeId id : g.NodeIds()) {
    auto it = c.node.find(id);
    if (it == c.node.end()) return std::nullopt;
    const ClassId cls = eg.ClassOf(it->second);
    const size_t outputs = g.node(id).outputs.size();
    for (uint32_t k = 0; k < outputs; ++k)
      c.value[{id, k}] = outputs == 1 ? cls : eg.Find(eg.FindProject(cls, k));
  }
  return c;
}

struct Model {
  std::string name;
  Graph graph;
};

std::vector<Model> SmallZooModels() {
  ModelParams small;
  small.image = 64;
  small.seq_len = 8;
  small.hidden = 64;
  small.heads = 2;
  small.layers = 1;
  std::vector<Model> out;
  for (const ModelInfo& info : ZooModels()) {
    StatusOr<Graph> g = BuildModel(info.name, small);
    if (!g.ok()) g = BuildModel(info.name);  // a model whose shapes need its defaults
    EXPECT_TRUE(g.ok()) << info.name << ": " << g.status().message();
    if (g.ok()) out.push_back({info.name, std::move(g).value()});
  }
  return out;
}

std::vector<rules::Rule> AllRules() {
  const std::string dir = std::string(REWIRE_SOURCE_DIR) + "/configs/rules";
  std::vector<rules::Rule> out;
  for (const std::string& path :
       {dir, dir + "/generated", dir + "/generated/transformer", dir + "/taso"}) {
    for (rules::Rule& r : Must(rules::LoadRules(path))) out.push_back(std::move(r));
  }
  return out;
}

TEST(MatchersAgree, EveryRuleOnEveryZooModelBeforeAnyRewrite) {
  const std::vector<rules::Rule> all = AllRules();
  ASSERT_GT(all.size(), 200u);
  size_t models = 0, graph_matches = 0, only_in_egraph = 0;
  for (Model& m : SmallZooModels()) {
    const std::optional<Graph> g = WithTopologicalIds(std::move(m.graph));
    ASSERT_TRUE(g) << m.name << ": no node numbering in topological order";
    const EGraph eg = Must(EGraph::FromGraph(*g));
    const std::optional<Correspondence> c = Correspond(*g, eg);
    if (!c) {  // identical operators share an e-node
      std::cout << "skipped " << m.name << ": identical operators\n";
      continue;
    }
    ++models;
    const rules::MatchIndex index(*g);
    for (size_t r = 0; r < all.size(); ++r) {
      rules::RejectStats rejects;
      const std::vector<rules::Match> matches =
          rules::FindMatches(*g, all[r], static_cast<int>(r), index, &rejects);
      std::set<Binding> from_graph;
      for (const rules::Match& match : matches) {
        Binding b;
        for (NodeId id : match.nodes) b.first.push_back(c->node.at(id));
        for (const ValueRef& v : match.free_values) b.second.push_back(c->value.at(v));
        from_graph.insert(std::move(b));
      }
      std::set<Binding> from_egraph;
      for (const EMatch& e : FindEMatches(eg, ERule(all[r], static_cast<int>(r)))) {
        std::vector<ClassId> free;
        for (ClassId f : e.free_classes) free.push_back(eg.Find(f));
        from_egraph.insert({e.nodes, free});
      }
      const std::string where = m.name + ", rule " + all[r].name;
      ASSERT_EQ(from_graph.size(), matches.size()) << where;
      ASSERT_EQ(from_egraph.size(), from_graph.size() + rejects.escaping + rejects.cycle) << where;
      for (const Binding& b : from_graph) ASSERT_TRUE(from_egraph.count(b)) << where;
      graph_matches += from_graph.size();
      only_in_egraph += from_egraph.size() - from_graph.size();
    }
  }
  EXPECT_GE(models, 10u);
  EXPECT_GT(graph_matches, 1000u);
  std::cout << models << " models, " << all.size() << " rules: " << graph_matches
            << " matches in both, " << only_in_egraph << " only in the e-graph\n";
}

}  // namespace
}  // namespace rewire::eqsat

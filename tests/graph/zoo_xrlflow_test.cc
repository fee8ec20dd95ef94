// The zoo's TASO-style models: X-RLflow's graphs as written in TASO's API (xrlflow-*) and TASO's
// examples where the realistic zoo models differ from them (taso-*). Counts are asserted on
// purpose, as in zoo_test.cc: a change to a builder must show up here.

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "graph/models/zoo.h"

namespace rewire {
namespace {

using NamedShapes = std::vector<std::pair<std::string, Shape>>;

struct Expectation {
  std::string name;
  Shape input;          // the first input
  NamedShapes outputs;  // all outputs (xrlflow-bert has one per layer)
  int operators;
  int64_t parameters;
  std::string op_counts;  // "Op:count" in OpType order
};

NamedShapes BertOutputs(int64_t rows) {
  NamedShapes out;
  for (int i = 0; i < 8; ++i)
    out.push_back({"layer" + std::to_string(i) + ".attention", {rows, 1024}});
  out.push_back({"output", {rows, 1024}});
  return out;
}

const std::vector<Expectation>& Expectations() {
  static const std::vector<Expectation> table = {
      {"xrlflow-bert",
       {64, 1024},
       BertOutputs(64),
       113,
       33'554'432,
       "Input:1 Weight:32 Relu:1 MatMul:48 Reshape:32 Transpose:32"},
      {"xrlflow-vit",
       {64, 768},
       {{"output", {64, 768}}},
       217,
       84'934'656,
       "Input:1 Weight:72 Relu:1 Add:24 MatMul:96 Reshape:48 Transpose:48"},
      {"xrlflow-dalle",
       {16, 768},
       {{"output", {16, 768}}},
       177,
       56'647'680,
       "Input:9 Weight:64 Relu:9 Add:24 Mul:8 MatMul:72 Reshape:32 Transpose:32"},
      {"xrlflow-tt",
       {80, 512},
       {{"output", {80, 10}}},
       272,
       44'585'984,
       "Input:1 Weight:88 Relu:15 Add:28 MatMul:116 Concat:1 Reshape:56 Transpose:56"},
      {"xrlflow-resnext50",
       {1, 3, 224, 224},
       {{"output", {1, 2048, 7, 7}}},
       86,
       22'911'680,
       "Input:1 Weight:53 Conv2D:53 MaxPool2D:1 Relu:16 Add:16"},
      {"xrlflow-inceptionv3",
       {1, 3, 299, 299},
       {{"output", {1, 2048, 8, 8}}},
       119,
       21'751'136,
       "Input:1 Weight:94 Conv2D:94 MaxPool2D:4 AvgPool2D:10 Concat:11"},
      {"xrlflow-squeezenet",
       {1, 3, 224, 224},
       {{"output", {1, 1000}}},
       118,
       1'235'496,
       "Input:1 Weight:52 Conv2D:26 MaxPool2D:3 AvgPool2D:1 Relu:26 Dropout:1 Add:26 Concat:8 "
       "Reshape:27"},
      {"taso-bert",
       {1024, 1024},
       BertOutputs(1024),
       113,
       33'554'432,
       "Input:1 Weight:32 Relu:1 MatMul:48 Reshape:32 Transpose:32"},
      {"taso-nasneta",
       {1, 3, 224, 224},
       {{"output", {1, 5120, 7, 7}}},
       383,
       39'838'528,
       "Input:1 Weight:217 Conv2D:217 MaxPool2D:7 AvgPool2D:51 Add:90 Concat:18"},
  };
  return table;
}

std::string OpCountsString(const Graph& g) {
  std::string out;
  for (const auto& [op, n] : g.OpCounts()) {
    if (!out.empty()) out += ' ';
    out += std::string(OpName(op)) + ":" + std::to_string(n);
  }
  return out;
}

NamedShapes OutputShapes(const Graph& g) {
  NamedShapes out;
  for (const GraphOutput& o : g.outputs()) out.emplace_back(o.name, g.type(o.value).shape);
  return out;
}

Graph BuildOrDie(const std::string& name, const ModelParams& params = {}) {
  StatusOr<Graph> g = BuildModel(name, params);
  EXPECT_TRUE(g.ok()) << name << ": " << g.status().message();
  return g.ok() ? std::move(g).value() : Graph();
}

class TasoStyleZoo : public ::testing::TestWithParam<Expectation> {};

TEST_P(TasoStyleZoo, BuildsAValidGraphWithTheDocumentedShapesAndCounts) {
  const Expectation& e = GetParam();
  const Graph g = BuildOrDie(e.name);
  const Status valid = g.Validate();
  EXPECT_TRUE(valid.ok()) << valid.message();
  ASSERT_FALSE(g.inputs().empty());
  EXPECT_EQ(g.node(g.inputs()[0]).outputs[0].shape, e.input);
  EXPECT_EQ(OutputShapes(g), e.outputs);
  EXPECT_EQ(g.NumOperators(), e.operators);
  EXPECT_EQ(g.NumParameters(), e.parameters);
  EXPECT_EQ(OpCountsString(g), e.op_counts);
}

TEST_P(TasoStyleZoo, NamesAreUniqueAndTheSameSeedGivesTheSameGraph) {
  ModelParams p;
  p.seed = 7;
  const Graph a = BuildOrDie(GetParam().name, p), b = BuildOrDie(GetParam().name, p);
  std::set<std::string> names;
  for (NodeId id : a.NodeIds()) EXPECT_TRUE(names.insert(a.node(id).name).second);
  EXPECT_EQ(a.Hash(), b.Hash());
}

TEST_P(TasoStyleZoo, BatchTwoDoublesTheLeadingDimensionAndKeepsTheOperators) {
  const Graph one = BuildOrDie(GetParam().name);
  ModelParams p;
  p.batch = GetParam().name == "taso-bert" ? 32 : 2;  // TASO's bert example has batch 16
  const Graph g = BuildOrDie(GetParam().name, p);
  ASSERT_FALSE(g.inputs().empty());
  EXPECT_EQ(g.node(g.inputs()[0]).outputs[0].shape[0],
            2 * one.node(one.inputs()[0]).outputs[0].shape[0]);
  EXPECT_EQ(g.NumOperators(), GetParam().operators);
  EXPECT_TRUE(g.Validate().ok());
}

INSTANTIATE_TEST_SUITE_P(Zoo, TasoStyleZoo, ::testing::ValuesIn(Expectations()),
                         [](const ::testing::TestParamInfo<Expectation>& info) {
                           std::string n = info.param.name;
                           for (char& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

// X-RLflow's bert and vit multiply Q by K without transposing K: only d == seq_len type-checks.
TEST(TasoStyleZoo, BertNeedsHeadSizeEqualToTheSequenceLength) {
  for (const char* model : {"xrlflow-bert", "xrlflow-vit", "taso-bert"}) {
    SCOPED_TRACE(model);
    ModelParams p;
    p.seq_len = 32;
    const StatusOr<Graph> g = BuildModel(model, p);
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(g.status().message().find("hidden / heads == seq_len"), std::string::npos)
        << g.status().message();
    p.hidden = 256;
    p.heads = 8;
    EXPECT_TRUE(BuildModel(model, p).ok());
  }
}

TEST(TasoStyleZoo, LayersAndSizesShrinkTheTransformers) {
  ModelParams p;
  p.layers = 1;
  p.seq_len = 16;
  p.hidden = 64;
  p.heads = 4;
  EXPECT_EQ(BuildOrDie("xrlflow-bert", p).NumOperators(), 1 + 14);
  EXPECT_EQ(BuildOrDie("xrlflow-vit", p).NumOperators(), 1 + 18);
  EXPECT_EQ(BuildOrDie("xrlflow-dalle", p).NumOperators(), 1 + 22);
  // tt: two input projections, one audio and one label layer, the joint network.
  EXPECT_EQ(BuildOrDie("xrlflow-tt", p).NumOperators(), 2 + 2 * 19 + 4);
  const Graph dalle = BuildOrDie("xrlflow-dalle", p);
  EXPECT_EQ(dalle.inputs().size(), 2u) << "one unused mask input per layer";
}

TEST(TasoStyleZoo, ImageSizeChangesTheCnnInputs) {
  ModelParams p;
  p.image = 64;
  EXPECT_EQ(OutputShapes(BuildOrDie("xrlflow-resnext50", p))[0].second, (Shape{1, 2048, 2, 2}));
  p.image = 75;
  EXPECT_EQ(OutputShapes(BuildOrDie("xrlflow-inceptionv3", p))[0].second, (Shape{1, 2048, 1, 1}));
  p.image = 64;
  EXPECT_EQ(OutputShapes(BuildOrDie("xrlflow-squeezenet", p))[0].second, (Shape{1, 1000}));
}

// TASO's SAME padding gives ceil(in / stride) on odd sizes too: 225 -> 113 -> 57 -> 29 -> 15 -> 8.
TEST(TasoStyleZoo, SamePaddingGivesCeilOfInputOverStrideOnOddSizes) {
  ModelParams p;
  p.image = 225;
  const Graph g = BuildOrDie("xrlflow-resnext50", p);
  EXPECT_TRUE(g.Validate().ok());
  EXPECT_EQ(OutputShapes(g)[0].second, (Shape{1, 2048, 8, 8}));
}

}  // namespace
}  // namespace rewire

// The model zoo and the GraphBuilder behind it.
//
// Exact node / operator / parameter counts and per-op histograms are asserted on purpose: a
// change to a builder or a model must show up here (update the numbers deliberately).

#include "graph/models/zoo.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "graph/builder.h"
#include "graph/weights.h"

namespace rewire {
namespace {

using NamedShapes = std::vector<std::pair<std::string, Shape>>;

struct ZooExpectation {
  std::string name;
  NamedShapes inputs;
  NamedShapes outputs;
  size_t nodes;
  int operators;
  int64_t parameters;
  std::string op_counts;  // "Op:count" over Graph::OpCounts(), in OpType order
};

// Parameter counts include BatchNorm running mean and variance (they are Weights here), so
// they exceed PyTorch's parameters() by 2 x (BatchNorm channels): e.g. torchvision's
// resnext50_32x4d has 25,028,904 parameters and 34,112 BatchNorm channels. SqueezeNet 1.1
// (1,235,496) and VGG-19 (143,667,240) match torchvision exactly.
const std::vector<ZooExpectation>& Expectations() {
  static const std::vector<ZooExpectation> table = {
      {"inceptionv3",
       {{"input", {1, 3, 299, 299}}},
       {{"output", {1, 1000}}},
       787,
       314,
       23'869'000,
       "Input:1 Weight:472 Conv2D:94 MaxPool2D:4 AvgPool2D:9 GlobalAvgPool:1 Relu:94 BatchNorm:94 "
       "Add:1 MatMul:1 Concat:15 Flatten:1"},
      {"resnext50",
       {{"input", {1, 3, 224, 224}}},
       {{"output", {1, 1000}}},
       444,
       176,
       25'097'128,
       "Input:1 Weight:267 Conv2D:53 MaxPool2D:1 GlobalAvgPool:1 Relu:49 BatchNorm:53 Add:17 "
       "MatMul:1 Flatten:1"},
      {"squeezenet",
       {{"input", {1, 3, 224, 224}}},
       {{"output", {1, 1000}}},
       118,
       65,
       1'235'496,
       "Input:1 Weight:52 Conv2D:26 MaxPool2D:3 GlobalAvgPool:1 Relu:26 Concat:8 Flatten:1"},
      {"bert",
       {{"input", {1, 64, 1024}}},
       {{"output", {1, 64, 1024}}},
       361,
       232,
       100'769'792,
       "Input:1 Weight:128 Gelu:8 ScalarMul:8 LayerNorm:16 Softmax:8 Add:64 MatMul:64 Reshape:32 "
       "Transpose:32"},
      {"vit",
       {{"input", {1, 64, 768}}},
       {{"output", {1, 1000}}},
       549,
       352,
       85'825'000,
       "Input:1 Weight:196 Gelu:12 ScalarMul:12 LayerNorm:25 Softmax:12 Add:97 MatMul:97 "
       "Reshape:48 Transpose:48 ReduceMean:1"},
      {"dalle",
       {{"input", {1, 16, 768}}},
       {{"output", {1, 16, 768}}},
       301,
       209,
       56'649'216,
       "Input:1 Weight:90 Constant:1 Gelu:8 ScalarMul:8 LayerNorm:17 Softmax:8 Add:24 Mul:8 "
       "MatMul:72 Reshape:32 Transpose:32"},
      {"tt",
       {{"audio", {1, 80, 512}}, {"labels", {1, 16, 512}}},
       {{"output", {1, 80, 16, 256}}},
       652,
       417,
       44'791'552,
       "Input:2 Weight:233 Relu:14 Tanh:1 ScalarMul:14 LayerNorm:30 Softmax:14 Add:115 MatMul:115 "
       "Reshape:58 Transpose:56"},
      {"gpt2",
       {{"token_embeddings", {1, 64, 768}}, {"position_embeddings", {1, 64, 768}}},
       {{"output", {1, 64, 768}}},
       193,
       138,
       28'353'024,
       "Input:2 Weight:50 Constant:3 Tanh:4 ScalarMul:16 LayerNorm:9 Softmax:4 Add:37 Mul:4 Pow:4 "
       "MatMul:24 Split:4 Reshape:16 Transpose:16"},
      {"resnet50",
       {{"input", {1, 64, 56, 56}}},
       {{"output", {1, 2048, 7, 7}}},
       137,
       84,
       23'445'504,
       "Input:1 Weight:52 Conv2D:52 Relu:16 Add:16"},
      {"nasrnn",
       {{"x0", {1, 512}}, {"x1", {1, 512}}, {"x2", {1, 512}}, {"x3", {1, 512}}, {"x4", {1, 512}}},
       {{"output", {1, 512}}},
       316,
       230,
       20'972'032,
       "Input:5 Weight:81 Relu:10 Sigmoid:25 Tanh:40 Add:55 Mul:20 MatMul:80"},
      {"nasneta",
       {{"input", {1, 3, 224, 224}}},
       {{"output", {1, 5120, 7, 7}}},
       601,
       383,
       39'872'512,
       "Input:1 Weight:217 Conv2D:217 MaxPool2D:7 AvgPool2D:51 Add:90 Concat:18"},
      {"vgg19",
       {{"input", {1, 3, 224, 224}}},
       {{"output", {1, 1000}}},
       85,
       46,
       143'667'240,
       "Input:1 Weight:38 Conv2D:16 MaxPool2D:5 Relu:18 Add:3 MatMul:3 Flatten:1"},
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

NamedShapes InputShapes(const Graph& g) {
  NamedShapes out;
  for (NodeId id : g.inputs()) out.emplace_back(g.node(id).name, g.node(id).outputs[0].shape);
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

// ------------------------------------------------------------------ every model

class ZooModelTest : public ::testing::TestWithParam<ZooExpectation> {};

TEST_P(ZooModelTest, BuildsAValidGraphWithTheDocumentedShapesAndCounts) {
  const ZooExpectation& e = GetParam();
  StatusOr<Graph> built = BuildModel(e.name);
  ASSERT_TRUE(built.ok()) << built.status().message();
  const Graph& g = *built;
  Status valid = g.Validate();
  EXPECT_TRUE(valid.ok()) << valid.message();
  EXPECT_EQ(InputShapes(g), e.inputs);
  EXPECT_EQ(OutputShapes(g), e.outputs);
  EXPECT_EQ(g.num_nodes(), e.nodes);
  EXPECT_EQ(g.NumOperators(), e.operators);
  EXPECT_EQ(g.NumParameters(), e.parameters);
  EXPECT_EQ(OpCountsString(g), e.op_counts);
}

TEST_P(ZooModelTest, WeightsAreLazyAndNamesUnique) {
  Graph g = BuildOrDie(GetParam().name);
  std::set<std::string> names;
  for (NodeId id : g.NodeIds()) {
    const Node& n = g.node(id);
    EXPECT_TRUE(names.insert(n.name).second) << "duplicate name " << n.name;
    EXPECT_FALSE(n.name.empty());
    if (n.op == OpType::kWeight) {
      EXPECT_EQ(n.data, nullptr) << n.name << " is not lazy";
    }
  }
}

TEST_P(ZooModelTest, SameSeedGivesTheSameGraph) {
  ModelParams p;
  p.seed = 7;
  Graph a = BuildOrDie(GetParam().name, p);
  Graph b = BuildOrDie(GetParam().name, p);
  EXPECT_EQ(a.Hash(), b.Hash());
  ASSERT_EQ(a.NodeIds(), b.NodeIds());
  for (NodeId id : a.NodeIds()) {
    if (a.node(id).op != OpType::kWeight) continue;
    EXPECT_EQ(GetWeightInit(a.node(id)).seed, GetWeightInit(b.node(id)).seed);
  }
}

TEST_P(ZooModelTest, SeedChangesTheWeightsButNotTheStructure) {
  ModelParams p1, p2;
  p1.seed = 1;
  p2.seed = 2;
  Graph a = BuildOrDie(GetParam().name, p1);
  Graph b = BuildOrDie(GetParam().name, p2);
  EXPECT_EQ(a.num_nodes(), b.num_nodes());
  std::set<uint64_t> seeds;
  int weights = 0;
  for (NodeId id : a.NodeIds()) {
    if (a.node(id).op != OpType::kWeight) continue;
    ++weights;
    EXPECT_NE(GetWeightInit(a.node(id)).seed, GetWeightInit(b.node(id)).seed);
    seeds.insert(GetWeightInit(a.node(id)).seed);
  }
  EXPECT_EQ(static_cast<int>(seeds.size()), weights) << "two weights share a seed";
}

TEST_P(ZooModelTest, BatchTwoDoublesTheLeadingDimension) {
  ModelParams p;
  p.batch = 2;
  Graph g = BuildOrDie(GetParam().name, p);
  const ZooExpectation& e = GetParam();
  NamedShapes inputs = InputShapes(g), outputs = OutputShapes(g);
  ASSERT_EQ(inputs.size(), e.inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    Shape expected = e.inputs[i].second;
    expected[0] = 2;
    EXPECT_EQ(inputs[i].second, expected) << inputs[i].first;
  }
  ASSERT_EQ(outputs.size(), e.outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    Shape expected = e.outputs[i].second;
    expected[0] = 2;
    EXPECT_EQ(outputs[i].second, expected) << outputs[i].first;
  }
  EXPECT_EQ(g.NumOperators(), e.operators) << "batch must not change the structure";
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooModelTest, ::testing::ValuesIn(Expectations()),
                         [](const ::testing::TestParamInfo<ZooExpectation>& info) {
                           return info.param.name;
                         });

// ------------------------------------------------------------------ registry

TEST(Zoo, ListsTheModelsInOrder) {
  std::vector<std::string> names;
  for (const ModelInfo& m : ZooModels()) {
    names.push_back(m.name);
    EXPECT_FALSE(m.description.empty()) << m.name;
    EXPECT_TRUE(IsZooModel(m.name));
  }
  // The realistic models (Expectations() above), then the TASO-style ones
  // (zoo_xrlflow_test.cc).
  EXPECT_EQ(names, (std::vector<std::string>{"inceptionv3",
                                             "resnext50",
                                             "squeezenet",
                                             "bert",
                                             "vit",
                                             "dalle",
                                             "tt",
                                             "gpt2",
                                             "resnet50",
                                             "nasrnn",
                                             "nasneta",
                                             "vgg19",
                                             "xrlflow-bert",
                                             "xrlflow-vit",
                                             "xrlflow-dalle",
                                             "xrlflow-tt",
                                             "xrlflow-resnext50",
                                             "xrlflow-inceptionv3",
                                             "xrlflow-squeezenet",
                                             "taso-bert",
                                             "taso-nasneta"}));
  EXPECT_EQ(names.size(), Expectations().size() + 9);
  EXPECT_FALSE(IsZooModel("resnet"));
  EXPECT_FALSE(IsZooModel(""));
}

TEST(Zoo, UnknownModelIsNotFoundAndListsTheZoo) {
  StatusOr<Graph> g = BuildModel("alexnet");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kNotFound);
  EXPECT_NE(g.status().message().find("alexnet"), std::string::npos);
  for (const ModelInfo& m : ZooModels()) {
    EXPECT_NE(g.status().message().find(m.name), std::string::npos) << m.name;
  }
}

// ------------------------------------------------------------------ parameters

TEST(Zoo, FewerLayersGiveFewerNodes) {
  ModelParams two, eight;
  two.layers = 2;
  eight.layers = 8;
  Graph small = BuildOrDie("bert", two);
  Graph large = BuildOrDie("bert", eight);
  Graph def = BuildOrDie("bert");
  EXPECT_EQ(large.num_nodes(), def.num_nodes());
  EXPECT_LT(small.num_nodes(), large.num_nodes());
  // Every BERT layer is the same 29 operators and 16 weights.
  EXPECT_EQ(large.num_nodes() - small.num_nodes(), 6u * (29 + 16));
  EXPECT_EQ(large.NumOperators() - small.NumOperators(), 6 * 29);

  for (const char* name : {"vit", "dalle", "tt", "gpt2", "nasneta"}) {
    ModelParams one;
    one.layers = 1;
    EXPECT_LT(BuildOrDie(name, one).num_nodes(), BuildOrDie(name).num_nodes()) << name;
  }
}

TEST(Zoo, SequenceLengthChangesShapes) {
  ModelParams p;
  p.seq_len = 128;
  EXPECT_EQ(InputShapes(BuildOrDie("bert", p))[0].second, (Shape{1, 128, 1024}));
  EXPECT_EQ(InputShapes(BuildOrDie("vit", p))[0].second, (Shape{1, 128, 768}));
  EXPECT_EQ(OutputShapes(BuildOrDie("vit", p))[0].second, (Shape{1, 1000}));
  EXPECT_EQ(OutputShapes(BuildOrDie("dalle", p))[0].second, (Shape{1, 128, 768}));
  EXPECT_EQ(OutputShapes(BuildOrDie("gpt2", p))[0].second, (Shape{1, 128, 768}));
  p.seq_len = 40;
  EXPECT_EQ(OutputShapes(BuildOrDie("tt", p))[0].second, (Shape{1, 40, 16, 256}));
  p.seq_len = 3;
  EXPECT_EQ(InputShapes(BuildOrDie("nasrnn", p)).size(), 3u);
}

TEST(Zoo, HiddenAndHeadsChangeShapes) {
  ModelParams p;
  p.hidden = 256;
  p.heads = 4;
  p.layers = 2;
  EXPECT_EQ(OutputShapes(BuildOrDie("bert", p))[0].second, (Shape{1, 64, 256}));
  EXPECT_EQ(OutputShapes(BuildOrDie("tt", p))[0].second, (Shape{1, 80, 16, 256}));
  EXPECT_EQ(OutputShapes(BuildOrDie("nasrnn", p))[0].second, (Shape{1, 256}));
}

TEST(Zoo, ImageSizeChangesCnnInputs) {
  ModelParams p;
  p.image = 256;
  for (const char* name : {"resnext50", "squeezenet", "vgg19", "inceptionv3"}) {
    Graph g = BuildOrDie(name, p);
    EXPECT_EQ(InputShapes(g)[0].second, (Shape{1, 3, 256, 256})) << name;
    EXPECT_EQ(OutputShapes(g)[0].second, (Shape{1, 1000})) << name;
  }
  EXPECT_EQ(OutputShapes(BuildOrDie("nasneta", p))[0].second, (Shape{1, 5120, 8, 8}));
  p.image = 28;
  EXPECT_EQ(OutputShapes(BuildOrDie("resnet50", p))[0].second, (Shape{1, 2048, 4, 4}));
}

TEST(Zoo, HeadsThatDoNotDivideHiddenAreInvalidArgument) {
  for (const char* name : {"bert", "vit", "dalle", "tt", "gpt2"}) {
    ModelParams p;
    p.heads = 7;
    StatusOr<Graph> g = BuildModel(name, p);
    ASSERT_FALSE(g.ok()) << name;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(g.status().message().find("heads"), std::string::npos) << g.status().message();
  }
}

// ------------------------------------------------------------------ gpt2

/// Number of nodes of `g` with op `op`.
int CountOp(const Graph& g, OpType op) {
  const auto counts = g.OpCounts();
  const auto it = counts.find(op);
  return it == counts.end() ? 0 : it->second;
}

/// The nodes of `g` with op `op`.
std::vector<const Node*> NodesOf(const Graph& g, OpType op) {
  std::vector<const Node*> out;
  for (NodeId id : g.NodeIds()) {
    if (g.node(id).op == op) out.push_back(&g.node(id));
  }
  return out;
}

TEST(Zoo, Gpt2LayersHaveAPackedProjectionCausalAttentionAndATanhGelu) {
  for (int64_t layers : {1, 2, 4}) {
    SCOPED_TRACE("layers " + std::to_string(layers));
    ModelParams p;
    p.layers = layers;
    const Graph g = BuildOrDie("gpt2", p);
    ASSERT_TRUE(g.Validate().ok()) << g.Validate().message();
    const int l = static_cast<int>(layers);
    // Per layer: qkv, Q @ K^T, probs @ V, output projection, fc1, fc2.
    EXPECT_EQ(CountOp(g, OpType::kMatMul), 6 * l);
    EXPECT_EQ(CountOp(g, OpType::kSplit), l);
    EXPECT_EQ(CountOp(g, OpType::kSoftmax), l);
    EXPECT_EQ(CountOp(g, OpType::kLayerNorm), 2 * l + 1);
    EXPECT_EQ(CountOp(g, OpType::kTanh), l);
    EXPECT_EQ(CountOp(g, OpType::kPow), l);
    EXPECT_EQ(CountOp(g, OpType::kGelu), 0) << "GELU is written out, not the fused op";
    // Every layer is the same 34 operators, plus the embedding Add and the final LayerNorm.
    EXPECT_EQ(g.NumOperators(), 34 * l + 2);
  }

  const Graph g = BuildOrDie("gpt2");
  // The packed projection: one [768, 2304] weight, split three ways on the last axis.
  const Node& qkv_weight = g.node(g.FindNode("layer0.attention.qkv.weight"));
  EXPECT_EQ(qkv_weight.outputs[0].shape, (Shape{768, 3 * 768}));
  for (const Node* split : NodesOf(g, OpType::kSplit)) {
    EXPECT_EQ(split->attrs.GetInt("axis"), 2);
    ASSERT_EQ(split->outputs.size(), 3u);
    for (const TensorType& t : split->outputs) EXPECT_EQ(t.shape, (Shape{1, 64, 768}));
  }
  // The causal mask: 0 on and below the diagonal, -1e4 above; every Softmax reads scores + mask.
  const NodeId mask_id = g.FindNode("causal_mask");
  ASSERT_NE(mask_id, kNoNode);
  const HostTensor& mask = *g.node(mask_id).data;
  ASSERT_EQ(mask.type.shape, (Shape{64, 64}));
  for (int64_t i = 0; i < 64; ++i) {
    for (int64_t j = 0; j < 64; ++j) {
      EXPECT_EQ(mask.data<float>()[i * 64 + j], j <= i ? 0.f : -1e4f) << i << "," << j;
    }
  }
  for (const Node* softmax : NodesOf(g, OpType::kSoftmax)) {
    const Node& scores = g.node(softmax->inputs[0].node);
    ASSERT_EQ(scores.op, OpType::kAdd);
    EXPECT_EQ(scores.inputs[1].node, mask_id);
  }
  // The GELU's constants: the exponent of x^3 and the 1 of 1 + tanh(.), scalars.
  for (const char* name : {"gelu.three", "gelu.one"}) {
    const NodeId id = g.FindNode(name);
    ASSERT_NE(id, kNoNode) << name;
    EXPECT_EQ(g.node(id).outputs[0].shape, Shape{}) << name;
  }
  EXPECT_EQ(g.node(g.FindNode("gelu.three")).data->data<float>()[0], 3.f);
  // Its multipliers: 0.044715 (x^3), sqrt(2/pi) and 0.5, once per layer each.
  std::multiset<float> scalars;
  for (const Node* n : NodesOf(g, OpType::kScalarMul)) scalars.insert(n->attrs.GetFloat("scalar"));
  EXPECT_EQ(scalars.count(0.044715f), 4u);
  EXPECT_EQ(scalars.count(static_cast<float>(std::sqrt(2.0 / M_PI))), 4u);
  EXPECT_EQ(scalars.count(0.5f), 4u);
  EXPECT_EQ(scalars.count(0.125f), 4u) << "scores scaled by 1/sqrt(64)";
}

TEST(Zoo, Gpt2OptionsChangeLayersSequenceLengthAndWidth) {
  ModelParams p;
  p.layers = 2;
  p.seq_len = 32;
  Graph g = BuildOrDie("gpt2", p);
  EXPECT_EQ(InputShapes(g), (NamedShapes{{"token_embeddings", {1, 32, 768}},
                                         {"position_embeddings", {1, 32, 768}}}));
  EXPECT_EQ(OutputShapes(g), (NamedShapes{{"output", {1, 32, 768}}}));
  EXPECT_EQ(g.node(g.FindNode("causal_mask")).outputs[0].shape, (Shape{32, 32}));
  EXPECT_EQ(g.NumOperators(), 2 * 34 + 2);
  EXPECT_EQ(g.FindNode("layer2.ln1"), kNoNode);

  p.hidden = 256;
  p.heads = 4;
  g = BuildOrDie("gpt2", p);
  EXPECT_EQ(OutputShapes(g), (NamedShapes{{"output", {1, 32, 256}}}));
  EXPECT_EQ(g.node(g.FindNode("layer1.attention.qkv.weight")).outputs[0].shape, (Shape{256, 768}));
  EXPECT_EQ(g.node(g.FindNode("layer1.mlp.fc1.weight")).outputs[0].shape, (Shape{256, 1024}));
}

TEST(Zoo, Gpt2WithHeadsThatDoNotDivideHiddenSaysSo) {
  ModelParams p;
  p.hidden = 100;  // 12 heads by default
  StatusOr<Graph> g = BuildModel("gpt2", p);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("gpt2"), std::string::npos) << g.status().message();
  EXPECT_NE(g.status().message().find("hidden size 100 is not divisible by the number of heads 12"),
            std::string::npos)
      << g.status().message();
}

TEST(Zoo, ImpossibleParametersAreInvalidArgument) {
  ModelParams negative;
  negative.batch = -1;
  ModelParams huge;
  huge.hidden = int64_t{1} << 40;
  ModelParams tiny_image;
  tiny_image.image = 16;  // VGG's five pools need 32; Inception's stem leaves a 2x2 for a 3x3
  for (const ModelParams& p : {negative, huge}) {
    for (const ModelInfo& m : ZooModels()) {
      StatusOr<Graph> g = BuildModel(m.name, p);
      ASSERT_FALSE(g.ok()) << m.name;
      EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument) << m.name;
    }
  }
  for (const char* name : {"vgg19", "inceptionv3"}) {
    StatusOr<Graph> g = BuildModel(name, tiny_image);
    ASSERT_FALSE(g.ok()) << name;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument) << g.status().message();
  }
}

// ------------------------------------------------------------------ GraphBuilder

TEST(ZooBuilder, ScopesJoinWithDotsAndRepeatsGetSuffixes) {
  GraphBuilder b;
  ValueRef x = b.Input("x", {1, 4, 8, 8});
  {
    auto s = b.Scope("block");
    auto inner = b.Scope("inner");
    x = b.Conv2D(x, 4, 3, 3, 1, 1, 1);
    x = b.Conv2D(x, 4, 3, 3, 1, 1, 1, 1, "relu", true);
  }
  x = b.Relu(x);
  x = b.Relu(x);
  b.Output("y", x);
  StatusOr<Graph> g = b.Finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  for (const char* name :
       {"x", "block.inner.conv", "block.inner.conv.weight", "block.inner.conv_1",
        "block.inner.conv_1.weight", "block.inner.conv_1.bias", "relu", "relu_1"}) {
    EXPECT_NE(g->FindNode(name), kNoNode) << name;
  }
  EXPECT_EQ(g->node(g->FindNode("block.inner.conv_1")).attrs.GetString("activation"), "relu");
  EXPECT_EQ(g->node(g->FindNode("block.inner.conv.weight")).outputs[0].shape, (Shape{4, 4, 3, 3}));
}

TEST(ZooBuilder, ExplicitNamesDoNotCollideWithSuffixes) {
  GraphBuilder b;
  ValueRef a = b.Weight("w_1", {2}, 0, 1);
  ValueRef c = b.Weight("w", {2}, 0, 1);
  ValueRef d = b.Weight("w", {2}, 0, 1);
  b.Output("y", b.Add(b.Add(a, c), d));
  StatusOr<Graph> g = b.Finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_NE(g->FindNode("w_1"), kNoNode);
  EXPECT_NE(g->FindNode("w"), kNoNode);
  EXPECT_NE(g->FindNode("w_2"), kNoNode);
}

TEST(ZooBuilder, LinearIsMatMulWithAnInOutWeightPlusBias) {
  GraphBuilder b;
  ValueRef x = b.Input("x", {2, 7, 3});
  ValueRef y = b.Linear(x, 5, true, "proj");
  EXPECT_EQ(b.ShapeOf(y), (Shape{2, 7, 5}));
  b.Output("y", y);
  StatusOr<Graph> g = b.Finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->node(g->FindNode("proj")).op, OpType::kMatMul);
  EXPECT_EQ(g->node(g->FindNode("proj.weight")).outputs[0].shape, (Shape{3, 5}));
  EXPECT_EQ(g->node(g->FindNode("proj.bias")).outputs[0].shape, (Shape{5}));
  EXPECT_EQ(g->node(y.node).op, OpType::kAdd);
  WeightInit init = GetWeightInit(g->node(g->FindNode("proj.weight")));
  EXPECT_FLOAT_EQ(init.hi, 1.0f / std::sqrt(3.0f));
  EXPECT_FLOAT_EQ(init.lo, -init.hi);
}

TEST(ZooBuilder, NormalisationLayersCreateTheirStatistics) {
  GraphBuilder b;
  ValueRef x = b.Input("x", {1, 6, 4, 4});
  ValueRef y = b.BatchNorm(x);
  ValueRef t = b.Input("t", {3, 10});
  ValueRef z = b.LayerNorm(t);
  b.Output("y", y);
  b.Output("z", z);
  StatusOr<Graph> g = b.Finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_FLOAT_EQ(g->node(y.node).attrs.GetFloat("epsilon"), 1e-5f);
  // axis -1 (the last axis); the graph may store it normalised.
  int64_t axis = g->node(z.node).attrs.GetInt("axis");
  EXPECT_TRUE(axis == -1 || axis == 1) << axis;
  WeightInit var = GetWeightInit(g->node(g->FindNode("bn.var")));
  EXPECT_FLOAT_EQ(var.lo, 0.5f);
  EXPECT_FLOAT_EQ(var.hi, 1.5f);
  EXPECT_EQ(g->node(g->FindNode("ln.scale")).outputs[0].shape, (Shape{10}));
  EXPECT_EQ(g->NumParameters(), 4 * 6 + 2 * 10);
}

TEST(ZooBuilder, FirstErrorIsStickyAndNamesTheNode) {
  GraphBuilder b;
  ValueRef x = b.Input("x", {2, 3});
  ValueRef y = b.Input("y", {4, 5});
  ValueRef bad;
  {
    auto s = b.Scope("mix");
    bad = b.MatMul(x, y);  // 3 != 4
  }
  EXPECT_FALSE(bad.valid());
  EXPECT_FALSE(b.ok());
  // Later calls are no-ops, including ones that would fail differently.
  ValueRef later = b.Relu(x);
  EXPECT_FALSE(later.valid());
  EXPECT_TRUE(b.ShapeOf(later).empty());
  b.Output("out", later);
  StatusOr<Graph> g = b.Finish();
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("mix.matmul"), std::string::npos) << g.status().message();
}

TEST(ZooBuilder, LayerOnAWrongRankIsAnError) {
  GraphBuilder b;
  ValueRef x = b.Input("x", {2, 3});
  b.Conv2D(x, 4, 3, 3, 1, 0, 0, 1, "none", false, "c");
  StatusOr<Graph> g = b.Finish();
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("c"), std::string::npos);
}

TEST(ZooBuilder, WeightSeedsDeriveFromTheBuilderSeedAndOrder) {
  auto seeds = [](uint64_t seed) {
    GraphBuilder b(seed);
    ValueRef u = b.Weight("u", {2}, -1, 1);
    ValueRef v = b.WeightFanIn("v", {2}, 4);
    b.Output("y", b.Add(u, v));
    StatusOr<Graph> g = b.Finish();
    EXPECT_TRUE(g.ok());
    return std::make_pair(GetWeightInit(g->node(g->FindNode("u"))).seed,
                          GetWeightInit(g->node(g->FindNode("v"))).seed);
  };
  EXPECT_EQ(seeds(3), seeds(3));
  EXPECT_NE(seeds(3).first, seeds(3).second);
  EXPECT_NE(seeds(3).first, seeds(4).first);
  EXPECT_EQ(seeds(3).first, HashCombine(3, 0));
}

TEST(ZooBuilder, SplitReturnsEveryOutput) {
  GraphBuilder b;
  ValueRef x = b.Input("x", {2, 10});
  std::vector<ValueRef> parts = b.Split(x, 1, {3, 7});
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(b.ShapeOf(parts[0]), (Shape{2, 3}));
  EXPECT_EQ(b.ShapeOf(parts[1]), (Shape{2, 7}));
  EXPECT_EQ(parts[1].index, 1u);
}

}  // namespace
}  // namespace rewire

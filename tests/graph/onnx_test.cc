// ONNX import and export: round trips of hand-built graphs (equal Hash()), folding of shape
// arithmetic, and a clear Status for every kind of bad file. ONNX files are written here with a
// few lines of protobuf wire format, so the tests need no protobuf headers and can write files
// no well-behaved library would (truncated, dangling, cyclic).

#include "graph/onnx/onnx_io.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "graph/rules/matcher.h"
#include "graph/rules/rule.h"
#include "graph/weights.h"
#include "tests/graph/onnx_test_graphs.h"
#include "tests/graph/test_util.h"

namespace rewire {
namespace {

using testing::EveryOp;
using testing::F;
using testing::F32;
using testing::I64;
using testing::Must;
using testing::Op;
using testing::V;

// ---------------------------------------------------------------------------- protobuf writer

/// A protobuf message in wire format (only what ONNX files need).
class Pb {
 public:
  Pb& Varint(int field, uint64_t v) {
    Key(field, 0);
    Raw(v);
    return *this;
  }
  Pb& Bytes(int field, const std::string& s) {
    Key(field, 2);
    Raw(s.size());
    out_ += s;
    return *this;
  }
  Pb& Msg(int field, const Pb& m) { return Bytes(field, m.str()); }
  Pb& Float(int field, float f) {
    Key(field, 5);
    char b[4];
    std::memcpy(b, &f, 4);
    out_.append(b, 4);
    return *this;
  }
  const std::string& str() const { return out_; }

 private:
  void Key(int field, int wire) { Raw((static_cast<uint64_t>(field) << 3) | wire); }
  void Raw(uint64_t v) {
    while (v >= 0x80) {
      out_ += static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    out_ += static_cast<char>(v);
  }
  std::string out_;
};

enum OnnxType { kFloat = 1, kInt32 = 6, kInt64 = 7, kBool = 9, kFloat16 = 10, kDouble = 11 };

/// ValueInfoProto; a negative dim is written as the symbolic dim "N".
Pb Info(const std::string& name, int elem, const std::vector<int64_t>& dims) {
  Pb shape;
  for (int64_t d : dims) {
    Pb dim;
    if (d < 0)
      dim.Bytes(2, "N");
    else
      dim.Varint(1, static_cast<uint64_t>(d));
    shape.Msg(1, dim);
  }
  Pb tensor;
  tensor.Varint(1, elem).Msg(2, shape);
  Pb type;
  type.Msg(1, tensor);
  Pb info;
  info.Bytes(1, name).Msg(2, type);
  return info;
}

Pb Tensor(const std::string& name, int elem, const std::vector<int64_t>& dims,
          const std::string& raw) {
  Pb t;
  for (int64_t d : dims) t.Varint(1, static_cast<uint64_t>(d));
  t.Varint(2, elem);
  if (!name.empty()) t.Bytes(8, name);
  t.Bytes(9, raw);
  return t;
}

Pb Int64s(const std::string& name, const std::vector<int64_t>& dims,
          const std::vector<int64_t>& v) {
  return Tensor(name, kInt64, dims,
                std::string(reinterpret_cast<const char*>(v.data()), v.size() * 8));
}

Pb Floats(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
  return Tensor(name, kFloat, dims,
                std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4));
}

Pb AttrInt(const std::string& name, int64_t v) {
  Pb a;
  a.Bytes(1, name).Varint(3, static_cast<uint64_t>(v)).Varint(20, 2);
  return a;
}
Pb AttrFloat(const std::string& name, float v) {
  Pb a;
  a.Bytes(1, name).Float(2, v).Varint(20, 1);
  return a;
}
Pb AttrInts(const std::string& name, const std::vector<int64_t>& v) {
  Pb a;
  a.Bytes(1, name);
  for (int64_t x : v) a.Varint(8, static_cast<uint64_t>(x));
  a.Varint(20, 7);
  return a;
}
Pb AttrTensor(const std::string& name, const Pb& t) {
  Pb a;
  a.Bytes(1, name).Msg(5, t).Varint(20, 4);
  return a;
}

Pb OnnxNode(const std::string& op, const std::vector<std::string>& in,
            const std::vector<std::string>& out, const std::vector<Pb>& attrs = {},
            const std::string& name = "") {
  Pb n;
  for (const auto& s : in) n.Bytes(1, s);
  for (const auto& s : out) n.Bytes(2, s);
  n.Bytes(3, name.empty() ? op + "_" + out.at(0) : name);
  n.Bytes(4, op);
  for (const Pb& a : attrs) n.Msg(5, a);
  return n;
}

/// A Constant node holding an int64 vector.
Pb ConstInts(const std::string& out, const std::vector<int64_t>& v) {
  return OnnxNode("Constant", {}, {out},
                  {AttrTensor("value", Int64s("", {static_cast<int64_t>(v.size())}, v))});
}

struct GraphPb {
  std::vector<Pb> nodes, inits, inputs, outputs;
};

std::string Model(const GraphPb& g, int opset = 17) {
  Pb graph;
  for (const Pb& n : g.nodes) graph.Msg(1, n);
  graph.Bytes(2, "test");
  for (const Pb& t : g.inits) graph.Msg(5, t);
  for (const Pb& i : g.inputs) graph.Msg(11, i);
  for (const Pb& o : g.outputs) graph.Msg(12, o);
  Pb opset_id;
  opset_id.Bytes(1, "").Varint(2, opset);
  Pb model;
  model.Varint(1, 8).Bytes(2, "onnx_test").Msg(7, graph).Msg(8, opset_id);
  return model.str();
}

// ---------------------------------------------------------------------------- helpers

/// Export with rewire's own ops kept (ai.rewire domain), the form that re-imports to the same
/// graph, and import again.
Graph RoundTrip(const Graph& g) {
  OnnxExportOptions custom;
  custom.custom_ops = true;
  auto bytes = ExportOnnxBytes(g, custom);
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  if (!bytes.ok()) return Graph();
  auto back = ImportOnnxBytes(*bytes, "roundtrip");
  EXPECT_TRUE(back.ok()) << back.status().message();
  return back.ok() ? std::move(back).value() : Graph();
}

/// Imports `bytes` expecting an error whose message contains every one of `words`.
void ExpectError(const std::string& bytes, const std::vector<std::string>& words) {
  auto g = ImportOnnxBytes(bytes, "bad.onnx");
  ASSERT_FALSE(g.ok()) << "imported a bad model";
  const std::string& m = g.status().message();
  EXPECT_NE(m.find("bad.onnx"), std::string::npos) << m;
  for (const std::string& w : words)
    EXPECT_NE(m.find(w), std::string::npos) << "missing '" << w << "' in: " << m;
}

// ---------------------------------------------------------------------------- round trips

TEST(OnnxRoundTrip, SmallConvNetKeepsHashAndWeights) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({1, 3, 8, 8})));
  const NodeId w = Must(g.AddWeight("w", {4, 3, 3, 3}, {-0.1f, 0.1f, 7}));
  const NodeId conv = Op(g, OpType::kConv2D, {V(x), V(w)}, {{"pads", Ints{1, 1, 1, 1}}}, "conv");
  const NodeId relu = Op(g, OpType::kRelu, {V(conv)}, {}, "relu");
  ASSERT_TRUE(g.AddOutput("y", V(relu)).ok());
  Graph back = RoundTrip(g);
  EXPECT_EQ(back.Hash(), g.Hash());
  EXPECT_TRUE(back.Validate().ok()) << back.Validate().message();
  const NodeId bw = back.FindNode("w");
  ASSERT_NE(bw, kNoNode);
  EXPECT_EQ(back.node(bw).op, OpType::kWeight);
  EXPECT_EQ(MaterializeData(back.node(bw))->bytes, MaterializeData(g.node(w))->bytes);
}

TEST(OnnxRoundTrip, FusedMatMulAndGemmActivations) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({4, 8})));
  const NodeId w = Must(g.AddWeight("w", {8, 8}, {-0.1f, 0.1f, 3}));
  const NodeId b = Must(g.AddWeight("b", {8}, {-0.1f, 0.1f, 4}));
  const NodeId m =
      Op(g, OpType::kMatMul, {V(x), V(w)}, {{"activation", std::string("gelu")}}, "mm");
  const NodeId p = Op(g, OpType::kMatMul, {V(m), V(w)}, {}, "plain");
  const NodeId gm =
      Op(g, OpType::kGemm, {V(p), V(w), V(b)}, {{"activation", std::string("tanh")}}, "gemm");
  ASSERT_TRUE(g.AddOutput("y", V(gm)).ok());
  Graph back = RoundTrip(g);
  EXPECT_EQ(back.Hash(), g.Hash());
  EXPECT_EQ(back.node(back.FindNode("mm")).attrs.GetString("activation"), "gelu");
}

TEST(OnnxRoundTrip, EveryOpOfTheVocabulary) {
  Graph g = EveryOp();
  Graph back = RoundTrip(g);
  EXPECT_EQ(back.Hash(), g.Hash());
  EXPECT_TRUE(back.Validate().ok()) << back.Validate().message();
  EXPECT_EQ(back.OpCounts(), g.OpCounts());
  // Constants keep their data and kind.
  const NodeId cond = back.FindNode("cond");
  ASSERT_NE(cond, kNoNode);
  EXPECT_EQ(back.node(cond).op, OpType::kConstant);
  EXPECT_EQ(back.node(cond).data->bytes, g.node(g.FindNode("cond")).data->bytes);
  // A second trip is a fixed point.
  EXPECT_EQ(RoundTrip(back).Hash(), g.Hash());
}

TEST(OnnxRoundTrip, OutputsThatAliasLeavesOrEachOther) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({2, 3})));
  const NodeId w = Must(g.AddWeight("w", {2, 3}, {}));
  const NodeId c = Must(g.AddConstant("k", F({1}, {3.f})));
  const NodeId a = Op(g, OpType::kAdd, {V(x), V(w)}, {}, "add");
  ASSERT_TRUE(g.AddOutput("x", V(x)).ok());        // an input, under its own name
  ASSERT_TRUE(g.AddOutput("x_again", V(x)).ok());  // an input, renamed
  ASSERT_TRUE(g.AddOutput("weight", V(w)).ok());
  ASSERT_TRUE(g.AddOutput("constant", V(c)).ok());
  ASSERT_TRUE(g.AddOutput("sum", V(a)).ok());
  ASSERT_TRUE(g.AddOutput("sum_again", V(a)).ok());  // one value, two outputs
  Graph back = RoundTrip(g);
  EXPECT_EQ(back.Hash(), g.Hash());
  ASSERT_EQ(back.outputs().size(), 6u);
  EXPECT_EQ(back.outputs()[4].value, back.outputs()[5].value);
}

TEST(OnnxRoundTrip, OpsOnConstantsAreNotFoldedAway) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({4})));
  const NodeId c = Must(g.AddConstant("c", F({2, 2}, {1, 2, 3, 4})));
  const NodeId r = Op(g, OpType::kReshape, {V(c)}, {{"shape", Ints{4}}}, "reshape_constant");
  const NodeId a = Op(g, OpType::kAdd, {V(x), V(r)});
  ASSERT_TRUE(g.AddOutput("y", V(a)).ok());
  Graph back = RoundTrip(g);
  EXPECT_EQ(back.Hash(), g.Hash());
  EXPECT_EQ(back.OpCounts()[OpType::kReshape], 1);
}

TEST(OnnxRoundTrip, FileApiWritesAndReads) {
  Graph g = EveryOp();
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("rewire-onnx-test-" + std::to_string(::getpid()) + ".onnx"))
                               .string();
  OnnxExportOptions custom;
  custom.custom_ops = true;
  ASSERT_TRUE(ExportOnnxFile(g, path, custom).ok());
  auto back = ImportOnnxFile(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->Hash(), g.Hash());
}

// ---------------------------------------------------------------------------- import

TEST(OnnxImport, FoldsShapeArithmeticIntoReshape) {
  // y = reshape(x, concat(unsqueeze(gather(shape(x), 0)), [-1])): the torch.flatten pattern.
  GraphPb m;
  m.inputs.push_back(Info("x", kFloat, {2, 3, 4}));
  m.nodes.push_back(OnnxNode("Shape", {"x"}, {"s"}));
  m.nodes.push_back(ConstInts("zero", {0}));
  m.nodes.push_back(OnnxNode("Gather", {"s", "zero"}, {"n"}, {AttrInt("axis", 0)}));
  m.nodes.push_back(ConstInts("minus1", {-1}));
  m.nodes.push_back(OnnxNode("Concat", {"n", "minus1"}, {"shape"}, {AttrInt("axis", 0)}));
  m.nodes.push_back(OnnxNode("Reshape", {"x", "shape"}, {"y"}));
  m.outputs.push_back(Info("y", kFloat, {2, 12}));
  auto g = ImportOnnxBytes(Model(m), "fold.onnx");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->NumOperators(), 1);
  const Node& reshape = g->node(g->outputs()[0].value.node);
  EXPECT_EQ(reshape.op, OpType::kReshape);
  EXPECT_EQ(reshape.attrs.GetInts("shape"), (Ints{2, 12}));
}

TEST(OnnxImport, FoldsRangeWhereExpandAndConstantOfShape) {
  // mask = where(range(0, 4) < 2, 1.0, 0.0) expanded to [3, 4]; y = x * mask
  GraphPb m;
  m.inputs.push_back(Info("x", kFloat, {3, 4}));
  m.nodes.push_back(
      OnnxNode("Constant", {}, {"start"}, {AttrTensor("value", Int64s("", {}, {0}))}));
  m.nodes.push_back(
      OnnxNode("Constant", {}, {"limit"}, {AttrTensor("value", Int64s("", {}, {4}))}));
  m.nodes.push_back(
      OnnxNode("Constant", {}, {"delta"}, {AttrTensor("value", Int64s("", {}, {1}))}));
  m.nodes.push_back(OnnxNode("Range", {"start", "limit", "delta"}, {"r"}));
  m.nodes.push_back(OnnxNode("Constant", {}, {"two"}, {AttrTensor("value", Int64s("", {}, {2}))}));
  m.nodes.push_back(OnnxNode("Less", {"r", "two"}, {"lt"}));
  m.nodes.push_back(ConstInts("ones_shape", {4}));
  Pb one = Floats("", {1}, {1.f});
  m.nodes.push_back(
      OnnxNode("ConstantOfShape", {"ones_shape"}, {"ones"}, {AttrTensor("value", one)}));
  m.nodes.push_back(
      OnnxNode("Constant", {}, {"zero"}, {AttrTensor("value", Floats("", {}, {0.f}))}));
  m.nodes.push_back(OnnxNode("Where", {"lt", "ones", "zero"}, {"row"}));
  m.nodes.push_back(ConstInts("full", {3, 4}));
  m.nodes.push_back(OnnxNode("Expand", {"row", "full"}, {"mask"}));
  m.nodes.push_back(OnnxNode("Mul", {"x", "mask"}, {"y"}));
  m.outputs.push_back(Info("y", kFloat, {3, 4}));
  auto g = ImportOnnxBytes(Model(m), "fold.onnx");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->NumOperators(), 1);
  const Node& mul = g->node(g->outputs()[0].value.node);
  ASSERT_EQ(mul.op, OpType::kMul);
  const Node& mask = g->node(mul.inputs[1].node);
  ASSERT_EQ(mask.op, OpType::kConstant);
  EXPECT_EQ(mask.name, "mask");
  ASSERT_EQ(mask.data->type, F32({3, 4}));
  const float* p = mask.data->data<float>();
  for (int i = 0; i < 12; ++i) EXPECT_EQ(p[i], i % 4 < 2 ? 1.f : 0.f) << i;
}

TEST(OnnxImport, OldOpsetForms) {
  // Opset 11: Squeeze/Unsqueeze axes and ReduceSum axes are attributes; Softmax flattens from its
  // axis.
  GraphPb m;
  m.inputs.push_back(Info("x", kFloat, {2, 1, 3, 4}));
  m.nodes.push_back(OnnxNode("Squeeze", {"x"}, {"sq"}, {AttrInts("axes", {1})}));
  m.nodes.push_back(OnnxNode("Softmax", {"sq"}, {"sm"}, {AttrInt("axis", 1)}));
  m.nodes.push_back(OnnxNode("Unsqueeze", {"sm"}, {"un"}, {AttrInts("axes", {0})}));
  m.nodes.push_back(
      OnnxNode("ReduceSum", {"un"}, {"y"}, {AttrInts("axes", {-1}), AttrInt("keepdims", 0)}));
  m.outputs.push_back(Info("y", kFloat, {1, 2, 3}));
  auto g = ImportOnnxBytes(Model(m, 11), "opset11.onnx");
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto counts = g->OpCounts();
  EXPECT_EQ(counts[OpType::kSoftmax], 1);
  EXPECT_EQ(counts[OpType::kReshape], 2);  // softmax over the flattened axes 1..2
  EXPECT_EQ(g->type(g->outputs()[0].value), F32({1, 2, 3}));
}

TEST(OnnxImport, IdentityIsAliasedAndUnknownOpsBecomeOpaque) {
  GraphPb m;
  m.inputs.push_back(Info("x", kFloat, {1, 8}));
  m.inits.push_back(Floats("w", {8}, std::vector<float>(8, 0.5f)));
  m.nodes.push_back(OnnxNode("Identity", {"w"}, {"w2"}));
  m.nodes.push_back(OnnxNode("Mul", {"x", "w2"}, {"m"}));
  m.nodes.push_back(OnnxNode("HardSigmoid", {"m"}, {"h"}, {}));
  m.nodes.push_back(OnnxNode("TopK", {"h", "k"}, {"values", "indices"}, {AttrInt("axis", -1)}));
  m.nodes.push_back(ConstInts("k", {3}));
  m.nodes.push_back(OnnxNode("Identity", {"values"}, {"y"}));
  m.outputs.push_back(Info("y", kFloat, {1, 3}));
  m.outputs.push_back(Info("indices", kInt64, {1, 3}));
  auto g = ImportOnnxBytes(Model(m), "opaque.onnx");  // nodes out of order on purpose
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->NumOperators(), 3);
  EXPECT_NE(g->FindNode("w"), kNoNode);
  const Node& topk = g->node(g->outputs()[0].value.node);
  EXPECT_EQ(topk.op, OpType::kOpaque);
  EXPECT_EQ(topk.TypeName(), "TopK");
  EXPECT_EQ(topk.attrs.GetInt("axis"), -1);
  EXPECT_EQ(topk.outputs[1], (TensorType{DType::kInt64, {1, 3}}));
  EXPECT_EQ(RoundTrip(*g).Hash(), g->Hash());
}

// configs/rules/algebraic.rules' `alg_matmul_add_to_gemm`: the bias second, as every rule writes
// it.
constexpr const char* kMatMulAddToGemm = R"(
rule matmul_add_to_gemm
  class algebraic
  source
    m = MatMul(a, b; activation="none")
    y = Add(m, c)
  where
    rank(a) == 2
    rank(b) == 2
    rank(c) <= 2
    !is_weight(y)
  target
    z = Gemm(a, b, c)
  outputs y -> z
  check a=[3,4] b=[4,5] c=[5]
  check a=[2,6] b=[6,3] c=[2,3]
end
)";

TEST(OnnxImport, AConstantOperandOfAddOrMulGoesSecond) {
  // As PyTorch writes a biased linear: Add(bias, MatMul(x, w)); then a scale first, Mul(s, .),
  // an Add of two computed values and a Sub, which does not commute.
  GraphPb m;
  m.inputs.push_back(Info("x", kFloat, {4, 8}));
  m.inits.push_back(Floats("w", {8, 6}, std::vector<float>(48, 0.25f)));
  m.inits.push_back(Floats("b", {6}, std::vector<float>(6, 1.f)));
  m.inits.push_back(Floats("s", {6}, std::vector<float>(6, 2.f)));
  m.nodes.push_back(OnnxNode("MatMul", {"x", "w"}, {"mm"}));
  m.nodes.push_back(OnnxNode("Add", {"b", "mm"}, {"lin"}));
  m.nodes.push_back(OnnxNode("Mul", {"s", "lin"}, {"scaled"}));
  m.nodes.push_back(OnnxNode("MatMul", {"x", "w"}, {"mm2"}));
  m.nodes.push_back(OnnxNode("Add", {"scaled", "mm2"}, {"y"}));
  m.nodes.push_back(OnnxNode("Sub", {"b", "mm2"}, {"z"}));
  m.outputs.push_back(Info("y", kFloat, {4, 6}));
  m.outputs.push_back(Info("z", kFloat, {4, 6}));
  auto g = ImportOnnxBytes(Model(m), "torch_linear.onnx");
  ASSERT_TRUE(g.ok()) << g.status().message();
  const NodeId mm2 = g->node(g->outputs()[1].value.node).inputs[1].node;
  ASSERT_EQ(g->node(mm2).op, OpType::kMatMul);
  const Node& y = g->node(g->outputs()[0].value.node);
  ASSERT_EQ(y.op, OpType::kAdd);
  EXPECT_EQ(y.inputs[1].node, mm2);  // two computed operands: the file's order
  const Node& scaled = g->node(y.inputs[0].node);
  ASSERT_EQ(scaled.op, OpType::kMul);
  EXPECT_EQ(g->node(scaled.inputs[1].node).op, OpType::kWeight);
  const NodeId lin = scaled.inputs[0].node;
  ASSERT_EQ(g->node(lin).op, OpType::kAdd);
  EXPECT_EQ(g->node(g->node(lin).inputs[0].node).op, OpType::kMatMul);
  EXPECT_EQ(g->node(lin).inputs[1].node, g->FindNode("b"));
  const Node& z = g->node(g->outputs()[1].value.node);
  ASSERT_EQ(z.op, OpType::kSub);
  EXPECT_EQ(z.inputs[0].node, g->FindNode("b"));  // Sub keeps its order
  // So the rules' `Add(MatMul(a, b), c)` finds the linear layer.
  auto rules = rules::ParseRules(kMatMulAddToGemm, "gemm.rules");
  ASSERT_TRUE(rules.ok()) << rules.status().message();
  const rules::MatchIndex index(*g);
  const auto matches = rules::FindMatches(*g, rules->at(0), 0, index);
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_EQ(RoundTrip(*g).Hash(), g->Hash());
}

TEST(OnnxImport, HardSigmoidIsItsOwnOpAndExportsAsTheStandardOne) {
  GraphPb m;
  m.inputs.push_back(Info("x", kFloat, {1, 8}));
  // As torch.nn.Hardsigmoid exports it (MobileNetV3): alpha 1/6, beta left at ONNX's default.
  m.nodes.push_back(OnnxNode("HardSigmoid", {"x"}, {"h"}, {AttrFloat("alpha", 1.f / 6)}));
  m.nodes.push_back(OnnxNode("Mul", {"x", "h"}, {"y"}));
  m.outputs.push_back(Info("y", kFloat, {1, 8}));
  auto g = ImportOnnxBytes(Model(m, 13), "hardsigmoid.onnx");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->OpCounts()[OpType::kHardSigmoid], 1);
  EXPECT_EQ(g->OpCounts()[OpType::kOpaque], 0);
  const Node& hs = g->node(g->node(g->outputs()[0].value.node).inputs[1].node);
  ASSERT_EQ(hs.op, OpType::kHardSigmoid);
  EXPECT_EQ(hs.attrs.GetFloat("alpha"), 1.f / 6);
  EXPECT_EQ(hs.attrs.GetFloat("beta"), 0.5f);
  EXPECT_EQ(RoundTrip(*g).Hash(), g->Hash());  // custom-ops export
  auto bytes = ExportOnnxBytes(*g);            // standard export: the ONNX op, default domain
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto back = ImportOnnxBytes(*bytes, "exported.onnx");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->Hash(), g->Hash());
  EXPECT_NE(bytes->find("HardSigmoid"), std::string::npos);
  EXPECT_EQ(bytes->find("ai.rewire"), std::string::npos);
}

TEST(OnnxImport, FoldsScatterNdMasks) {
  // Swin's attention mask: zeros, then rows overwritten with ScatterND.
  GraphPb m;
  m.inputs.push_back(Info("x", kFloat, {2, 3}));
  m.nodes.push_back(ConstInts("shape", {2, 3}));
  m.nodes.push_back(OnnxNode("ConstantOfShape", {"shape"}, {"zeros"},
                             {AttrTensor("value", Floats("", {1}, {0.f}))}));
  m.nodes.push_back(
      OnnxNode("Constant", {}, {"rows"}, {AttrTensor("value", Int64s("", {1, 1}, {1}))}));
  m.nodes.push_back(OnnxNode("Constant", {}, {"vals"},
                             {AttrTensor("value", Floats("", {1, 3}, {1.f, 2.f, 3.f}))}));
  m.nodes.push_back(OnnxNode("ScatterND", {"zeros", "rows", "vals"}, {"mask"}));
  m.nodes.push_back(OnnxNode("Add", {"x", "mask"}, {"y"}));
  m.outputs.push_back(Info("y", kFloat, {2, 3}));
  auto g = ImportOnnxBytes(Model(m), "scatter.onnx");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->NumOperators(), 1);
  const Node& mask = g->node(g->node(g->outputs()[0].value.node).inputs[1].node);
  ASSERT_EQ(mask.op, OpType::kConstant);
  const float* p = mask.data->data<float>();
  EXPECT_EQ(std::vector<float>(p, p + 6), (std::vector<float>{0, 0, 0, 1, 2, 3}));
}

TEST(OnnxImport, EinsumGetsStaticShapes) {
  GraphPb m;
  m.inputs.push_back(Info("a", kFloat, {2, 3, 4}));
  m.inputs.push_back(Info("b", kFloat, {2, 4, 5}));
  Pb eq;
  eq.Bytes(1, "equation").Bytes(4, "bij,bjk->bik").Varint(20, 3);
  m.nodes.push_back(OnnxNode("Einsum", {"a", "b"}, {"y"}, {eq}));
  m.outputs.push_back(Info("y", kFloat, {2, 3, 5}));
  auto g = ImportOnnxBytes(Model(m), "einsum.onnx");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->type(g->outputs()[0].value), F32({2, 3, 5}));
}

TEST(OnnxImport, DropoutInTrainingModeOnlyWithRatioZero) {
  auto model = [](float ratio) {
    GraphPb m;
    m.inputs.push_back(Info("x", kFloat, {2, 3}));
    m.nodes.push_back(
        OnnxNode("Constant", {}, {"ratio"}, {AttrTensor("value", Floats("", {}, {ratio}))}));
    m.nodes.push_back(OnnxNode("Constant", {}, {"training"},
                               {AttrTensor("value", Tensor("", kBool, {}, std::string(1, '\1')))}));
    m.nodes.push_back(OnnxNode("Dropout", {"x", "ratio", "training"}, {"y"}, {}, "drop"));
    m.outputs.push_back(Info("y", kFloat, {2, 3}));
    return Model(m);
  };
  auto ok = ImportOnnxBytes(model(0.f), "dropout0.onnx");  // what torchvision's Swin exports
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->OpCounts()[OpType::kDropout], 1);
  ExpectError(model(0.5f), {"drop", "training mode"});
}

// ---------------------------------------------------------------------------- bad files

TEST(OnnxBadInput, MissingFileAndDirectory) {
  auto missing = ImportOnnxFile("/nonexistent/dir/model.onnx");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/dir/model.onnx"), std::string::npos);
  auto dir = ImportOnnxFile(std::filesystem::temp_directory_path().string());
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("directory"), std::string::npos);
}

TEST(OnnxBadInput, EmptyAndNotOnnx) {
  ExpectError("", {"empty"});
  ExpectError("hello, I am a text file\n", {"not a valid ONNX model"});
  ExpectError(std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16), {});
  ExpectError(
      std::string("\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
                  70),
      {});
  Pb not_a_model;  // a valid protobuf that is not a model
  not_a_model.Varint(1, 3).Bytes(2, "x");
  ExpectError(not_a_model.str(), {"graph"});
}

TEST(OnnxBadInput, TruncatedAtEveryFewBytes) {
  const std::string bytes = *ExportOnnxBytes(EveryOp());
  for (size_t cut = 0; cut < bytes.size(); cut += 1 + bytes.size() / 97) {
    auto g = ImportOnnxBytes(bytes.substr(0, cut), "cut.onnx");
    EXPECT_FALSE(g.ok()) << "cut at " << cut << " of " << bytes.size();
    if (!g.ok()) {
      EXPECT_NE(g.status().message().find("cut.onnx"), std::string::npos);
    }
  }
}

TEST(OnnxBadInput, CorruptedBytesNeverCrash) {
  const std::string bytes = *ExportOnnxBytes(EveryOp());
  std::mt19937 rng(12345);
  int failed = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string bad = bytes;
    const int flips = 1 + trial % 8;
    for (int i = 0; i < flips; ++i) bad[rng() % bad.size()] = static_cast<char>(rng());
    auto g = ImportOnnxBytes(bad, "corrupt.onnx");  // must return, ok or not
    if (!g.ok()) {
      ++failed;
      EXPECT_FALSE(g.status().message().empty());
    }
  }
  EXPECT_GT(failed, 0);
}

TEST(OnnxBadInput, UnsupportedElementTypes) {
  {
    // float16 throughout is read as float32 (graph/onnx/onnx_half.cc); float16 beside float32
    // is a mixed-precision model, refused.
    GraphPb m;
    m.inputs.push_back(Info("x", kFloat16, {2}));
    m.nodes.push_back(OnnxNode("Relu", {"x"}, {"y"}));
    m.outputs.push_back(Info("y", kFloat16, {2}));
    auto half = ImportOnnxBytes(Model(m), "half.onnx");
    ASSERT_TRUE(half.ok()) << half.status().message();
    EXPECT_EQ(half->type(V(half->FindNode("x"))).dtype, DType::kFloat32);
    m.outputs.back() = Info("y", kFloat, {2});
    ExpectError(Model(m), {"mixes float16 and float32"});
  }
  {
    GraphPb m;
    m.inputs.push_back(Info("x", kFloat, {2}));
    m.inits.push_back(Tensor("d", kDouble, {2}, std::string(16, '\0')));
    m.nodes.push_back(OnnxNode("Add", {"x", "d"}, {"y"}));
    m.outputs.push_back(Info("y", kFloat, {2}));
    ExpectError(Model(m), {"'d'", "float64"});
  }
  {
    GraphPb m;
    m.inputs.push_back(Info("x", kFloat, {2}));
    m.nodes.push_back(OnnxNode("Cast", {"x"}, {"y"}, {AttrInt("to", kInt32)}));
    m.outputs.push_back(Info("y", kInt32, {2}));
    ExpectError(Model(m), {"Cast", "int32"});
  }
}

TEST(OnnxBadInput, ImpossibleShapesNameTheNode) {
  GraphPb m;
  m.inputs.push_back(Info("a", kFloat, {2, 3}));
  m.inputs.push_back(Info("b", kFloat, {4, 5}));
  m.nodes.push_back(OnnxNode("MatMul", {"a", "b"}, {"y"}, {}, "the_matmul"));
  m.outputs.push_back(Info("y", kFloat, {2, 5}));
  ExpectError(Model(m), {"the_matmul", "inner dimensions"});
}

TEST(OnnxBadInput, DanglingEdgesCyclesAndDuplicates) {
  {
    GraphPb m;  // a node reads a value nobody defines
    m.inputs.push_back(Info("x", kFloat, {2}));
    m.nodes.push_back(OnnxNode("Add", {"x", "ghost"}, {"y"}));
    m.outputs.push_back(Info("y", kFloat, {2}));
    ExpectError(Model(m), {"ghost"});
  }
  {
    GraphPb m;  // the graph output is never produced
    m.inputs.push_back(Info("x", kFloat, {2}));
    m.nodes.push_back(OnnxNode("Relu", {"x"}, {"r"}));
    m.outputs.push_back(Info("y", kFloat, {2}));
    ExpectError(Model(m), {"'y'"});
  }
  {
    GraphPb m;  // a cycle
    m.inputs.push_back(Info("x", kFloat, {2}));
    m.nodes.push_back(OnnxNode("Add", {"x", "b"}, {"a"}));
    m.nodes.push_back(OnnxNode("Relu", {"a"}, {"b"}));
    m.outputs.push_back(Info("b", kFloat, {2}));
    ExpectError(Model(m), {"cycle"});
  }
  {
    GraphPb m;  // one value defined twice
    m.inputs.push_back(Info("x", kFloat, {2}));
    m.nodes.push_back(OnnxNode("Relu", {"x"}, {"y"}));
    m.nodes.push_back(OnnxNode("Sigmoid", {"x"}, {"y"}));
    m.outputs.push_back(Info("y", kFloat, {2}));
    ExpectError(Model(m), {"'y'", "more than once"});
  }
  {
    GraphPb m;  // no outputs at all
    m.inputs.push_back(Info("x", kFloat, {2}));
    ExpectError(Model(m), {"no outputs"});
  }
}

TEST(OnnxBadInput, DynamicDimensionsAndRuntimeShapes) {
  {
    GraphPb m;
    m.inputs.push_back(Info("x", kFloat, {-1, 3}));
    m.nodes.push_back(OnnxNode("Relu", {"x"}, {"y"}));
    m.outputs.push_back(Info("y", kFloat, {-1, 3}));
    ExpectError(Model(m), {"'x'", "dynamic", "'N'"});
  }
  {
    GraphPb m;  // Reshape's shape comes from a graph input
    m.inputs.push_back(Info("x", kFloat, {2, 3}));
    m.inputs.push_back(Info("s", kInt64, {2}));
    m.nodes.push_back(OnnxNode("Reshape", {"x", "s"}, {"y"}));
    m.outputs.push_back(Info("y", kFloat, {3, 2}));
    ExpectError(Model(m), {"Reshape", "shape", "constant"});
  }
}

TEST(OnnxBadInput, UnsupportedOpsetsAndCorruptTensors) {
  GraphPb m;
  m.inputs.push_back(Info("x", kFloat, {2}));
  m.nodes.push_back(OnnxNode("Relu", {"x"}, {"y"}));
  m.outputs.push_back(Info("y", kFloat, {2}));
  ExpectError(Model(m, 99), {"opset 99"});
  // Older than opset 7: lifted by ONNX's version converter, then read.
  auto lifted = ImportOnnxBytes(Model(m, 3), "opset3.onnx");
  ASSERT_TRUE(lifted.ok()) << lifted.status().message();
  EXPECT_EQ(lifted->NumOperators(), 1);
  GraphPb t = m;  // an initializer whose data is shorter than its shape
  t.inits.push_back(Tensor("w", kFloat, {1000}, std::string(12, '\0')));
  t.nodes = {OnnxNode("Add", {"x", "w"}, {"y"})};
  ExpectError(Model(t), {"'w'", "truncated or corrupt"});
  GraphPb huge = m;  // dimensions that overflow
  huge.inits.push_back(Tensor("w", kFloat, {int64_t{1} << 40, int64_t{1} << 40}, ""));
  huge.nodes = {OnnxNode("Add", {"x", "w"}, {"y"})};
  ExpectError(Model(huge), {"'w'"});
}

TEST(OnnxBadInput, HostileAttributeValuesFoundByFuzzing) {
  {
    GraphPb m;  // shape dims whose product overflows int64
    m.inputs.push_back(Info("x", kFloat, {2, 3}));
    m.nodes.push_back(ConstInts("s", {int64_t{1} << 40, int64_t{1} << 40, -1}));
    m.nodes.push_back(OnnxNode("Reshape", {"x", "s"}, {"y"}, {}, "reshape"));
    m.outputs.push_back(Info("y", kFloat, {6}));
    ExpectError(Model(m), {"reshape"});
  }
  {
    GraphPb m;  // pads that would overflow later shape arithmetic
    m.inputs.push_back(Info("x", kFloat, {2, 3}));
    m.nodes.push_back(ConstInts("p", {0, int64_t{1} << 62, 0, 0}));
    m.nodes.push_back(OnnxNode("Pad", {"x", "p"}, {"y"}, {}, "pad"));
    m.outputs.push_back(Info("y", kFloat, {2, 3}));
    ExpectError(Model(m), {"pad", "out of range"});
  }
  {
    GraphPb m;  // a NaN bound: no canonical form (NaN != NaN)
    m.inputs.push_back(Info("x", kFloat, {2, 3}));
    m.inits.push_back(Floats("lo", {}, {std::nanf("")}));
    m.nodes.push_back(OnnxNode("Clip", {"x", "lo"}, {"y"}, {}, "clip"));
    m.outputs.push_back(Info("y", kFloat, {2, 3}));
    ExpectError(Model(m), {"clip", "NaN"});
  }
  {
    GraphPb m;  // Conv on a rank-3 input with a rank-4 weight (crashes libonnx's inference)
    m.inputs.push_back(Info("x", kFloat, {3, 8, 8}));
    m.inits.push_back(Floats("w", {4, 3, 3, 3}, std::vector<float>(108, 0.1f)));
    m.nodes.push_back(OnnxNode("Conv", {"x", "w"}, {"y"}, {}, "conv"));
    m.outputs.push_back(Info("y", kFloat, {4, 6, 6}));
    ExpectError(Model(m), {"conv", "rank"});
  }
}

TEST(OnnxBadInput, UninferableOpaqueOp) {
  GraphPb m;  // NonZero's output size depends on the data
  m.inputs.push_back(Info("x", kFloat, {4}));
  m.nodes.push_back(OnnxNode("NonZero", {"x"}, {"y"}, {}, "nz"));
  m.outputs.push_back(Info("y", kInt64, {1, -1}));
  ExpectError(Model(m), {"nz", "could not be inferred"});
}

}  // namespace
}  // namespace rewire

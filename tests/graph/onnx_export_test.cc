// The default ONNX export is standard ONNX that any runtime loads: unique node names, the
// default domain only, rewire's fused forms lowered at opset 17. The ai.rewire form is kept
// behind OnnxExportOptions::custom_ops. (That the lowered forms compute the same is checked by
// tests/kernels/onnx_lowering_test.cc on the reference executor.)

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "graph/onnx/onnx_io.h"
#include "tests/graph/onnx_test_graphs.h"
#include "tests/graph/test_util.h"

namespace rewire {
namespace {

using testing::EveryOp;
using namespace rewire::testing;  // NOLINT: Op, Must, V, F32

onnx::ModelProto Parse(const std::string& bytes) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(bytes));
  return m;
}

/// Every node name is non-empty and unique; every node and opset is in the default domain.
void ExpectStandard(const onnx::ModelProto& m) {
  std::set<std::string> names;
  for (const auto& n : m.graph().node()) {
    EXPECT_FALSE(n.name().empty()) << n.op_type();
    EXPECT_TRUE(names.insert(n.name()).second) << "two nodes named " << n.name();
    EXPECT_EQ(n.domain(), "") << n.name() << " (" << n.op_type() << ")";
    for (const char* rewire_only : {"Gelu", "ScalarMul", "Enlarge", "MergeGConv", "Conv2D"}) {
      EXPECT_NE(n.op_type(), rewire_only) << n.name();
    }
    for (const auto& a : n.attribute()) EXPECT_NE(a.name(), "activation") << n.name();
  }
  ASSERT_EQ(m.opset_import_size(), 1);
  EXPECT_EQ(m.opset_import(0).domain(), "");
  EXPECT_EQ(m.opset_import(0).version(), 17);
}

int Count(const onnx::ModelProto& m, const std::string& op_type) {
  int n = 0;
  for (const auto& node : m.graph().node()) n += node.op_type() == op_type;
  return n;
}

TEST(OnnxStandardExport, EveryOpHasUniqueNamesAndTheDefaultDomainOnly) {
  auto bytes = ExportOnnxBytes(EveryOp());
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  const onnx::ModelProto m = Parse(*bytes);
  ExpectStandard(m);
  EXPECT_GE(Count(m, "Erf"), 2);   // the Erf op and Gelu's Erf form
  EXPECT_GE(Count(m, "Relu"), 2);  // the Relu op and the fused conv's
  EXPECT_GE(Count(m, "Tanh"), 2);
}

TEST(OnnxStandardExport, OpsSharingANameGetDistinctNodeNames) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({1, 2, 4, 4})));
  const NodeId w = Must(g.AddWeight("w", {2, 2, 1, 1}, {-0.5f, 0.5f, 1}));
  NodeId y = x;
  for (int i = 0; i < 3; ++i) {
    y = Op(g, OpType::kConv2D, {V(y), V(w)}, {{"activation", std::string("relu")}}, "Conv2D");
  }
  ASSERT_TRUE(g.AddOutput("y", V(y)).ok());
  auto bytes = ExportOnnxBytes(g);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  const onnx::ModelProto m = Parse(*bytes);
  ExpectStandard(m);
  EXPECT_EQ(Count(m, "Conv"), 3);
  EXPECT_EQ(Count(m, "Relu"), 3);
}

TEST(OnnxStandardExport, KnownWeightsAreTransformedAtExport) {
  // EveryOp's Enlarge and MergeGConv take weights: their results are initializers.
  const onnx::ModelProto m = Parse(*ExportOnnxBytes(EveryOp()));
  EXPECT_EQ(Count(m, "Pad"), 1);  // EveryOp's own Pad only
  EXPECT_EQ(Count(m, "Concat"), 1);
  bool enlarged = false;
  for (const auto& t : m.graph().initializer()) {
    enlarged = enlarged || (t.dims_size() == 4 && t.dims(2) == 5 && t.dims(3) == 5);
  }
  EXPECT_TRUE(enlarged) << "no 5x5 initializer for Enlarge's result";
}

TEST(OnnxStandardExport, ComputedWeightsUseStandardOps) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({1, 4, 6, 6})));
  const NodeId wi = Must(g.AddInput("w", F32({4, 2, 3, 3})));  // a weight known only at run time
  const NodeId enl = Op(g, OpType::kEnlarge, {V(wi)}, {{"kernel_shape", Ints{5, 5}}});
  const NodeId merged =
      Op(g, OpType::kMergeGConv, {V(wi)}, {{"group", int64_t{2}}, {"count", int64_t{2}}});
  const NodeId a =
      Op(g, OpType::kConv2D, {V(x), V(enl)}, {{"pads", Ints{2, 2, 2, 2}}, {"group", int64_t{2}}});
  const NodeId b = Op(g, OpType::kConv2D, {V(x), V(merged)}, {{"pads", Ints{1, 1, 1, 1}}});
  ASSERT_TRUE(g.AddOutput("a", V(a)).ok());
  ASSERT_TRUE(g.AddOutput("b", V(b)).ok());
  auto bytes = ExportOnnxBytes(g);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  const onnx::ModelProto m = Parse(*bytes);
  ExpectStandard(m);
  EXPECT_EQ(Count(m, "Pad"), 1);
  EXPECT_EQ(Count(m, "Concat"), 1);
  EXPECT_EQ(Count(m, "Mul"), 2);
}

TEST(OnnxCustomExport, KeepsTheRewireDomainAndTheGraph) {
  OnnxExportOptions custom;
  custom.custom_ops = true;
  const Graph g = EveryOp();
  auto bytes = ExportOnnxBytes(g, custom);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  const onnx::ModelProto m = Parse(*bytes);
  bool rewire_domain = false;
  for (const auto& n : m.graph().node()) rewire_domain = rewire_domain || n.domain() == "ai.rewire";
  EXPECT_TRUE(rewire_domain);
  auto back = ImportOnnxBytes(*bytes, "custom.onnx");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->Hash(), g.Hash());
}

// ---------------------------------------------------------------------------- dynamic axes

/// A model whose input 'x' (8x16) has its first axis dynamic, named `symbol`, as
/// torch.onnx.export writes with dynamic_axes; its output's first axis too.
std::string DynamicModel(const std::string& symbol) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({8, 16})));
  const NodeId w = Must(g.AddWeight("w", {16, 4}, WeightInit{}));
  const NodeId mm = Must(g.AddOp(OpType::kMatMul, {V(x), V(w)}));
  const NodeId relu = Must(g.AddOp(OpType::kRelu, {V(mm)}));
  EXPECT_TRUE(g.AddOutput("y", V(relu)).ok());
  onnx::ModelProto m = Parse(Must(ExportOnnxBytes(g)));
  m.mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_param(symbol);
  m.mutable_graph()
      ->mutable_output(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_param(symbol);
  return m.SerializeAsString();
}

TEST(OnnxDynamicAxes, AreRefusedWithTheFlagThatFixesThem) {
  auto g = ImportOnnxBytes(DynamicModel("batch"), "dyn.onnx");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("dimension 0 is dynamic ('batch')"), std::string::npos)
      << g.status().message();
  EXPECT_NE(g.status().message().find("--input-shape batch=1"), std::string::npos)
      << g.status().message();
}

TEST(OnnxDynamicAxes, AreFixedByInputNameOrBySymbol) {
  for (const std::string& spec : {"x=3x16", "x=3,16", "batch=3"}) {
    OnnxImportOptions o;
    ASSERT_TRUE(ParseInputShape(spec, o).ok()) << spec;
    auto g = ImportOnnxBytes(DynamicModel("batch"), "dyn.onnx", o);
    ASSERT_TRUE(g.ok()) << spec << ": " << g.status().message();
    const NodeId x = g->FindNode("x");
    ASSERT_NE(x, kNoNode);
    EXPECT_EQ(g->node(x).outputs[0].shape, (Shape{3, 16})) << spec;
    EXPECT_EQ(g->type(g->outputs()[0].value).shape, (Shape{3, 4})) << spec;
    // What rewire writes back has the fixed, static shape.
    onnx::ModelProto back = Parse(Must(ExportOnnxBytes(*g)));
    EXPECT_EQ(back.graph().input(0).type().tensor_type().shape().dim(0).dim_value(), 3);
  }
}

TEST(OnnxDynamicAxes, BadShapesSayWhatIsWrong) {
  auto error = [](const std::string& spec) {
    OnnxImportOptions o;
    const Status parsed = ParseInputShape(spec, o);
    if (!parsed.ok()) return parsed.message();
    auto g = ImportOnnxBytes(DynamicModel("batch"), "dyn.onnx", o);
    return g.ok() ? std::string("imported") : g.status().message();
  };
  EXPECT_NE(error("x").find("--input-shape expects NAME=DIMS"), std::string::npos);
  EXPECT_NE(error("x=3xk").find("--input-shape expects NAME=DIMS"), std::string::npos);
  EXPECT_NE(error("x=0x16").find("--input-shape expects NAME=DIMS"), std::string::npos);
  EXPECT_NE(error("x=3x16x1").find("has 3 dimensions; input 'x' has 2"), std::string::npos);
  EXPECT_NE(error("x=3x17").find("dimension 1 of input 'x' is fixed at 16"), std::string::npos);
  const std::string unknown = error("z=3x16");
  EXPECT_NE(unknown.find("no graph input 'z' (its inputs: x)"), std::string::npos) << unknown;
  const std::string symbol = error("seq=3");
  EXPECT_NE(symbol.find("symbols: 'batch'"), std::string::npos) << symbol;
  OnnxImportOptions twice;
  ASSERT_TRUE(ParseInputShape("x=3x16", twice).ok());
  EXPECT_FALSE(ParseInputShape("x=4x16", twice).ok());
}

/// y = MatMul(x, W) + b with a 64x64 weight (16 KiB) and a small bias.
Graph WeightedGraph() {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({4, 64})));
  const NodeId w = Must(g.AddWeight("W", {64, 64}, WeightInit{}));
  const NodeId b = Must(g.AddWeight("b", {64}, WeightInit{}));
  const NodeId m = Must(g.AddOp(OpType::kMatMul, {V(x), V(w)}));
  EXPECT_TRUE(g.AddOutput("y", V(Must(g.AddOp(OpType::kAdd, {V(m), V(b)})))).ok());
  return g;
}

/// A fresh directory under the test temp dir; removed at scope exit.
struct TempDir {
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("rewire_external_" + std::to_string(::getpid()));
};

/// Export options that put initializers of 1 KiB or more in `data`.
OnnxExportOptions ExternalTo(const std::string& data) {
  OnnxExportOptions o;
  o.external_data_path = data;
  return o;
}

TEST(OnnxExternalData, WeightsBesideTheModelImportAsTheSameGraph) {
  TempDir dir;
  const std::string bytes = Must(ExportOnnxBytes(WeightedGraph()));
  const std::string data = (dir.path / "net.onnx.data").string();
  const std::string small = Must(ExportOnnxBytes(WeightedGraph(), ExternalTo(data)));
  // The 16 KiB weight moved out; the 256-byte bias stays inline.
  EXPECT_LT(small.size(), bytes.size() - 16000);
  const onnx::ModelProto m = Parse(small);
  int external = 0;
  for (const auto& t : m.graph().initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    ++external;
    EXPECT_EQ(t.name(), "W");
    ASSERT_GE(t.external_data_size(), 3);
    EXPECT_EQ(t.external_data(0).value(), "net.onnx.data");  // relative: beside the model
  }
  EXPECT_EQ(external, 1);
  const std::string model = (dir.path / "net.onnx").string();
  { std::ofstream(model, std::ios::binary) << small; }
  const Graph back = Must(ImportOnnxFile(model));
  EXPECT_EQ(back.Hash(), Must(ImportOnnxBytes(bytes)).Hash());
  // The same bytes without a directory to look in are refused with what to do.
  auto as_bytes = ImportOnnxBytes(small, "net.onnx");
  ASSERT_FALSE(as_bytes.ok());
  EXPECT_EQ(as_bytes.status().message(),
            "net.onnx: initializer 'W' keeps its data in an external file: load the model from "
            "its path, with its data file beside it");
}

TEST(OnnxExternalData, AMissingFileALocationOutsideTheDirectoryOrAShortFileAreRefused) {
  TempDir dir;
  const std::string data = (dir.path / "net.onnx.data").string();
  onnx::ModelProto m = Parse(Must(ExportOnnxBytes(WeightedGraph(), ExternalTo(data))));
  auto import_with = [&](const std::string& location, const std::string& length) {
    onnx::ModelProto copy = m;
    for (auto& t : *copy.mutable_graph()->mutable_initializer()) {
      for (auto& kv : *t.mutable_external_data()) {
        if (kv.key() == "location") kv.set_value(location);
        if (kv.key() == "length" && !length.empty()) kv.set_value(length);
      }
    }
    const std::string model = (dir.path / "net.onnx").string();
    std::ofstream(model, std::ios::binary) << copy.SerializeAsString();
    return ImportOnnxFile(model).status().message();
  };
  const std::string model = (dir.path / "net.onnx").string();
  EXPECT_EQ(import_with("other.data", ""), model + ": initializer 'W': its external data file " +
                                               (dir.path / "other.data").string() +
                                               " is missing (it must be beside the model)");
  EXPECT_EQ(import_with("../net.onnx.data", ""),
            model +
                ": initializer 'W': external data location '../net.onnx.data' is not a path "
                "inside the model's directory");
  EXPECT_NE(import_with("net.onnx.data", "99999999").find("runs past the end of"),
            std::string::npos);
}

/// The initializer `name` of a parsed model.
const onnx::TensorProto& InitializerOf(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& t : m.graph().initializer()) {
    if (t.name() == name) return t;
  }
  ADD_FAILURE() << "no initializer " << name;
  static const onnx::TensorProto none;
  return none;
}

TEST(OnnxHalf, AFloat16ModelReadsAsFloat32AndIsWrittenBackInItsOwnType) {
  const Graph g = WeightedGraph();
  for (int32_t type : {onnx::TensorProto::FLOAT16, onnx::TensorProto::BFLOAT16}) {
    SCOPED_TRACE(type);
    OnnxExportOptions half;
    half.float_type = type;
    const std::string bytes = Must(ExportOnnxBytes(g, half));
    const onnx::ModelProto m = Parse(bytes);
    EXPECT_EQ(m.graph().input(0).type().tensor_type().elem_type(), type);
    EXPECT_EQ(m.graph().output(0).type().tensor_type().elem_type(), type);
    for (const auto& t : m.graph().initializer()) EXPECT_EQ(t.data_type(), type) << t.name();
    EXPECT_EQ(InitializerOf(m, "W").raw_data().size(), 64u * 64u * 2u);
    // Read back: float32 inside, the file's type reported.
    int32_t read_type = 0;
    OnnxImportOptions o;
    o.float_type = &read_type;
    const Graph back = Must(ImportOnnxBytes(bytes, "half.onnx", o));
    EXPECT_EQ(read_type, type);
    EXPECT_EQ(back.type(V(back.FindNode("x"))).dtype, DType::kFloat32);
    // Its weights are the half values, exactly: written again, the same bytes.
    const std::string again = Must(ExportOnnxBytes(back, half));
    EXPECT_EQ(InitializerOf(Parse(again), "W").raw_data(), InitializerOf(m, "W").raw_data());
    // A float32 file reports no half type.
    read_type = -1;
    Must(ImportOnnxBytes(Must(ExportOnnxBytes(g)), "f.onnx", o));
    EXPECT_EQ(read_type, 0);
  }
}

TEST(OnnxHalf, Float16RoundsToNearestEvenAndSaturatesToInfinity) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({7})));
  const std::vector<float> values = {
      1.0f, 65504.0f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 70000.0f, 6e-8f, -2.5f};
  const NodeId w = Must(g.AddWeightData(
      "W", std::make_shared<const HostTensor>(HostTensor::FromFloats({7}, values))));
  ASSERT_TRUE(g.AddOutput("y", V(Must(g.AddOp(OpType::kAdd, {V(x), V(w)})))).ok());
  OnnxExportOptions half;
  half.float_type = onnx::TensorProto::FLOAT16;
  const std::string raw = InitializerOf(Parse(Must(ExportOnnxBytes(g, half))), "W").raw_data();
  ASSERT_EQ(raw.size(), 14u);
  std::vector<uint16_t> bits(7);
  std::memcpy(bits.data(), raw.data(), 14);
  // 1; the largest half; a tie below (to even: 1); a tie above (to even: 1 + 2^-9); past the
  // largest (infinity); the smallest subnormal (2^-24 = 5.96e-8); a negative.
  EXPECT_EQ(bits, (std::vector<uint16_t>{0x3C00, 0x7BFF, 0x3C00, 0x3C02, 0x7C00, 0x0001, 0xC100}));
}

TEST(OnnxHalf, AMixedPrecisionModelIsRefused) {
  onnx::ModelProto m = Parse(Must(ExportOnnxBytes(WeightedGraph())));
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT16);
  auto g = ImportOnnxBytes(m.SerializeAsString(), "mixed.onnx");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message(),
            "mixed.onnx: the model mixes float16 and float32 tensors (a mixed-precision export); "
            "rewire reads models whose floating tensors are all float32, all float16 or all "
            "bfloat16");
}

}  // namespace
}  // namespace rewire

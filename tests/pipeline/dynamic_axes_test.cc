// The written file keeps the input's dynamic axes where the written graph holds at other sizes
// (pipeline/dynamic_axes.h), and keeps the fixed sizes, saying why, where it does not.

#include "pipeline/dynamic_axes.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "kernels/executor.h"
#include "tests/graph/test_util.h"

namespace rewire {
namespace {

using namespace rewire::testing;  // NOLINT: Must, V, F32

/// Relu(Reshape(Reshape(x @ W, `split`), `flat`)) for x of batch x seq x 8: reshapes to
/// batch x seq x 2 x 4, then to (batch * seq) x 8. With `zero_bias`, x + 0 (a constant of x's
/// fixed shape) in x's place.
Graph SplitHeads(int64_t batch, int64_t seq, const Ints& split, const Ints& flat,
                 bool zero_bias = false) {
  Graph g;
  NodeId x = Must(g.AddInput("x", F32({batch, seq, 8})));
  if (zero_bias) {
    auto zeros = std::make_shared<HostTensor>(DType::kFloat32, Shape{batch, seq, 8});
    x = Must(g.AddOp(OpType::kAdd, {V(x), V(Must(g.AddConstant("zeros", zeros)))}));
  }
  const NodeId w = Must(g.AddWeight("W", {8, 8}, WeightInit{}));
  const NodeId mm = Must(g.AddOp(OpType::kMatMul, {V(x), V(w)}));
  const NodeId heads = Must(g.AddOp(OpType::kReshape, {V(mm)}, {{"shape", split}}));
  const NodeId rows = Must(g.AddOp(OpType::kReshape, {V(heads)}, {{"shape", flat}}));
  EXPECT_TRUE(g.AddOutput("y", V(Must(g.AddOp(OpType::kRelu, {V(rows)})))).ok());
  return g;
}

/// `g` as ONNX bytes whose input 'x' has its first two axes named "batch" and "seq", as
/// torch.onnx.export writes them with dynamic_axes.
std::string WithDynamicAxes(const Graph& g) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(Must(ExportOnnxBytes(g))));
  auto* dims =
      m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  dims->mutable_dim(0)->set_dim_param("batch");
  dims->mutable_dim(1)->set_dim_param("seq");
  m.mutable_graph()->clear_value_info();
  return m.SerializeAsString();
}

/// The user's model: reshapes that copy (0) and infer (-1), right at every size (rewire itself
/// writes the targets it resolved, so they are put in the file here).
const std::string& UserModel() {
  static const std::string bytes = [] {
    onnx::ModelProto m;
    EXPECT_TRUE(m.ParseFromString(WithDynamicAxes(SplitHeads(2, 3, {2, 3, 2, 4}, {6, 8}))));
    const std::vector<std::vector<int64_t>> targets = {{0, 0, 2, 4}, {-1, 8}};
    size_t k = 0;
    for (const auto& reshape : m.graph().node()) {
      if (reshape.op_type() != "Reshape") continue;
      for (auto& c : *m.mutable_graph()->mutable_node()) {
        if (c.op_type() != "Constant" || c.output(0) != reshape.input(1)) continue;
        onnx::TensorProto* t = c.mutable_attribute(0)->mutable_t();
        t->clear_raw_data();
        t->clear_int64_data();
        t->clear_dims();
        t->add_dims(static_cast<int64_t>(targets[k].size()));
        for (int64_t d : targets[k]) t->add_int64_data(d);
      }
      ++k;
    }
    EXPECT_EQ(k, 2u);
    return m.SerializeAsString();
  }();
  return bytes;
}

StatusOr<Graph> LoadAt(const std::map<std::string, int64_t>& symbols, OnnxDynamicAxes* axes) {
  OnnxImportOptions o = ImportAtSizes(symbols);
  o.dynamic_axes = axes;
  return ImportOnnxBytes(UserModel(), "user.onnx", o);
}

TEST(DynamicAxes, ImportRecordsTheSymbolsInputShapeFixed) {
  OnnxDynamicAxes axes;
  ASSERT_TRUE(LoadAt({{"batch", 2}, {"seq", 3}}, &axes).ok());
  EXPECT_EQ(axes.symbols, (std::map<std::string, int64_t>{{"batch", 2}, {"seq", 3}}));
  EXPECT_EQ(axes.inputs.at("x"), (std::vector<std::string>{"batch", "seq", ""}));
  EXPECT_EQ(axes.outputs.at("y"), (std::vector<std::string>{"", ""}));
  OnnxDynamicAxes none;
  ASSERT_TRUE(ImportOnnxBytes(Must(ExportOnnxBytes(SplitHeads(2, 3, {2, 3, 2, 4}, {6, 8}))),
                              "static.onnx", OnnxImportOptions{{}, "", nullptr, &none})
                  .ok());
  EXPECT_TRUE(none.empty());
}

TEST(DynamicAxes, AGraphWithFixedReshapesIsWrittenForEverySize) {
  OnnxDynamicAxes axes;
  const Graph input = Must(LoadAt({{"batch", 2}, {"seq", 3}}, &axes));
  // What a search leaves: the same graph with the reshapes' targets at the fixed sizes.
  const Graph searched = SplitHeads(2, 3, {2, 3, 2, 4}, {6, 8});
  ASSERT_TRUE(CheckEquivalent(input, searched, 1e-5).verified);
  const LoadAtSizes load = [](const std::map<std::string, int64_t>& s) {
    return LoadAt(s, nullptr);
  };
  const DynamicAxesResult r = Must(KeepDynamicAxes(searched, axes, {}, load, 1e-5));
  ASSERT_TRUE(r.kept) << r.note;
  ASSERT_EQ(r.verified_at.size(), 2u);
  EXPECT_EQ(r.verified_at[0], (std::map<std::string, int64_t>{{"batch", 3}, {"seq", 4}}));
  EXPECT_EQ(r.verified_at[1], (std::map<std::string, int64_t>{{"batch", 4}, {"seq", 6}}));
  EXPECT_NE(r.note.find("checked at batch=3, seq=4 and at batch=4, seq=6"), std::string::npos)
      << r.note;
  // The output's rows follow batch * seq, a size no symbol names: it gets a name of its own.
  EXPECT_EQ(r.axes.outputs.at("y"), (std::vector<std::string>{"y_dim0", ""}));
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(r.bytes));
  const auto& x = m.graph().input(0).type().tensor_type().shape();
  EXPECT_EQ(x.dim(0).dim_param(), "batch");
  EXPECT_EQ(x.dim(1).dim_param(), "seq");
  EXPECT_EQ(x.dim(2).dim_value(), 8);
  EXPECT_EQ(m.graph().value_info_size(), 0);
  // At a size it was not checked at, the file still computes what the user's model does.
  for (const auto& at : std::vector<std::map<std::string, int64_t>>{{{"batch", 5}, {"seq", 1}},
                                                                    {{"batch", 1}, {"seq", 7}}}) {
    const Graph written = Must(ImportOnnxBytes(r.bytes, "written.onnx", ImportAtSizes(at)));
    const Equivalence e = CheckEquivalent(Must(LoadAt(at, nullptr)), written, 1e-5);
    EXPECT_TRUE(e.verified) << SizesText(at) << ": " << e.message;
  }
}

TEST(DynamicAxes, AConstantOfTheFixedSizeKeepsTheFileStaticAndSaysWhy) {
  OnnxDynamicAxes axes;
  const Graph input = Must(LoadAt({{"batch", 2}, {"seq", 3}}, &axes));
  // The same values, with zeros the size of the fixed batch and sequence added to x: right at
  // 2 x 3, and at no other size.
  const Graph searched = SplitHeads(2, 3, {2, 3, 2, 4}, {6, 8}, /*zero_bias=*/true);
  ASSERT_TRUE(CheckEquivalent(input, searched, 1e-5).verified);
  const LoadAtSizes load = [](const std::map<std::string, int64_t>& s) {
    return LoadAt(s, nullptr);
  };
  const DynamicAxesResult r = Must(KeepDynamicAxes(searched, axes, {}, load, 1e-5));
  EXPECT_FALSE(r.kept);
  EXPECT_TRUE(r.bytes.empty());
  EXPECT_NE(r.note.find("written at the fixed sizes (batch=2, seq=3)"), std::string::npos)
      << r.note;
  EXPECT_NE(r.note.find("batch=3, seq=4"), std::string::npos) << r.note;
}

}  // namespace
}  // namespace rewire

// The operator table (graph/ops.def): its rows parse, its traits reach the consumers, and an op
// added through it (HardSigmoid) is inferred, checked and accepted by the rule loader.

#include <gtest/gtest.h>

#include <set>

#include "graph/graph.h"
#include "graph/rules/rule.h"
#include "tests/graph/test_util.h"

namespace rewire {
namespace {

using testing::F32;

std::string ErrorOf(OpType op, Attrs attrs, std::vector<TensorType> in) {
  auto r = InferOutputTypes(op, attrs, in);
  return r.ok() ? "" : r.status().message();
}

TEST(OpTraits, EveryRowParsesAndNamesAreUnique) {
  std::set<std::string> names;
  std::set<int> ids;
  for (int i = 0; i < kNumOpTypes; ++i) {
    const OpType op = static_cast<OpType>(i);
    const OpInfo& info = GetOpInfo(op);
    EXPECT_TRUE(names.insert(std::string(info.name)).second) << info.name;
    EXPECT_TRUE(ids.insert(info.id).second) << info.name << " reuses id " << info.id;
    EXPECT_EQ(OpTypeFromName(info.name), op);
    std::set<std::string> attrs;
    for (const OpAttr& a : OpAttrs(op)) {
      EXPECT_FALSE(a.name.empty()) << info.name;
      EXPECT_TRUE(attrs.insert(a.name).second) << info.name << " declares " << a.name << " twice";
      EXPECT_EQ(FindOpAttr(op, a.name), &a);
      if (a.default_value) {
        EXPECT_TRUE(a.is_float) << info.name << "." << a.name;
      }
    }
    // Leaves and Opaque are made by their own Graph::Add* calls, every other op by AddOp.
    EXPECT_EQ(info.add_op, info.cost != CostClass::kLeaf && op != OpType::kOpaque) << info.name;
    if (info.cost != CostClass::kElementwise) {
      EXPECT_EQ(info.flops, 0) << info.name;
    }
  }
  EXPECT_EQ(*ids.rbegin(), kNumOpTypes - 1);
}

TEST(OpTraits, TraitsThatReplacedCaseLists) {
  EXPECT_TRUE(HasFusedActivation(OpType::kConv2D));
  EXPECT_TRUE(HasFusedActivation(OpType::kGemm));
  EXPECT_FALSE(HasFusedActivation(OpType::kRelu));
  EXPECT_EQ(GetOpInfo(OpType::kReshape).cost, CostClass::kView);
  EXPECT_EQ(GetOpInfo(OpType::kSlice).cost, CostClass::kSelect);
  EXPECT_EQ(GetOpInfo(OpType::kGelu).flops, 8);
  EXPECT_TRUE(FindOpAttr(OpType::kSlice, "starts")->onnx_input);
  EXPECT_FALSE(FindOpAttr(OpType::kGather, "axis")->onnx_input);
  EXPECT_EQ(FindOpAttr(OpType::kLeakyRelu, "alpha")->default_value, 0.01f);
  EXPECT_FALSE(FindOpAttr(OpType::kScalarMul, "scalar")->default_value.has_value());
  EXPECT_EQ(ArityText(GetOpInfo(OpType::kConcat)), "1 or more");
  EXPECT_EQ(ArityText(GetOpInfo(OpType::kGemm)), "2 to 3");
  // The structural hash numbers of the first ops are their original enum values.
  EXPECT_EQ(GetOpInfo(OpType::kInput).id, 0);
  EXPECT_EQ(GetOpInfo(OpType::kOpaque).id, 46);
}

TEST(OpTraits, HardSigmoidComesFromItsRow) {
  const OpInfo& info = GetOpInfo(OpType::kHardSigmoid);
  EXPECT_EQ(info.name, "HardSigmoid");
  EXPECT_EQ(info.onnx_name, "HardSigmoid");
  EXPECT_EQ(info.domain, "");
  EXPECT_EQ(OpTypeFromOnnx("", "HardSigmoid"), OpType::kHardSigmoid);
  EXPECT_EQ(OpTypeFromOnnx("ai.onnx", "HardSigmoid"), OpType::kHardSigmoid);
  EXPECT_EQ(info.min_inputs, 1);
  EXPECT_EQ(info.max_inputs, 1);
  EXPECT_EQ(info.num_outputs, 1);
  EXPECT_EQ(info.cost, CostClass::kElementwise);
  EXPECT_EQ(info.flops, 4);
  ASSERT_EQ(OpAttrs(OpType::kHardSigmoid).size(), 2u);
  EXPECT_EQ(FindOpAttr(OpType::kHardSigmoid, "alpha")->default_value, 0.2f);
  EXPECT_EQ(FindOpAttr(OpType::kHardSigmoid, "beta")->default_value, 0.5f);
}

TEST(ShapeInference, HardSigmoidFillsItsDefaultsAndTakesFloat32Only) {
  Attrs attrs;
  auto out = InferAndCanonicalize(OpType::kHardSigmoid, &attrs, {F32({2, 3})});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(*out, std::vector<TensorType>{F32({2, 3})});
  EXPECT_EQ(attrs.GetFloat("alpha"), 0.2f);
  EXPECT_EQ(attrs.GetFloat("beta"), 0.5f);
  Attrs integer{{"alpha", int64_t{1}}};  // an integer attribute is read as a float
  ASSERT_TRUE(InferAndCanonicalize(OpType::kHardSigmoid, &integer, {F32({4})}).ok());
  EXPECT_EQ(integer.GetFloat("alpha"), 1.f);
  EXPECT_NE(ErrorOf(OpType::kHardSigmoid, {}, {TensorType{DType::kInt64, {4}}}).find("f32"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf(OpType::kHardSigmoid, {{"gamma", 1.f}}, {F32({4})}).find("unknown attribute 'gamma'"),
      std::string::npos);
  EXPECT_NE(ErrorOf(OpType::kHardSigmoid, {{"alpha", std::string("x")}}, {F32({4})})
                .find("must be a float"),
            std::string::npos);
  EXPECT_NE(ErrorOf(OpType::kHardSigmoid, {}, {F32({4}), F32({4})}).find("expects 1 inputs"),
            std::string::npos);
}

const char* kHardSigmoidRule = R"(
rule hard_sigmoid_unit_is_clip
  class algebra
  source
    y = HardSigmoid(x; alpha=1.0, beta=0.0)
  target
    z = Clip(x; min=0.0, max=1.0)
  outputs y -> z
  check x=[2,8]
  check x=[1,3,4,4]
end
)";

TEST(RuleParser, HardSigmoidTakesTheAttributesItsRowDeclares) {
  auto r = rules::ParseRules(kHardSigmoidRule, "hs.rules");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ(r->at(0).source.at(0).op, OpType::kHardSigmoid);
  std::string text = kHardSigmoidRule;
  text.replace(text.find("beta=0.0"), 8, "gamma=0.0");
  auto bad = rules::ParseRules(text, "hs.rules");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(
      bad.status().message().find("HardSigmoid has no attribute 'gamma' (known: alpha, beta)"),
      std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace rewire

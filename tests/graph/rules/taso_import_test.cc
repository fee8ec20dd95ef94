// Converting TASO's rule collections (graph_subst.pb format) into rewire rule text.

#include "graph/rules/taso_import.h"

#include <gtest/gtest.h>

#include <string>

#include "graph/rules/rule.h"
#include "tests/graph/rules/taso_test_rules.h"

namespace rewire {
namespace {

using namespace testing::taso_rules;

std::vector<rules::TasoRule> ConvertOrDie(const std::string& bytes) {
  auto r = rules::ConvertTasoRules(bytes);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : std::vector<rules::TasoRule>{};
}

TEST(TasoImport, ConvertsASharedInputMatMulMergeWithSplitSizesFromTheSource) {
  const auto rules = ConvertOrDie(SmallCollection());
  ASSERT_EQ(rules.size(), 4u);
  const rules::TasoRule& r = rules[0];
  EXPECT_EQ(r.name, "taso_000");
  EXPECT_TRUE(r.reason.empty()) << r.reason << ": " << r.detail;
  for (const char* line :
       {"s0 = MatMul(in1, in4; activation=\"none\")", "t0 = Concat(in4, in5; axis=1)",
        "t2_0, t2_1 = Split(t1; axis=1, split=[dim(in4, 1), dim(in5, 1)])",
        "rank(in4) == 2 && dim(in4, 0) == dim(in1, 1)", "outputs s0 -> t2_0, s1 -> t2_1"}) {
    EXPECT_NE(r.text.find(line), std::string::npos) << line << " not in\n" << r.text;
  }
  auto parsed = rules::ParseRules(r.text, "taso");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message() << "\n" << r.text;
  ASSERT_EQ(parsed->size(), 1u);
  EXPECT_EQ((*parsed)[0].checks.size(), 3u);
  EXPECT_EQ((*parsed)[0].rule_class, "merge");
}

TEST(TasoImport, SamePaddingBecomesPadsFromTheKernelAndActivationsTheirNames) {
  const auto rules = ConvertOrDie(SmallCollection());
  const rules::TasoRule& r = rules[1];
  ASSERT_TRUE(r.reason.empty()) << r.reason << ": " << r.detail;
  EXPECT_NE(r.text.find("pads=[(dim(in10, 2) - 1) / 2, (dim(in10, 3) - 1) / 2,"), std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("dim(in10, 2) % 2 == 1"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("activation=\"relu\""), std::string::npos) << r.text;
  EXPECT_NE(r.summary.find("pad=same"), std::string::npos) << r.summary;
  ASSERT_TRUE(rules::ParseRules(r.text, "taso").ok());
}

TEST(TasoImport, RefusesAnOpRewireCannotExpressWithItsName) {
  const auto rules = ConvertOrDie(SmallCollection());
  const rules::TasoRule& r = rules[2];
  EXPECT_EQ(r.reason, "unsupported op");
  EXPECT_EQ(r.detail, "pool2d_max");
  EXPECT_TRUE(r.text.empty());
}

TEST(TasoImport, RefusesScalarMulAndStridedConvsWithTheReason) {
  taso::TasoRuleCollection c;
  auto* r = c.add_rule();
  AddOp(r->mutable_source(), kMul, {{-1, 0}, {-2, 0}}, {});
  AddOp(r->mutable_target(), kMul, {{-2, 0}, {-1, 0}}, {});
  MapOutput(r, 0, 0, 0, 0);
  r = c.add_rule();
  AddOp(r->mutable_source(), kConv2D, {{-7, 0}, {-10, 0}},
        {{kStrideH, 2}, {kStrideW, 2}, {kPad, 0}, {kActi, 0}});
  AddOp(r->mutable_target(), kConv2D, {{-7, 0}, {-10, 0}},
        {{kStrideH, 2}, {kStrideW, 2}, {kPad, 0}, {kActi, 0}});
  MapOutput(r, 0, 0, 0, 0);
  const auto rules = ConvertOrDie(c.SerializeAsString());
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].reason, "unsupported op");
  EXPECT_NE(rules[0].detail.find("scalar"), std::string::npos) << rules[0].detail;
  EXPECT_EQ(rules[1].reason, "unsupported parameter");
  EXPECT_NE(rules[1].detail.find("stride 2x2"), std::string::npos) << rules[1].detail;
}

TEST(TasoImport, MalformedRulesAreRefusedNotErrors) {
  taso::TasoRuleCollection c;
  auto* r = c.add_rule();
  AddOp(r->mutable_source(), kMatMul, {{-1, 0}, {3, 0}}, {{kActi, 0}});  // op 3 does not exist
  AddOp(r->mutable_target(), kMatMul, {{-1, 0}, {-1, 0}}, {{kActi, 0}});
  MapOutput(r, 0, 0, 0, 0);
  r = c.add_rule();
  AddOp(r->mutable_source(), kConcat, {{-1, 0}, {-2, 0}}, {{kAxis, 1}});  // no rank
  AddOp(r->mutable_target(), kConcat, {{-1, 0}, {-2, 0}}, {{kAxis, 1}});
  MapOutput(r, 0, 0, 0, 0);
  const auto rules = ConvertOrDie(c.SerializeAsString());
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].reason, "malformed rule");
  EXPECT_EQ(rules[1].reason, "malformed rule");
  EXPECT_NE(rules[1].detail.find("concat without parameter 10"), std::string::npos)
      << rules[1].detail;
}

TEST(TasoImport, GroupedTargetConvPartsGetEqualOutputChannels) {
  // conv(x1, w1), conv(x2, w2) concatenated over channels => one conv with 2 groups on
  // concat(x1, x2) and concat(w1, w2): exact only when both convs have as many outputs.
  taso::TasoRuleCollection c;
  auto* r = c.add_rule();
  const std::initializer_list<std::pair<int, int>> same = {
      {kStrideH, 1}, {kStrideW, 1}, {kPad, 0}, {kActi, 0}};
  AddOp(r->mutable_source(), kConv2D, {{-7, 0}, {-10, 0}}, same);
  AddOp(r->mutable_source(), kConv2D, {{-8, 0}, {-11, 0}}, same);
  AddOp(r->mutable_source(), kConcat, {{0, 0}, {1, 0}}, {{kAxis, 1}, {kNumDim, 4}});
  AddOp(r->mutable_target(), kConcat, {{-7, 0}, {-8, 0}}, {{kAxis, 1}, {kNumDim, 4}});
  AddOp(r->mutable_target(), kConcat, {{-10, 0}, {-11, 0}}, {{kAxis, 0}, {kNumDim, 4}});
  AddOp(r->mutable_target(), kConv2D, {{0, 0}, {1, 0}}, same);
  MapOutput(r, 2, 0, 2, 0);
  const auto rules = ConvertOrDie(c.SerializeAsString());
  ASSERT_TRUE(rules[0].reason.empty()) << rules[0].reason << ": " << rules[0].detail;
  EXPECT_NE(rules[0].text.find("group=2"), std::string::npos) << rules[0].text;
  EXPECT_NE(rules[0].text.find("dim(in11, 0) == dim(in10, 0)"), std::string::npos) << rules[0].text;
}

TEST(TasoImport, BadInputIsOneClearError) {
  std::string bytes = SmallCollection();
  const std::string truncated = bytes.substr(0, bytes.size() - 3);
  for (const std::string& bad :
       {std::string(), std::string("rule taso_000\n  source\n"), truncated}) {
    auto r = rules::ConvertTasoRules(bad);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("graph_subst.pb"), std::string::npos)
        << r.status().message();
  }
  taso::TasoRuleCollection empty;
  auto none = rules::ConvertTasoRules(std::string(1, '\0') + empty.SerializeAsString());
  EXPECT_FALSE(none.ok());
}

TEST(TasoImport, OpNamesFollowTasosEnumeration) {
  EXPECT_EQ(rules::TasoOpName(3), "conv2d");
  EXPECT_EQ(rules::TasoOpName(18), "matmul");
  EXPECT_EQ(rules::TasoOpName(61), "broadcast_add");
  EXPECT_EQ(rules::TasoOpName(99), "type 99");
}

}  // namespace
}  // namespace rewire

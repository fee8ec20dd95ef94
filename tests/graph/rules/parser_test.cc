#include <gtest/gtest.h>

#include "graph/rules/rule.h"

namespace rewire::rules {
namespace {

const char* kGood = R"(
# a comment
rule fuse_conv_relu
  class fusion
  doc "conv then relu"
  source
    c = Conv2D(x, w; activation="none")
    y = Relu(c)
  target
    z = Conv2D(x, w; *c, activation="relu")
  outputs y -> z
  check x=[1,8,10,10] w=[16,8,3,3]
  check x=[2,4,7,9] w=[4,1,3,3] c.group=4 c.pads=[1,1,1,1]
end
)";

std::string ErrorOf(const std::string& text) {
  auto r = ParseRules(text, "bad.rules");
  return r.ok() ? "" : r.status().message();
}

// Replaces the first occurrence of `from` in the good rule.
std::string Mutate(const std::string& from, const std::string& to) {
  std::string s = kGood;
  const size_t p = s.find(from);
  EXPECT_NE(p, std::string::npos) << from;
  return s.replace(p, from.size(), to);
}

TEST(RuleParser, ParsesAWellFormedRule) {
  auto r = ParseRules(kGood, "good.rules");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 1u);
  const Rule& rule = r->at(0);
  EXPECT_EQ(rule.name, "fuse_conv_relu");
  EXPECT_EQ(rule.rule_class, "fusion");
  EXPECT_EQ(rule.doc, "conv then relu");
  EXPECT_EQ(rule.line, 3);
  EXPECT_EQ(rule.source.size(), 2u);
  EXPECT_EQ(rule.target.size(), 1u);
  EXPECT_EQ(rule.free_vars, (std::vector<std::string>{"x", "w"}));
  EXPECT_EQ(rule.target[0].copy_attrs_from, "c");
  ASSERT_EQ(rule.checks.size(), 2u);
  EXPECT_EQ(rule.checks[1].shapes[1].second, (Shape{4, 1, 3, 3}));
  EXPECT_EQ(rule.checks[1].attrs.size(), 2u);
  EXPECT_EQ(rule.Where(), "good.rules:3");
}

TEST(RuleParser, LinesOfVerticalTabsAndFormFeedsAreBlank) {
  // Found by tests/fuzz/rules_fuzzer.cc: such a line survived trimming but split into no words,
  // and the parser read the first word of an empty list (undefined behaviour).
  for (const char* blank : {"\v", "\f", " \v\f\t\v "}) {
    auto r = ParseRules(Mutate("  source\n", std::string(blank) + "\n  source\n"), "good.rules");
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->size(), 1u);
    EXPECT_EQ((*r)[0].source.size(), 2u);
  }
  EXPECT_TRUE(ParseRules("\v\n\f\n", "blank.rules").ok());
}

TEST(RuleParser, UnknownOpNamesFileAndLine) {
  const std::string e = ErrorOf(Mutate("y = Relu(c)", "y = Frobnicate(c)"));
  EXPECT_NE(e.find("bad.rules:8:"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown op 'Frobnicate'"), std::string::npos) << e;
}

TEST(RuleParser, UnboundVariableInTarget) {
  const std::string e = ErrorOf(Mutate("z = Conv2D(x, w;", "z = Conv2D(x, q;"));
  EXPECT_NE(e.find("bad.rules:10:"), std::string::npos) << e;
  EXPECT_NE(e.find("unbound variable 'q'"), std::string::npos) << e;
}

TEST(RuleParser, UnboundVariableInOutputsAndInterior) {
  EXPECT_NE(ErrorOf(Mutate("outputs y -> z", "outputs y -> nope")).find("unbound variable 'nope'"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf(Mutate("z = Conv2D(x, w;", "z = Conv2D(c, w;")).find("target uses source value 'c'"),
      std::string::npos);
}

TEST(RuleParser, ArityErrors) {
  const std::string e = ErrorOf(Mutate("y = Relu(c)", "y = Relu(c, x)"));
  EXPECT_NE(e.find("bad.rules:8:"), std::string::npos) << e;
  EXPECT_NE(e.find("arity"), std::string::npos) << e;
  EXPECT_NE(ErrorOf(Mutate("y = Relu(c)", "y, y2 = Relu(c)")).find("arity"), std::string::npos);
}

TEST(RuleParser, TypeErrorsInConstantExpressions) {
  const std::string e = ErrorOf(Mutate("activation=\"relu\")", "activation=\"relu\" + 1)"));
  EXPECT_NE(e.find("bad.rules:10:"), std::string::npos) << e;
  EXPECT_NE(e.find("type error"), std::string::npos) << e;
  EXPECT_NE(ErrorOf(Mutate("activation=\"none\"", "activation=dim(x)")).find("type error"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Mutate("activation=\"none\"", "activation=nosuch(x)")).find("unknown function"),
            std::string::npos);
}

TEST(RuleParser, UnknownAttributeListsKnownOnes) {
  const std::string e = ErrorOf(Mutate("activation=\"none\"", "stride=[1,1]"));
  EXPECT_NE(e.find("bad.rules:7:"), std::string::npos) << e;
  EXPECT_NE(e.find("Conv2D has no attribute 'stride'"), std::string::npos) << e;
  EXPECT_NE(e.find("strides"), std::string::npos) << e;
}

TEST(RuleParser, StructuralErrors) {
  EXPECT_NE(ErrorOf(Mutate("end\n", "")).find("missing 'end'"), std::string::npos);
  EXPECT_NE(ErrorOf(Mutate("  check x=[2,4,7,9] w=[4,1,3,3] c.group=4 c.pads=[1,1,1,1]\n", ""))
                .find("at least two 'check' lines"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Mutate("w=[16,8,3,3]", "")).find("no shape for free variable 'w'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Mutate("  outputs y -> z\n", "")).find("no 'outputs'"), std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kGood) + kGood).find("duplicate rule name"), std::string::npos);
  EXPECT_NE(ErrorOf(Mutate("y = Relu(c)", "c = Relu(c)")).find("defined twice"), std::string::npos);
  EXPECT_NE(ErrorOf(Mutate("  target\n", "  target\n    u = Relu(x)\n")).find("never used"),
            std::string::npos);
  EXPECT_NE(ErrorOf("garbage here\n").find("bad.rules:1:"), std::string::npos);
  EXPECT_NE(ErrorOf(Mutate("c.group=4", "q.group=4")).find("not a source node"), std::string::npos);
}

TEST(RuleParser, ForeachExpandsWithSeveralVariables) {
  const std::string text = R"(
foreach ACT,OP in relu,Relu tanh,Tanh
rule fuse_{ACT}
  class fusion
  source
    c = Conv2D(x, w; activation="none")
    y = {OP}(c)
  target
    z = Conv2D(x, w; *c, activation="{ACT}")
  outputs y -> z
  check x=[1,2,5,5] w=[2,2,3,3]
  check x=[1,2,6,6] w=[4,2,1,1]
end
endforeach
)";
  auto r = ParseRules(text, "t.rules");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ(r->at(1).name, "fuse_tanh");
  EXPECT_EQ(r->at(1).source[1].op, OpType::kTanh);
  EXPECT_EQ(r->at(1).line, 3);  // line numbers are those of the file
  EXPECT_NE(ErrorOf("foreach A,B in x\nendforeach\n").find("values for 2 variables"),
            std::string::npos);
  EXPECT_NE(ErrorOf("foreach A in x\n").find("without 'endforeach'"), std::string::npos);
}

TEST(RuleParser, LoadRulesReportsMissingPaths) {
  auto r = LoadRules("/nonexistent/rules");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent/rules"), std::string::npos);
}

TEST(RuleParser, ShippedRulesLoad) {
  auto r = LoadRules(std::string(REWIRE_SOURCE_DIR) + "/configs/rules");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GT(r->size(), 0u);
}

}  // namespace
}  // namespace rewire::rules

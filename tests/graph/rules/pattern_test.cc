#include "graph/rules/pattern.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "graph/rules/matcher.h"
#include "tests/graph/rules/matcher_test_util.h"
#include "tests/graph/test_util.h"

namespace rewire::rules {
namespace {

using testing::ConvNet;
using testing::kFuse;
using testing::ParseOne;

// Two sinks reading one free variable, of different ops.
const char* kTwoSinks = R"(
rule two_sinks
  class merge
  source
    a = Relu(x)
    b = Sigmoid(x)
  where
    rank(x) == 2
  target
    c = Relu(x)
    d = Sigmoid(x)
  outputs a -> c, b -> d
  check x=[2,3]
  check x=[4,3]
end
)";

// ---------------------------------------------------------------------------- literal attributes

ExprPtr Literal(Value v) {
  auto e = std::make_unique<Expr>();
  e->kind = Expr::Kind::kLiteral;
  e->literal = std::move(v);
  return e;
}

ExprPtr Compound(Expr::Kind kind, const std::string& name, std::vector<ExprPtr> args) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->name = name;
  e->args = std::move(args);
  return e;
}

template <typename... E>
std::vector<ExprPtr> Args(E... e) {
  std::vector<ExprPtr> out;
  (out.push_back(std::move(e)), ...);
  return out;
}

ExprPtr Num(int64_t i) { return Literal(Value::Int(i)); }
ExprPtr Num(double d) { return Literal(Value{d}); }

class NoBindings : public EvalContext {
 public:
  const TensorType* TensorTypeOf(const std::string&) const override { return nullptr; }
  const Attrs* NodeAttrs(const std::string&) const override { return nullptr; }
  bool IsWeight(const std::string&) const override { return false; }
};

/// The graph matcher's definition before the compiled pattern: evaluate the constraint on each
/// candidate and compare with ValuesEqual.
bool EvaluatedOnTheCandidate(const AttrValue& have, const AttrSpec& spec) {
  auto want = Eval(*spec.value, NoBindings());
  return want.ok() && ValuesEqual(FromAttr(have), *want);
}

TEST(Pattern, LiteralAttributesCompareAsEvaluatingOnEachCandidateDid) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<AttrValue> have = {AttrValue{int64_t{0}},
                                       AttrValue{int64_t{1}},
                                       AttrValue{int64_t{-1}},
                                       AttrValue{int64_t{3}},
                                       AttrValue{int64_t{1} << 40},
                                       AttrValue{std::numeric_limits<int64_t>::max()},
                                       AttrValue{int64_t{16777217}},
                                       AttrValue{0.0f},
                                       AttrValue{-0.0f},
                                       AttrValue{1.0f},
                                       AttrValue{0.1f},
                                       AttrValue{0.3f},
                                       AttrValue{3.0f},
                                       AttrValue{1e-8f},
                                       AttrValue{1e30f},
                                       AttrValue{inf},
                                       AttrValue{nan},
                                       AttrValue{16777216.0f},
                                       AttrValue{std::string("none")},
                                       AttrValue{std::string()},
                                       AttrValue{Ints{}},
                                       AttrValue{Ints{1, 2}},
                                       AttrValue{Ints{1, 2, 3}},
                                       AttrValue{Floats{}},
                                       AttrValue{Floats{1.0f, 2.0f}},
                                       AttrValue{Floats{0.1f, 0.5f}}};
  std::vector<AttrSpec> specs;
  auto add = [&](ExprPtr e) { specs.push_back({"a", std::move(e)}); };
  add(Num(int64_t{0}));
  add(Num(int64_t{1}));
  add(Num(int64_t{-1}));
  add(Num(int64_t{3}));
  add(Num(int64_t{1} << 40));
  add(Num(std::numeric_limits<int64_t>::max()));
  add(Num(int64_t{16777217}));
  add(Num(0.0));
  add(Num(-0.0));
  add(Num(1.0));
  add(Num(0.1));
  add(Num(0.3));
  add(Compound(Expr::Kind::kBinary, "+", Args(Num(0.1), Num(0.2))));  // 0.30000000000000004
  add(Num(3.0));
  add(Num(1e-8));
  add(Num(1e30));
  add(Num(1e40));                                             // beyond float: inf as an attribute
  add(Compound(Expr::Kind::kCall, "sqrt", Args(Num(-1.0))));  // NaN
  add(Compound(Expr::Kind::kCall, "float", Args(Num(int64_t{3}))));
  add(Literal(Value{std::string("none")}));
  add(Literal(Value{std::string()}));
  add(Literal(Value::Bool(true)));
  add(Compound(Expr::Kind::kList, "", Args()));
  add(Compound(Expr::Kind::kList, "", Args(Num(int64_t{1}), Num(int64_t{2}))));
  add(Compound(Expr::Kind::kList, "", Args(Num(1.0), Num(int64_t{2}))));
  add(Compound(Expr::Kind::kList, "", Args(Num(0.1), Num(0.5))));
  add(Compound(Expr::Kind::kList, "",
               Args(Compound(Expr::Kind::kList, "", Args(Num(int64_t{1}))))));
  add(Compound(Expr::Kind::kBinary, "/", Args(Num(int64_t{1}), Num(int64_t{0}))));  // fails
  add(Compound(Expr::Kind::kCall, "no_such_function", Args()));                     // fails
  size_t equal_same_kind = 0, equal_across_kinds = 0;
  for (const AttrSpec& spec : specs) {
    const LiteralAttr want = CompileLiteralAttr(spec);
    EXPECT_FALSE(LiteralAttrMatches(nullptr, want));
    for (const AttrValue& h : have) {
      const bool expected = EvaluatedOnTheCandidate(h, spec);
      EXPECT_EQ(LiteralAttrMatches(&h, want), expected)
          << FromAttr(h).ToString() << " against " << (want.value ? want.value->ToString() : "?");
      if (expected && want.attr && want.attr->index() == h.index()) ++equal_same_kind;
      if (expected && !(want.attr && want.attr->index() == h.index())) ++equal_across_kinds;
    }
  }
  // Both ways of comparing are exercised on values that are equal.
  EXPECT_GE(equal_same_kind, 15u);
  EXPECT_GE(equal_across_kinds, 10u);

  // Across kinds, numbers compare by value; floats at float precision.
  auto matches = [](const AttrValue& h, ExprPtr e) {
    return LiteralAttrMatches(&h, CompileLiteralAttr({"a", std::move(e)}));
  };
  EXPECT_TRUE(matches(AttrValue{0.1f}, Num(0.1)));
  EXPECT_TRUE(
      matches(AttrValue{0.3f}, Compound(Expr::Kind::kBinary, "+", Args(Num(0.1), Num(0.2)))));
  EXPECT_TRUE(matches(AttrValue{int64_t{3}}, Num(3.0)));
  EXPECT_TRUE(matches(AttrValue{3.0f}, Num(int64_t{3})));
  EXPECT_TRUE(matches(AttrValue{Floats{1.0f, 2.0f}},
                      Compound(Expr::Kind::kList, "", Args(Num(int64_t{1}), Num(int64_t{2})))));
  EXPECT_TRUE(matches(AttrValue{Floats{}}, Compound(Expr::Kind::kList, "", Args())));
  EXPECT_FALSE(matches(AttrValue{nan}, Compound(Expr::Kind::kCall, "sqrt", Args(Num(-1.0)))));
  EXPECT_FALSE(matches(AttrValue{int64_t{1}}, Literal(Value::Bool(true))));
}

// ---------------------------------------------------------------------------- compiling

TEST(Pattern, ParsedRulesAreCompiledOnceAndRulesAssembledInCodeStillMatch) {
  const Rule parsed = ParseOne(kFuse);
  ASSERT_NE(parsed.compiled, nullptr);
  EXPECT_EQ(CompiledPattern(parsed), parsed.compiled);  // no second compile
  const Pattern* compiled = parsed.compiled.get();
  const Rule moved = ParseOne(kFuse);  // moved out of the parsed list
  EXPECT_NE(moved.compiled, nullptr);
  Rule assembled = ParseOne(kFuse);
  assembled.compiled.reset();  // as a rule built in code has none
  EXPECT_NE(CompiledPattern(assembled), nullptr);
  EXPECT_NE(CompiledPattern(assembled).get(), compiled);

  ConvNet net;
  const MatchIndex index(net.g);
  const std::vector<Match> a = FindMatches(net.g, parsed, 0, index);
  const std::vector<Match> b = FindMatches(net.g, assembled, 0, index);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].nodes, b[0].nodes);
  EXPECT_EQ(a[0].free_values, b[0].free_values);
  EXPECT_EQ(a[0].diff_key, b[0].diff_key);
  Graph g2 = net.g;
  EXPECT_TRUE(ApplyMatch(g2, assembled, b[0]).ok());
  EXPECT_EQ(g2.num_nodes(), net.g.num_nodes() - 1);
}

TEST(Pattern, ResolvesNamesUsesAndAttributeConstraints) {
  const Rule rule = ParseOne(kFuse);
  const Pattern& p = *rule.compiled;
  ASSERT_NE(p.Find("x"), nullptr);
  EXPECT_EQ(p.Find("x")->kind, NameRef::Kind::kFree);
  EXPECT_EQ(p.Find("c")->kind, NameRef::Kind::kSource);
  EXPECT_EQ(p.Find("z")->kind, NameRef::Kind::kTarget);
  EXPECT_EQ(p.Find("nothing"), nullptr);
  ASSERT_EQ(p.Inputs(1).size(), 1u);
  EXPECT_EQ(p.Inputs(1)[0].index, 0);  // y reads c
  ASSERT_EQ(p.Uses(0).size(), 1u);
  EXPECT_EQ(p.Uses(0)[0].reader, 1);
  EXPECT_TRUE(p.Uses(1).empty());
  ASSERT_EQ(p.LiteralAttrs(0).size(), 1u);
  EXPECT_EQ(p.LiteralAttrs(0)[0].name, "activation");
  EXPECT_TRUE(p.BoundAttrs(0).empty());
  EXPECT_FALSE(p.Mapped(0, 0));  // c is interior
  EXPECT_TRUE(p.Mapped(1, 0));   // y -> z
  EXPECT_FALSE(p.multi_pattern());
  EXPECT_TRUE(ParseOne(kTwoSinks).compiled->multi_pattern());
}

std::vector<int> Statements(const std::vector<SearchStep>& order) {
  std::vector<int> out;
  for (const SearchStep& s : order) out.push_back(s.stmt);
  return out;
}

TEST(Pattern, SearchOrderReachesStatementsFromBoundOnesAndBreaksTiesByPoolSize) {
  const Rule fuse = ParseOne(kFuse);
  // c first (a tie among unreached statements goes to the first), then y through c's readers.
  EXPECT_EQ(Statements(fuse.compiled->order()), (std::vector<int>{0, 1}));
  EXPECT_EQ(fuse.compiled->order()[1].consumer, -1);
  // Reached through its consumer's operand when the reader comes first.
  const auto relu_first = fuse.compiled->PlanOrder(
      [](OpType op) { return op == OpType::kRelu ? size_t{1} : size_t{100}; });
  EXPECT_EQ(Statements(relu_first), (std::vector<int>{1, 0}));
  EXPECT_EQ(relu_first[1].consumer, 1);
  EXPECT_EQ(relu_first[1].consumer_operand, 0);

  const Rule sinks = ParseOne(kTwoSinks);
  EXPECT_EQ(Statements(sinks.compiled->order()), (std::vector<int>{0, 1}));
  EXPECT_EQ(Statements(sinks.compiled->PlanOrder()), (std::vector<int>{0, 1}));
  const auto fewer_sigmoids = sinks.compiled->PlanOrder(
      [](OpType op) { return op == OpType::kSigmoid ? size_t{3} : size_t{10}; });
  EXPECT_EQ(Statements(fewer_sigmoids), (std::vector<int>{1, 0}));
}

}  // namespace
}  // namespace rewire::rules

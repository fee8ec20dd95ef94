// The generator's filters after verification: rules that match a set of models, and rules that
// the rules in use make redundant.

#include "ruleset/rule_generate_filters.h"

#include <gtest/gtest.h>

namespace rewire {
namespace {

rules::Rule Parse(const std::string& text) {
  auto r = rules::ParseRules(text, "test");
  EXPECT_TRUE(r.ok()) << r.status().message();
  return std::move((*r)[0]);
}

const char* kScaleSoftmax = R"RULE(rule scale_softmax
  class algebraic
  doc "a match in bert's attention (not an equivalence: the filter does not care)"
  source
    a = ScalarMul(x)
    y = Softmax(a)
  where
    y.axis == rank(y) - 1
  target
    b = ScalarMul(x; scalar=a.scalar * 2.0)
    z = Softmax(b; axis=-1)
  outputs y -> z
  check x=[2,3,4] a.scalar=0.5
  check x=[3,4] a.scalar=2.0
end
)RULE";

const char* kReluSigmoid = R"RULE(rule relu_sigmoid
  class algebraic
  doc "no Relu in bert"
  source
    y = Relu(x)
  target
    z = Sigmoid(x)
  outputs y -> z
  check x=[2,3]
  check x=[3]
end
)RULE";

TEST(MatchFilter, KeepsRulesWithAMatchInTheModels) {
  auto graphs = MatchFilterGraphs({"bert"}, {});
  ASSERT_TRUE(graphs.ok()) << graphs.status().message();
  ASSERT_EQ(graphs->size(), 1u);  // no rules: the model alone
  const MatchFilter filter(std::move(graphs).value());
  EXPECT_TRUE(filter.Matches(Parse(kScaleSoftmax)));
  EXPECT_FALSE(filter.Matches(Parse(kReluSigmoid)));
  EXPECT_FALSE(MatchFilterGraphs({"bert", "nosuchmodel"}, {}).ok());
}

const char* kSink = R"RULE(rule relu_transpose_sink
  class layout
  doc "Relu(Transpose(x)) becomes Transpose(Relu(x))"
  source
    t = Transpose(x; perm=[1, 0])
    y = Relu(t)
  target
    r = Relu(x)
    z = Transpose(r; perm=[1, 0])
  outputs y -> z
  check x=[2,3]
  check x=[4,5]
end
)RULE";

const char* kHoist = R"RULE(rule relu_transpose_hoist
  class layout
  doc "Transpose(Relu(x)) becomes Relu(Transpose(x))"
  source
    r = Relu(x)
    y = Transpose(r; perm=[1, 0])
  target
    t = Transpose(x; perm=[1, 0])
    z = Relu(t)
  outputs y -> z
  check x=[2,3]
  check x=[4,5]
end
)RULE";

// A rule joins the pool unless its two sides meet; its reverse then meets through it.
TEST(RedundancyFilter, ARuleMakesItsReverseRedundant) {
  RedundancyFilter none({}, 0);
  EXPECT_FALSE(none.Redundant(Parse(kSink)));
  EXPECT_FALSE(none.Redundant(Parse(kHoist)));  // depth 0: only the two sides themselves
  RedundancyFilter filter({}, 2);
  EXPECT_FALSE(filter.Redundant(Parse(kSink)));
  EXPECT_TRUE(filter.Redundant(Parse(kHoist)));
}

}  // namespace
}  // namespace rewire

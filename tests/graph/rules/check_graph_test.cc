#include "graph/rules/check_graph.h"

#include <gtest/gtest.h>

#include <string>

namespace rewire {
namespace {

const char* kSplitRule = R"(
rule split_twice
  source
    a, b = Split(x)
  target
    p, q = Split(x; *a)
  outputs a -> p, b -> q
  check x=[8,4]
  check x=[8,4] a.axis=1
  check x=[8,4] a.axis=2
  check x=[8,4] a.axis=-3
end
)";

TEST(CheckGraph, AnUnconstrainedSplitIsSplitEvenlyOnItsAxis) {
  auto rules = rules::ParseRules(kSplitRule, "split.rules");
  ASSERT_TRUE(rules.ok()) << rules.status().message();
  const rules::Rule& rule = (*rules)[0];
  for (int c : {0, 1}) {
    auto g = BuildRuleSource(rule, rule.checks[c]);
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_TRUE(g->Validate().ok());
    const Shape half = c == 0 ? Shape{4, 4} : Shape{8, 2};
    EXPECT_EQ(g->type(g->outputs()[0].value).shape, half);
  }
}

TEST(CheckGraph, AnAxisOutOfRangeIsAnErrorNotAnOutOfBoundsRead) {
  // Found by tests/fuzz/rules_fuzzer.cc (AddressSanitizer: heap-buffer-overflow): the even split
  // read the input's dimension at the check line's axis before anything checked the axis.
  auto rules = rules::ParseRules(kSplitRule, "split.rules");
  ASSERT_TRUE(rules.ok()) << rules.status().message();
  const rules::Rule& rule = (*rules)[0];
  for (int c : {2, 3}) {
    auto g = BuildRuleSource(rule, rule.checks[c]);
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(g.status().message().rfind("check line " + std::to_string(rule.checks[c].line) +
                                             ": source statement at line 4 is invalid on these "
                                             "shapes: ",
                                         0),
              0u)
        << g.status().message();
  }
}

}  // namespace
}  // namespace rewire

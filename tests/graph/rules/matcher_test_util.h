#pragma once
// A rule and a graph shared by the matcher tests (graph/rules/ and env/eqsat/).

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/rules/rule.h"
#include "tests/graph/test_util.h"

namespace rewire::testing {

/// Conv2D without activation followed by Relu, fused into one Conv2D.
inline constexpr const char* kFuse = R"(
rule fuse
  class fusion
  source
    c = Conv2D(x, w; activation="none")
    y = Relu(c)
  target
    z = Conv2D(x, w; *c, activation="relu")
  outputs y -> z
  check x=[1,2,5,5] w=[2,2,3,3]
  check x=[1,2,6,6] w=[4,2,1,1]
end
)";

/// The rules of `text` (parsed from "t.rules"); none, with a test failure, when it does not parse.
inline std::vector<rules::Rule> ParseAll(const std::string& text) {
  auto r = rules::ParseRules(text, "t.rules");
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : std::vector<rules::Rule>{};
}

/// The first rule of `text` (throws when there is none).
inline rules::Rule ParseOne(const std::string& text) { return std::move(ParseAll(text).at(0)); }

/// x -> Conv2D(x, w; pads 1) -> Relu -> output y; the Conv2D's value is also an output when
/// `conv_escapes`.
struct ConvNet {
  Graph g;
  NodeId x, w, conv, relu;
  explicit ConvNet(bool conv_escapes = false) {
    x = Must(g.AddInput("x", F32({1, 2, 6, 6})));
    w = Must(g.AddWeight("w", {4, 2, 3, 3}, {}));
    conv = Must(g.AddOp(OpType::kConv2D, {V(x), V(w)}, {{"pads", Ints{1, 1, 1, 1}}}, "conv"));
    relu = Must(g.AddOp(OpType::kRelu, {V(conv)}, {}, "relu"));
    EXPECT_TRUE(g.AddOutput("y", V(relu)).ok());
    if (conv_escapes) {
      EXPECT_TRUE(g.AddOutput("raw", V(conv)).ok());
    }
  }
};

}  // namespace rewire::testing

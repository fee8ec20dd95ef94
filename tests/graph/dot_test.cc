#include <gtest/gtest.h>

#include "graph/graph.h"
#include "tests/graph/test_util.h"

namespace rewire {
namespace {

using testing::F32;
using testing::Must;
using testing::V;

TEST(Dot, ListsEveryNodeEdgeAndOutput) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({1, 3, 8, 8})));
  const NodeId w = Must(g.AddWeight("w\"q", {4, 3, 3, 3}, {}));
  const NodeId c = Must(g.AddOp(OpType::kConv2D, {V(x), V(w)},
                                {{"group", int64_t{1}}, {"activation", std::string("relu")}}));
  ASSERT_TRUE(g.AddOutput("y", V(c)).ok());
  const std::string dot = ToDot(g, "t");
  EXPECT_EQ(dot.rfind("digraph \"t\" {", 0), 0u);
  EXPECT_NE(dot.find("n0 -> n2 [label=\"1x3x8x8\"]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n1 -> n2"), std::string::npos);
  EXPECT_NE(dot.find("Conv2D\\ns1 p0 +relu"), std::string::npos) << dot;
  EXPECT_NE(dot.find("w\\\"q"), std::string::npos);  // quotes escaped
  EXPECT_NE(dot.find("n2 -> out0"), std::string::npos);
  EXPECT_EQ(dot.back(), '\n');
}

}  // namespace
}  // namespace rewire

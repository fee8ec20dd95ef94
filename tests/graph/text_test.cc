#include "graph/text.h"

#include <gtest/gtest.h>

namespace rewire {
namespace {

TEST(Text, EndsWithAndSplit) {
  EXPECT_TRUE(EndsWith("model.onnx", ".onnx"));
  EXPECT_FALSE(EndsWith("onnx", ".onnx"));
  EXPECT_EQ(Split("a,b,,c", ','), (std::vector<std::string>{"a", "b", "", "c"}));
  EXPECT_EQ(Split("", ','), (std::vector<std::string>{""}));
}

TEST(Text, SuggestsTheClosestNameWithinTwoEdits) {
  EXPECT_EQ(EditDistance("learning_rat", "learning_rate"), 1u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(Closest("learning_rat", {"gamma", "learning_rate"}), "learning_rate");
  EXPECT_EQ(Closest("zzzz", {"gamma", "learning_rate"}), "");
  EXPECT_EQ(DidYouMean("x"), " (did you mean 'x'?)");
  EXPECT_EQ(DidYouMean(""), "");
}

}  // namespace
}  // namespace rewire

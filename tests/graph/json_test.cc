#include "graph/json.h"

#include <gtest/gtest.h>

#include <cmath>

namespace rewire {
namespace {

TEST(Json, StringsAreQuotedAndEscaped) {
  EXPECT_EQ(JsonString("bert"), "\"bert\"");
  EXPECT_EQ(JsonString("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(JsonString("x\ny\tz"), "\"x\\ny\\tz\"");
  EXPECT_EQ(JsonString(std::string("\x01", 1)), "\"\\u0001\"");
}

TEST(Json, NumbersKeepTheirPrecisionAndNonFiniteIsNull) {
  EXPECT_EQ(JsonNumber(1.5), "1.5");
  EXPECT_EQ(JsonNumber(1.0 / 3.0), "0.333333333");
  EXPECT_EQ(JsonNumber(1.0 / 3.0, 8), "0.33333333");
  EXPECT_EQ(JsonNumber(std::nan("")), "null");
  EXPECT_EQ(JsonNumber(INFINITY), "null");
}

}  // namespace
}  // namespace rewire

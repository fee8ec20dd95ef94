// One parser for integer environment variables: what it accepts, what it rejects and how the
// error names the variable.

#include "graph/env_var.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace rewire {
namespace {

TEST(ParseIntVariable, UnsetOrEmptyIsTheFallback) {
  EXPECT_EQ(*ParseIntVariable("RANK", nullptr, 7), 7);
  EXPECT_EQ(*ParseIntVariable("RANK", "", 7), 7);
  EXPECT_EQ(*ParseIntVariable("RANK", "  ", -1), -1);
}

TEST(ParseIntVariable, ReadsDecimalIntegers) {
  EXPECT_EQ(*ParseIntVariable("RANK", "0", 7), 0);
  EXPECT_EQ(*ParseIntVariable("RANK", "42", 7), 42);
  EXPECT_EQ(*ParseIntVariable("RANK", "-3", 7), -3);
  EXPECT_EQ(*ParseIntVariable("RANK", " 12\n", 7), 12);
  EXPECT_EQ(*ParseIntVariable("RANK", "9223372036854775807", 7), INT64_MAX);
}

TEST(ParseIntVariable, RejectsGarbageNamingTheVariable) {
  for (const char* bad : {"x", "12x", "1.5", "0x10", "1 2", "+", "--1"}) {
    const StatusOr<int64_t> r = ParseIntVariable("LOCAL_RANK", bad, 0);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(r.status().message(),
              std::string("LOCAL_RANK must be an integer, got '") + bad + "'");
  }
}

TEST(ParseIntVariable, RejectsOverflow) {
  for (const char* big :
       {"9223372036854775808", "-9223372036854775809", "99999999999999999999999"}) {
    const StatusOr<int64_t> r = ParseIntVariable("SLURM_NTASKS", big, 0);
    ASSERT_FALSE(r.ok()) << big;
    EXPECT_NE(r.status().message().find("SLURM_NTASKS is out of range"), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find(big), std::string::npos) << r.status().message();
  }
}

TEST(IntFromEnv, ReadsTheProcessEnvironment) {
  ::unsetenv("REWIRE_TEST_INT");
  EXPECT_EQ(*IntFromEnv("REWIRE_TEST_INT", 5), 5);
  ::setenv("REWIRE_TEST_INT", "17", 1);
  EXPECT_EQ(*IntFromEnv("REWIRE_TEST_INT", 5), 17);
  ::setenv("REWIRE_TEST_INT", "seventeen", 1);
  const StatusOr<int64_t> bad = IntFromEnv("REWIRE_TEST_INT", 5);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "REWIRE_TEST_INT must be an integer, got 'seventeen'");
  ::unsetenv("REWIRE_TEST_INT");
}

}  // namespace
}  // namespace rewire

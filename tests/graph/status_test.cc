// Status and StatusOr: reading the value of a failed StatusOr is a clean abort with the status
// message (in every build type), never a read of an empty value.

#include "graph/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace rewire {
namespace {

StatusOr<std::string> Missing() { return NotFound("no model named 'resnet7'"); }

TEST(StatusOr, HoldsAValueOrAStatus) {
  StatusOr<std::string> ok = std::string("resnet18");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.value(), "resnet18");
  EXPECT_EQ(*ok, "resnet18");
  EXPECT_EQ(ok->size(), 8u);
  const StatusOr<std::string> bad = Missing();
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(bad.status().message(), "no model named 'resnet7'");
}

TEST(StatusOrDeathTest, ValueOfAnErrorAbortsWithTheMessageAndTheCallersLine) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  StatusOr<std::string> bad = Missing();
  EXPECT_DEATH((void)bad.value(),
               "StatusOr::value\\(\\) on an error at .*status_test\\.cc:[0-9]+: NOT_FOUND: no "
               "model named 'resnet7'");
  EXPECT_DEATH((void)std::move(bad).value(),
               "status_test\\.cc:[0-9]+: NOT_FOUND: no model named 'resnet7'");
  const StatusOr<std::string> const_bad = Missing();
  EXPECT_DEATH((void)const_bad.value(), "NOT_FOUND: no model named 'resnet7'");
}

TEST(StatusOrDeathTest, DereferencingAnErrorAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  StatusOr<std::string> bad = DeadlineExceeded("no reply from tcp://127.0.0.1:5555 within 100 ms");
  EXPECT_DEATH((void)*bad,
               "StatusOr::operator\\* on an error: DEADLINE_EXCEEDED: no reply from "
               "tcp://127\\.0\\.0\\.1:5555");
  EXPECT_DEATH((void)bad->size(), "StatusOr::operator-> on an error: DEADLINE_EXCEEDED");
  StatusOr<std::unique_ptr<int>> move_only = Unavailable("peer went away");
  EXPECT_DEATH((void)*move_only, "UNAVAILABLE: peer went away");
}

TEST(StatusCode, EveryCodeHasAName) {
  EXPECT_STREQ(StatusCodeName(StatusCode::kOk), "OK");
  EXPECT_STREQ(StatusCodeName(StatusCode::kDeadlineExceeded), "DEADLINE_EXCEEDED");
  EXPECT_STREQ(StatusCodeName(StatusCode::kUnavailable), "UNAVAILABLE");
  EXPECT_STREQ(StatusCodeName(StatusCode::kInternal), "INTERNAL");
}

}  // namespace
}  // namespace rewire

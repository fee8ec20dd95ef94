// The runtime judge's decision rule, on given figures (the timings themselves are measured by
// the OrtJudge tests through the real binary).

#include "pipeline/runtime_judge.h"

#include <gtest/gtest.h>

namespace rewire {
namespace {

RuntimeVerdict DecideOn(const TimedRuns& input, const TimedRuns& result, double slowdown = 1) {
  RuntimeVerdict v;
  v.runtime = "ort 1.30.0";
  Decide(input, result, 0.01, "the optimised graph", slowdown, v);
  return v;
}

TEST(JudgeDecision, FasterOverallAndInEveryRoundIsWritten) {
  const RuntimeVerdict v =
      DecideOn({{10, 10, 11, 11, 10, 10}, {10, 11, 10}}, {{8, 8, 9, 9, 8, 8}, {8, 9, 8}});
  EXPECT_EQ(v.decision, "optimised");
  EXPECT_DOUBLE_EQ(v.before_ms, 10);
  EXPECT_DOUBLE_EQ(v.after_ms, 8);
  EXPECT_DOUBLE_EQ(v.speedup, 1.25);
  EXPECT_EQ(v.rounds, 3);
  EXPECT_EQ(v.rounds_faster, 3);
  EXPECT_EQ(v.reason, "the optimised graph measures 1.25x faster in ort 1.30.0");
}

TEST(JudgeDecision, FasterOverallButNotInEveryRoundIsNoise) {
  // One round where the result was slower (the machine was busy): the input is kept.
  const RuntimeVerdict v =
      DecideOn({{10, 10, 10, 10, 10, 10}, {10, 10, 10}}, {{8, 8, 8, 8, 12, 12}, {8, 8, 12}});
  EXPECT_EQ(v.decision, "input");
  EXPECT_EQ(v.rounds_faster, 2);
  EXPECT_EQ(v.reason,
            "the optimised graph measures 1.25x faster in ort 1.30.0 overall but in only 2 of 3 "
            "rounds, within the noise: the input is written unchanged");
}

TEST(JudgeDecision, BelowTheMarginIsNotFaster) {
  const RuntimeVerdict v = DecideOn({{10, 10}, {10}}, {{9.95, 9.95}, {9.95}});
  EXPECT_EQ(v.decision, "input");
  EXPECT_EQ(v.rounds_faster, 1);
  EXPECT_NE(v.reason.find("is not measurably faster in ort 1.30.0 (1.005x; at least 1.01x"),
            std::string::npos)
      << v.reason;
}

TEST(JudgeDecision, TheTestSlowdownScalesTheResultInEveryRound) {
  const RuntimeVerdict v = DecideOn({{10, 10}, {10}}, {{4, 4}, {4}}, 2.0);
  EXPECT_EQ(v.decision, "optimised");
  EXPECT_DOUBLE_EQ(v.after_ms, 8);
  const RuntimeVerdict w = DecideOn({{10, 10}, {10}}, {{4, 4}, {4}}, 3.0);
  EXPECT_EQ(w.decision, "input");
  EXPECT_EQ(w.rounds_faster, 0);
}

}  // namespace
}  // namespace rewire

// The runtime judge's decision rule, on given figures (the timings themselves are measured by
// the OrtJudge tests through the real binary), and CompareInRuntime in the reference runtime.

#include "pipeline/runtime_judge.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "graph/models/zoo.h"
#include "graph/onnx/onnx_io.h"

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

/// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

RuntimeJudgeOptions ReferenceTiming() {
  RuntimeJudgeOptions o;
  o.runtime = "reference";
  o.rounds = 3;
  o.warmups = 1;
  o.repeats = 2;
  o.min_round_ms = 0;
  return o;
}

TEST(CompareInRuntime, TimesEveryCandidateAgainstTheInputInTheSameRounds) {
  const Graph input = *BuildModel("squeezenet");
  const std::string bytes = *ExportOnnxBytes(input);
  // The same graph twice; the test hook makes the first one 1000 times slower, so its figures
  // must come from its own timed runs: every round slower than the input's.
  const ScopedEnv slow("REWIRE_TEST_RUNTIME_SLOWDOWN", "1000,1");
  const std::vector<RuntimeCandidate> candidates = {{"slow", &input, bytes},
                                                    {"same", &input, bytes}};
  auto c = CompareInRuntime(input, bytes, candidates, nullptr, ReferenceTiming());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->runtime, "reference");
  EXPECT_EQ(c->rounds, 3);
  EXPECT_EQ(c->repeats, 2);
  EXPECT_GT(c->input_ms, 0);
  ASSERT_EQ(c->candidates.size(), 2u);
  EXPECT_EQ(c->candidates[0].label, "slow");
  EXPECT_EQ(c->candidates[1].label, "same");
  EXPECT_EQ(c->candidates[0].rounds_faster, 0);
  EXPECT_LT(c->candidates[0].speedup, 0.01);
  EXPECT_NEAR(c->candidates[0].speedup, c->input_ms / c->candidates[0].ms, 1e-12);
  // The unslowed copy runs the input's graph: within a factor of 10 of it on any machine.
  EXPECT_GT(c->candidates[1].speedup, 0.1);
  EXPECT_LT(c->candidates[1].speedup, 10);
  EXPECT_EQ(c->candidates[0].max_rel, 0);
}

TEST(CompareInRuntime, RefusesACandidateThatDiffersFromTheModel) {
  const Graph input = *BuildModel("squeezenet");
  ModelParams other_weights;
  other_weights.seed = 99;
  const Graph other = *BuildModel("squeezenet", other_weights);
  const std::vector<RuntimeCandidate> candidates = {
      {"with other weights", &other, *ExportOnnxBytes(other)}};
  auto c = CompareInRuntime(input, *ExportOnnxBytes(input), candidates, nullptr, ReferenceTiming());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("the optimised graph with other weights as exported "
                                      "differs from the model"),
            std::string::npos)
      << c.status().message();
  EXPECT_FALSE(
      CompareInRuntime(input, *ExportOnnxBytes(input), {}, nullptr, ReferenceTiming()).ok());
}

}  // namespace
}  // namespace rewire

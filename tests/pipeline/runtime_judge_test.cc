// The runtime judge's decision rule, on given figures (the timings themselves are measured by
// the OrtJudge tests through the real binary), and CompareInRuntime in the reference runtime.

#include "pipeline/runtime_judge.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <stdexcept>

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

TEST(JudgeDecision, AnIntervalAboveOneIsWritten) {
  // Paired ratios 1.25, 10/9 and 1.25: geometric mean 1.2019, 95% interval [1.015, 1.423].
  const RuntimeVerdict v =
      DecideOn({{10, 10, 11, 11, 10, 10}, {10, 10, 10}}, {{8, 8, 9, 9, 8, 8}, {8, 9, 8}});
  EXPECT_EQ(v.decision, "optimised");
  EXPECT_DOUBLE_EQ(v.before_ms, 10);
  EXPECT_DOUBLE_EQ(v.after_ms, 8);
  EXPECT_NEAR(v.speedup, std::cbrt(1.25 * 1.25 * 10 / 9.0), 1e-12);
  EXPECT_NEAR(v.speedup_lo, 1.0151, 1e-3);
  EXPECT_NEAR(v.speedup_hi, 1.4231, 1e-3);
  EXPECT_EQ(v.rounds, 3);
  EXPECT_EQ(v.rounds_faster, 3);
  EXPECT_EQ(v.reason,
            "the optimised graph measures 1.202x faster in ort 1.30.0 (95% interval [1.015, "
            "1.423] over 3 paired rounds)");
}

TEST(JudgeDecision, AnIntervalReachingOneIsNoise) {
  // One round where the result was slower (the machine was busy): the interval reaches below
  // 1, and the input is kept.
  const RuntimeVerdict v =
      DecideOn({{10, 10, 10, 10, 10, 10}, {10, 10, 10}}, {{8, 8, 8, 8, 12, 12}, {8, 8, 12}});
  EXPECT_EQ(v.decision, "input");
  EXPECT_EQ(v.rounds_faster, 2);
  EXPECT_LT(v.speedup_lo, 1);
  EXPECT_GT(v.speedup_hi, 1);
  EXPECT_NE(v.reason.find("faster in ort 1.30.0 but its 95% interval ["), std::string::npos)
      << v.reason;
  EXPECT_NE(v.reason.find("reaches 1, within the noise: the input is written unchanged"),
            std::string::npos)
      << v.reason;
}

TEST(JudgeDecision, EveryRoundFasterByAFewPercentIsWrittenWhenTheRoundsAgree) {
  // 3% faster in each of 6 rounds with under 1% spread: no round alone is decisive, the pairs
  // together are.
  const RuntimeVerdict v =
      DecideOn({{}, {10, 10.2, 9.9, 10.1, 10, 10.3}}, {{}, {9.7, 9.9, 9.62, 9.8, 9.69, 10.01}});
  EXPECT_EQ(v.decision, "optimised") << v.reason;
  EXPECT_GT(v.speedup_lo, 1.02);
  EXPECT_LT(v.speedup_hi, 1.04);
}

TEST(JudgeDecision, OneRoundGivesNoInterval) {
  const RuntimeVerdict v = DecideOn({{10, 10}, {10}}, {{8, 8}, {8}});
  EXPECT_EQ(v.decision, "input");
  EXPECT_DOUBLE_EQ(v.speedup, 1.25);
  EXPECT_NE(v.reason.find("in one round, which gives no interval"), std::string::npos) << v.reason;
}

TEST(JudgeDecision, BelowTheMarginIsNotFaster) {
  const RuntimeVerdict v = DecideOn({{10, 10}, {10, 10}}, {{9.95, 9.95}, {9.95, 9.95}});
  EXPECT_EQ(v.decision, "input");
  EXPECT_EQ(v.rounds_faster, 2);
  EXPECT_NE(v.reason.find("is not measurably faster in ort 1.30.0 (1.005x; at least 1.01x"),
            std::string::npos)
      << v.reason;
}

TEST(JudgeDecision, TheTestSlowdownScalesTheResultInEveryRound) {
  const RuntimeVerdict v = DecideOn({{10, 10}, {10, 10.5}}, {{4, 4}, {4, 4.1}}, 2.0);
  EXPECT_EQ(v.decision, "optimised") << v.reason;
  EXPECT_DOUBLE_EQ(v.after_ms, 8);
  const RuntimeVerdict w = DecideOn({{10, 10}, {10, 10.5}}, {{4, 4}, {4, 4.1}}, 3.0);
  EXPECT_EQ(w.decision, "input");
  EXPECT_EQ(w.rounds_faster, 0);
}

TEST(PairedSpeedup, IsTheGeometricMeanOfTheRoundsRatiosWithStudentsInterval) {
  // log ratios ln 2, ln 2, ln 2: no spread, a point interval.
  PairedSpeedup p = PairRounds({2, 4, 6}, {1, 2, 3});
  EXPECT_EQ(p.rounds, 3);
  EXPECT_NEAR(p.speedup, 2, 1e-12);
  EXPECT_NEAR(p.lo, 2, 1e-12);
  EXPECT_NEAR(p.hi, 2, 1e-12);
  EXPECT_TRUE(p.Faster());
  EXPECT_EQ(p.Text(), "2.000x [2.000, 2.000]");
  // Ratios 1.1 and 1/1.1: mean log 0, sd ln(1.1) * sqrt 2, se ln 1.1, t(1) = 12.706.
  p = PairRounds({11, 10}, {10, 11});
  EXPECT_NEAR(p.speedup, 1, 1e-12);
  EXPECT_NEAR(std::log(p.hi), 12.706 * std::log(1.1), 1e-9);
  EXPECT_NEAR(std::log(p.lo), -12.706 * std::log(1.1), 1e-9);
  EXPECT_FALSE(p.Faster());
  EXPECT_FALSE(p.Slower());
  // The same spread over more rounds narrows the interval.
  const PairedSpeedup wide = PairRounds({11, 10, 11, 10}, {10, 11, 10, 11});
  const PairedSpeedup narrow =
      PairRounds({11, 10, 11, 10, 11, 10, 11, 10}, {10, 11, 10, 11, 10, 11, 10, 11});
  EXPECT_LT(narrow.hi, wide.hi);
  EXPECT_LT(wide.hi, p.hi);
  // A slower graph, a skipped round, and one round without an interval.
  EXPECT_TRUE(PairRounds({1, 1, 1}, {2, 2.1, 1.9}).Slower());
  EXPECT_EQ(PairRounds({1, 0, 1}, {2, 2, 2}).rounds, 2);
  const PairedSpeedup one = PairRounds({3}, {2});
  EXPECT_DOUBLE_EQ(one.speedup, 1.5);
  EXPECT_FALSE(one.Faster());
  EXPECT_TRUE(std::isinf(one.hi));
}

TEST(PairedSpeedup, StudentsQuantilesAreTheTablesAndNarrowToTheNormal) {
  EXPECT_DOUBLE_EQ(StudentT(1, 0.95), 12.706);
  EXPECT_DOUBLE_EQ(StudentT(9, 0.95), 2.262);
  EXPECT_DOUBLE_EQ(StudentT(4, 0.99), 4.604);
  EXPECT_NEAR(StudentT(40, 0.95), 2.021, 1e-9);
  EXPECT_GT(StudentT(35, 0.95), 2.021);
  EXPECT_LT(StudentT(35, 0.95), 2.042);
  EXPECT_NEAR(StudentT(1000000, 0.9), 1.645, 1e-3);
  EXPECT_THROW(StudentT(3, 0.5), std::invalid_argument);
  EXPECT_THROW(StudentT(0, 0.95), std::invalid_argument);
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
  // The speedup pairs the rounds: each round's input median over the candidate's.
  ASSERT_EQ(c->candidates[0].round_ms.size(), 3u);
  EXPECT_NEAR(c->candidates[0].speedup,
              PairRounds(c->input_round_ms, c->candidates[0].round_ms).speedup, 1e-12);
  // Ranked slower: the whole interval below 1, the estimate inside it.
  EXPECT_LT(c->candidates[0].speedup_hi, 1);
  EXPECT_LE(c->candidates[0].speedup_lo, c->candidates[0].speedup);
  EXPECT_GE(c->candidates[0].speedup_hi, c->candidates[0].speedup);
  // The unslowed copy runs the input's graph: within a factor of 10 of it on any machine.
  EXPECT_GT(c->candidates[1].speedup, 0.1);
  EXPECT_LT(c->candidates[1].speedup, 10);
  EXPECT_EQ(c->candidates[0].max_rel, 0);
}

TEST(PairedInOrt, ASlowedCopyIsRankedSlowerWithItsRatioInsideTheInterval) {
  if (!OrtInstalled())
    GTEST_SKIP() << "ONNX Runtime is not installed in tools/ort (run scripts/install-deps.sh)";
  const Graph input = *BuildModel("squeezenet");
  const std::string bytes = *ExportOnnxBytes(input);
  // The input, its copy slowed by the test hook (every time x 2), and a plain copy, timed in
  // ONNX Runtime in the same 8 rounds. The factor is far outside what a loaded machine's noise
  // does to one round (a CI machine's rounds of one graph spread by up to 30%), so the test
  // checks the pairing and its interval, not the machine.
  const ScopedEnv slow("REWIRE_TEST_RUNTIME_SLOWDOWN", "2,1");
  const std::vector<RuntimeCandidate> candidates = {{"slowed", &input, bytes},
                                                    {"copy", &input, bytes}};
  RuntimeJudgeOptions o;
  o.runtime = "ort";
  o.threads = 1;
  o.rounds = 8;
  o.warmups = 2;
  o.repeats = 5;
  o.min_round_ms = 40;
  auto ort = StartRuntime(o);
  ASSERT_TRUE(ort.ok()) << ort.status().message();
  auto c = CompareInRuntime(input, bytes, candidates, ort->get(), o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->candidates.size(), 2u);
  EXPECT_EQ(c->input_round_ms.size(), 8u);
  const CandidateTiming& slowed = c->candidates[0];
  const CandidateTiming& copy = c->candidates[1];
  ASSERT_EQ(slowed.round_ms.size(), 8u);
  // Ranked slower: the whole interval below 1, the estimate inside it, and near 1 / 2 (the copy
  // runs the same graph, so only the machine's noise separates them).
  EXPECT_LT(slowed.speedup_hi, 1) << slowed.speedup << " [" << slowed.speedup_lo << ", "
                                  << slowed.speedup_hi << "]";
  EXPECT_LE(slowed.speedup_lo, slowed.speedup);
  EXPECT_GE(slowed.speedup_hi, slowed.speedup);
  EXPECT_NEAR(slowed.speedup, 0.5, 0.15);
  EXPECT_GT(copy.speedup, 0.75);
  EXPECT_LT(copy.speedup, 1.33);
  // The two candidates paired with each other in the same rounds: the copy over the slowed one.
  const PairedSpeedup h2h = PairRounds(slowed.round_ms, copy.round_ms);
  EXPECT_TRUE(h2h.Faster()) << h2h.Text();
  EXPECT_NEAR(h2h.speedup, 2, 0.6) << h2h.Text();
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

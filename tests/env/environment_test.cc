#include "env/environment.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "cost/cost_registry.h"
#include "graph/models/zoo.h"
#include "ruleset/rule_verify.h"
#include "tests/ruleset/shipped_rules.h"

namespace rewire {
namespace {

Graph Bert2() {
  ModelParams p;
  p.layers = 2;
  p.hidden = 128;
  p.heads = 4;
  p.seq_len = 16;
  return *BuildModel("bert", p);
}

/// Greedy: the cheapest candidate if it improves on `current_ms`, else No-Op.
size_t BestAction(const Observation& o, double current_ms) {
  size_t best = o.noop_action();
  double best_cost = current_ms;
  for (size_t i = 0; i < o.candidates->size(); ++i) {
    if ((*o.candidates)[i].cost_ms < best_cost) {
      best_cost = (*o.candidates)[i].cost_ms;
      best = i;
    }
  }
  return best;
}

TEST(Environment, ObservationOffersCandidatesAsDiffsPlusNoOp) {
  auto cost = testing::AnalyticCost();
  Environment env(testing::VerifiedShippedRules(), *cost);
  auto obs = env.Reset(Bert2());
  ASSERT_TRUE(obs.ok()) << obs.status().message();
  ASSERT_GT(obs->candidates->size(), 0u);
  EXPECT_EQ(obs->num_actions(), obs->candidates->size() + 1);
  EXPECT_EQ(obs->noop_action(), obs->candidates->size());
  for (uint8_t m : obs->action_mask) EXPECT_EQ(m, 1);
  for (const EnvCandidate& c : *obs->candidates) {
    EXPECT_FALSE(c.diff.empty());
    auto full = GraphCostMs(*cost, c.result);
    ASSERT_TRUE(full.ok());
    EXPECT_NEAR(c.cost_ms, *full, 1e-9);  // the diff-based cost is exact
  }
}

TEST(Environment, RewardsTelescopeToTheRelativeImprovement) {
  auto cost = testing::AnalyticCost();
  Environment env(testing::VerifiedShippedRules(), *cost);
  auto obs = env.Reset(Bert2());
  ASSERT_TRUE(obs.ok());
  double total = 0;
  int steps = 0;
  bool done = false;
  Observation o = *obs;
  while (!done && steps < 50) {
    auto r = env.Step(BestAction(o, env.cost_ms()));
    ASSERT_TRUE(r.ok()) << r.status().message();
    total += r->reward;
    done = r->done;
    o = r->observation;
    ++steps;
  }
  EXPECT_TRUE(done);
  EXPECT_NEAR(total, 100.0 * (env.initial_cost_ms() - env.cost_ms()) / env.initial_cost_ms(), 1e-9);
  EXPECT_GT(total, 0.0);
  EXPECT_TRUE(env.graph().Validate().ok());
}

TEST(Environment, NoOpEndsTheEpisodeAndHorizonStopsIt) {
  auto cost = testing::AnalyticCost();
  EnvOptions opts;
  opts.horizon = 3;
  Environment env(testing::VerifiedShippedRules(), *cost, opts);
  auto obs = env.Reset(Bert2());
  ASSERT_TRUE(obs.ok());
  auto stop = env.Step(obs->noop_action());
  ASSERT_TRUE(stop.ok());
  EXPECT_TRUE(stop->done);
  EXPECT_EQ(stop->reward, 0.0);
  EXPECT_FALSE(env.Step(0).ok());  // the episode is over

  obs = env.Reset(Bert2());
  ASSERT_TRUE(obs.ok());
  EXPECT_FALSE(env.Step(obs->num_actions()).ok());  // out of range
  bool done = false;
  for (int i = 0; i < 3; ++i) {
    auto r = env.Step(0);
    ASSERT_TRUE(r.ok()) << r.status().message();
    done = r->done;
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(env.steps(), 3);
}

TEST(Environment, SameActionsGiveTheSameEpisode) {
  auto cost = testing::AnalyticCost();
  Environment a(testing::VerifiedShippedRules(), *cost), b(testing::VerifiedShippedRules(), *cost);
  auto oa = a.Reset(Bert2());
  auto ob = b.Reset(Bert2());
  ASSERT_TRUE(oa.ok() && ob.ok());
  for (int i = 0; i < 4; ++i) {
    auto ra = a.Step(i % 3);
    auto rb = b.Step(i % 3);
    ASSERT_TRUE(ra.ok() && rb.ok());
    EXPECT_EQ(ra->rule, rb->rule);
    EXPECT_EQ(ra->reward, rb->reward);
    EXPECT_EQ(a.graph().Hash(), b.graph().Hash());
  }
}

// The sparse measured reward (X-RLflow's second mode): every step but the last gets 0, the last
// 100 * (M_0 - M_T) / M_0 from the measured runtimes; the input is measured once. A stand-in
// "measurement" (a millisecond per operator) makes the figures exact.
TEST(Environment, TheSparseRewardIsPaidOnceFromTheMeasuredRuntimes) {
  auto cost = testing::AnalyticCost();
  int measured = 0;
  EnvOptions o;
  o.horizon = 3;
  o.reward = RewardMode::kSparseMeasured;
  o.measure = [&measured](const Graph& g) -> StatusOr<double> {
    ++measured;
    return static_cast<double>(g.NumOperators());
  };
  Environment env(testing::VerifiedShippedRules(), *cost, o);
  const Graph input = Bert2();
  for (int episode = 0; episode < 2; ++episode) {
    auto obs = env.Reset(input);
    ASSERT_TRUE(obs.ok()) << obs.status().message();
    double total = 0;
    StepResult last;
    while (!env.done()) {
      auto r = env.Step(0);  // the first candidate each step, whatever it costs
      ASSERT_TRUE(r.ok()) << r.status().message();
      if (!r->done) {
        EXPECT_EQ(r->reward, 0);
      }
      total += r->reward;
      last = *r;
    }
    const double m0 = input.NumOperators(), mt = env.graph().NumOperators();
    EXPECT_DOUBLE_EQ(last.measured_initial_ms, m0);
    EXPECT_DOUBLE_EQ(last.measured_final_ms, mt);
    EXPECT_DOUBLE_EQ(total, 100.0 * (m0 - mt) / m0);
  }
  EXPECT_EQ(measured, 3) << "the input once, each final graph once";

  // Replaying (a learner rebuilding observations) measures nothing: the last reward is NaN.
  env.set_measuring(false);
  ASSERT_TRUE(env.Reset(input).ok());
  StepResult r;
  while (!env.done()) r = *env.Step(0);
  EXPECT_TRUE(std::isnan(r.reward));
  EXPECT_EQ(measured, 3);

  // Without a way to measure, the mode is refused; ResetAt cannot know the episode's input.
  EnvOptions none;
  none.reward = RewardMode::kSparseMeasured;
  Environment blind(testing::VerifiedShippedRules(), *cost, none);
  EXPECT_FALSE(blind.Reset(input).ok());
  EXPECT_FALSE(env.ResetAt(input, 1.0, 0).ok());
}

// A final graph whose measurement crashed or hung (the e2e model's "unmeasurable: ..." error):
// the episode still ends, with a last reward of 0 and the flag; the graph is excluded, so the
// next episode offers no candidate leading to it, and it is counted.
TEST(Environment, AnUnmeasurableFinalGraphEndsTheEpisodeWithNoRewardAndIsExcluded) {
  auto cost = testing::AnalyticCost();
  const Graph input = Bert2();
  const uint64_t input_hash = input.Hash();
  EnvOptions o;
  o.horizon = 1;
  o.reward = RewardMode::kSparseMeasured;
  o.measure = [input_hash](const Graph& g) -> StatusOr<double> {
    if (g.Hash() == input_hash) return static_cast<double>(g.NumOperators());
    return Unmeasurable("the measurement was killed by signal 6 (SIGABRT)");
  };
  Environment env(testing::VerifiedShippedRules(), *cost, o);
  auto obs = env.Reset(input);
  ASSERT_TRUE(obs.ok()) << obs.status().message();
  const size_t offered = obs->candidates->size();
  ASSERT_GT(offered, 1u);
  const uint64_t bad = (*obs->candidates)[0].result.Hash();
  auto r = env.Step(0);  // the horizon: the episode ends on that graph
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->done);
  EXPECT_TRUE(r->unmeasurable);
  EXPECT_EQ(r->reward, 0);
  EXPECT_EQ(r->measured_final_ms, 0);
  EXPECT_DOUBLE_EQ(r->measured_initial_ms, input.NumOperators());
  ASSERT_EQ(env.excluded().size(), 1u);
  EXPECT_EQ(env.excluded().begin()->first, bad);
  EXPECT_NE(env.excluded().begin()->second.find("SIGABRT"), std::string::npos);
  EXPECT_EQ(env.timings().unmeasurable, 1);
  EXPECT_EQ(env.timings().dropped_candidates, 0);

  // The next episode: every candidate but the one leading to the excluded graph.
  obs = env.Reset(input);
  ASSERT_TRUE(obs.ok()) << obs.status().message();
  EXPECT_EQ(obs->candidates->size(), offered - 1);
  for (const EnvCandidate& c : *obs->candidates) EXPECT_NE(c.result.Hash(), bad);
  EXPECT_EQ(env.timings().dropped_candidates, 1);
  EXPECT_EQ(env.timings().unmeasurable, 1);
  // A measurable final graph is rewarded as before.
  r = env.Step(0);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->unmeasurable);  // this stand-in measures only the input
  EXPECT_EQ(env.excluded().size(), 2u);
}

// An input that cannot be measured cannot be played: Reset says so. Other measurement errors of
// the final graph still fail the step.
TEST(Environment, AnUnmeasurableInputFailsResetAndOtherErrorsStillFail) {
  auto cost = testing::AnalyticCost();
  EnvOptions o;
  o.horizon = 1;
  o.reward = RewardMode::kSparseMeasured;
  o.measure = [](const Graph&) -> StatusOr<double> { return Unmeasurable("no result within 1 s"); };
  Environment env(testing::VerifiedShippedRules(), *cost, o);
  auto obs = env.Reset(Bert2());
  ASSERT_FALSE(obs.ok());
  EXPECT_TRUE(IsUnmeasurable(obs.status())) << obs.status().message();

  const Graph input = Bert2();
  const uint64_t input_hash = input.Hash();
  o.measure = [input_hash](const Graph& g) -> StatusOr<double> {
    if (g.Hash() == input_hash) return 1.0;
    return InvalidArgument("cannot run it");
  };
  Environment strict(testing::VerifiedShippedRules(), *cost, o);
  ASSERT_TRUE(strict.Reset(input).ok());
  auto r = strict.Step(0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(strict.excluded().empty());
}

/// A whole-graph model (as e2e:*) over the analytic one, to which the graphs of `bad` are
/// unmeasurable (or fail with `code` when it is not kUnavailable).
class FlakyWholeGraphModel : public CostModel {
 public:
  FlakyWholeGraphModel(CostModel& inner, std::set<uint64_t> bad, StatusCode code)
      : inner_(inner), bad_(std::move(bad)), code_(code) {}
  std::string Name() const override { return "flaky"; }
  bool additive() const override { return false; }
  StatusOr<double> GraphCostMs(const Graph& graph) override {
    if (!bad_.count(graph.Hash())) return inner_.GraphCostMs(graph);
    if (code_ == StatusCode::kUnavailable) return Unmeasurable("it hung");
    return Status(code_, "cannot cost it");
  }

 private:
  CostModel& inner_;
  std::set<uint64_t> bad_;
  StatusCode code_;
};

// With a whole-graph env.cost, a candidate whose costing crashed or hung is dropped (and its
// graph excluded); any other costing error still fails.
TEST(Environment, AnUnmeasurableCandidateIsDroppedUnderAWholeGraphModel) {
  auto analytic = testing::AnalyticCost();
  const Graph input = Bert2();
  Environment plain(testing::VerifiedShippedRules(), *analytic);
  auto obs = plain.Reset(input);
  ASSERT_TRUE(obs.ok()) << obs.status().message();
  const size_t offered = obs->candidates->size();
  ASSERT_GT(offered, 1u);
  const uint64_t bad = (*obs->candidates)[0].result.Hash();

  FlakyWholeGraphModel flaky(*analytic, {bad}, StatusCode::kUnavailable);
  Environment env(testing::VerifiedShippedRules(), flaky);
  obs = env.Reset(input);
  ASSERT_TRUE(obs.ok()) << obs.status().message();
  EXPECT_EQ(obs->candidates->size(), offered - 1);
  for (const EnvCandidate& c : *obs->candidates) EXPECT_NE(c.result.Hash(), bad);
  ASSERT_EQ(env.excluded().size(), 1u);
  EXPECT_EQ(env.excluded().begin()->first, bad);
  EXPECT_EQ(env.timings().unmeasurable, 1);
  EXPECT_EQ(env.timings().dropped_candidates, 1);

  FlakyWholeGraphModel broken(*analytic, {bad}, StatusCode::kInvalidArgument);
  Environment failing(testing::VerifiedShippedRules(), broken);
  auto failed = failing.Reset(input);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rewire

#include "env/environment.h"

#include <gtest/gtest.h>

#include <cmath>

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
      if (!r->done) EXPECT_EQ(r->reward, 0);
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

}  // namespace
}  // namespace rewire

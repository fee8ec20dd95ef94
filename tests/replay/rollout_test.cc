#include "replay/rollout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

namespace rewire {
namespace {

/// GAE written from its definition: A_t = sum_k (gamma*lambda)^k delta_{t+k}, stopping after the
/// step that ends the episode; delta_t = r_t + gamma V_{t+1} (0 past an end) - V_t.
std::vector<double> ReferenceGae(const std::vector<float>& r, const std::vector<float>& v,
                                 const std::vector<uint8_t>& done, float last_value, double gamma,
                                 double lambda) {
  const size_t n = r.size();
  auto delta = [&](size_t t) {
    const double next = done[t] ? 0.0 : (t + 1 < n ? v[t + 1] : last_value);
    return r[t] + gamma * next - v[t];
  };
  std::vector<double> a(n);
  for (size_t t = 0; t < n; ++t) {
    double sum = 0, w = 1;
    for (size_t k = t; k < n; ++k) {
      sum += w * delta(k);
      if (done[k]) break;
      w *= gamma * lambda;
    }
    a[t] = sum;
  }
  return a;
}

TEST(Gae, MatchesTheDefinitionOnRandomEpisodes) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(-2, 2);
  for (int trial = 0; trial < 50; ++trial) {
    const size_t n = 1 + rng() % 40;
    std::vector<float> r(n), v(n);
    std::vector<uint8_t> d(n);
    for (size_t i = 0; i < n; ++i) {
      r[i] = u(rng);
      v[i] = u(rng);
      d[i] = rng() % 5 == 0;
    }
    const float last = u(rng);
    const double gamma = 0.9 + 0.1 * (trial % 3) / 2.0, lambda = 0.5 + 0.25 * (trial % 3);
    std::vector<float> adv, ret;
    ComputeGae(r, v, d, last, gamma, lambda, &adv, &ret);
    const std::vector<double> ref = ReferenceGae(r, v, d, last, gamma, lambda);
    ASSERT_EQ(adv.size(), n);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_NEAR(adv[i], ref[i], 1e-4) << "trial " << trial << " step " << i;
      EXPECT_NEAR(ret[i], ref[i] + v[i], 1e-4);
    }
  }
}

TEST(Gae, LambdaOneIsTheDiscountedReturnMinusValue) {
  const std::vector<float> r{1, 2, 3}, v{0.5f, 0.25f, 4};
  const std::vector<uint8_t> d{0, 0, 1};
  std::vector<float> adv, ret;
  ComputeGae(r, v, d, 100.0f, 0.5, 1.0, &adv, &ret);
  // Returns: G2 = 3, G1 = 2 + 0.5*3 = 3.5, G0 = 1 + 0.5*3.5 = 2.75 (the last value is ignored:
  // done).
  EXPECT_NEAR(ret[2], 3.0, 1e-6);
  EXPECT_NEAR(ret[1], 3.5, 1e-6);
  EXPECT_NEAR(ret[0], 2.75, 1e-6);
  EXPECT_NEAR(adv[0], 2.25, 1e-6);
}

Episode MakeEpisode(int steps, float reward) {
  Episode e;
  for (int i = 0; i < steps; ++i) {
    RolloutStep s;
    s.reward = reward;
    s.value = 0;
    s.action = i;
    e.steps.push_back(std::move(s));
  }
  return e;
}

TEST(RolloutBuffer, EpisodesAreNotBootstrappedIntoEachOther) {
  RolloutBuffer b;
  b.Add(MakeEpisode(3, 1.0f));
  b.Add(MakeEpisode(2, 10.0f));
  ASSERT_EQ(b.num_steps(), 5u);
  b.ComputeAdvantages(1.0, 1.0);
  // Undiscounted returns restart at each episode even though no step was flagged done.
  EXPECT_FLOAT_EQ(b.returns()[0], 3.0f);
  EXPECT_FLOAT_EQ(b.returns()[2], 1.0f);
  EXPECT_FLOAT_EQ(b.returns()[3], 20.0f);
  EXPECT_FLOAT_EQ(b.returns()[4], 10.0f);
  EXPECT_EQ(b.step(3).action, 0);
  EXPECT_DOUBLE_EQ(b.episodes()[1].episodic_return(), 20.0);
}

TEST(RolloutBuffer, MinibatchesCoverEveryStepOnce) {
  RolloutBuffer b;
  b.Add(MakeEpisode(7, 0));
  b.Add(MakeEpisode(6, 0));
  std::mt19937_64 rng(1);
  const auto mbs = b.Minibatches(4, rng);
  ASSERT_EQ(mbs.size(), 4u);
  EXPECT_EQ(mbs.back().size(), 1u);
  std::multiset<size_t> seen;
  for (const auto& mb : mbs) seen.insert(mb.begin(), mb.end());
  EXPECT_EQ(seen.size(), 13u);
  for (size_t i = 0; i < 13; ++i) EXPECT_EQ(seen.count(i), 1u);
}

}  // namespace
}  // namespace rewire

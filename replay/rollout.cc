#include "replay/rollout.h"

#include <cmath>

#include <algorithm>
#include <numeric>

#include "graph/status.h"

namespace rewire {

double Episode::episodic_return() const {
  double r = 0;
  for (const RolloutStep& s : steps) r += s.reward;
  return r;
}

void ComputeGae(const std::vector<float>& rewards, const std::vector<float>& values,
                const std::vector<uint8_t>& dones, float last_value, double gamma, double lambda,
                std::vector<float>* advantages, std::vector<float>* returns) {
  const size_t n = rewards.size();
  REWIRE_CHECK(values.size() == n && dones.size() == n);
  advantages->assign(n, 0.0f);
  returns->assign(n, 0.0f);
  double last_gae = 0;
  for (size_t k = n; k-- > 0;) {
    const double next_nonterminal = dones[k] ? 0.0 : 1.0;
    const double next_value = k + 1 < n ? values[k + 1] : last_value;
    const double delta = rewards[k] + gamma * next_value * next_nonterminal - values[k];
    last_gae = delta + gamma * lambda * next_nonterminal * last_gae;
    (*advantages)[k] = static_cast<float>(last_gae);
    (*returns)[k] = static_cast<float>(last_gae + values[k]);
  }
}

void RolloutBuffer::Add(Episode episode) {
  const size_t e = episodes_.size();
  for (size_t i = 0; i < episode.steps.size(); ++i) steps_.emplace_back(e, i);
  episodes_.push_back(std::move(episode));
  advantages_.clear();
  returns_.clear();
}

void RolloutBuffer::Clear() {
  episodes_.clear();
  steps_.clear();
  advantages_.clear();
  returns_.clear();
}

const RolloutStep& RolloutBuffer::step(size_t i) const {
  const auto [e, s] = steps_.at(i);
  return episodes_[e].steps[s];
}

void RolloutBuffer::ComputeAdvantages(double gamma, double lambda) {
  std::vector<float> rewards, values;
  std::vector<uint8_t> dones;
  rewards.reserve(steps_.size());
  values.reserve(steps_.size());
  dones.reserve(steps_.size());
  for (const Episode& e : episodes_) {
    for (size_t i = 0; i < e.steps.size(); ++i) {
      rewards.push_back(e.steps[i].reward);
      values.push_back(e.steps[i].value);
      // Every stored episode is finished: its last step ends it whatever the flag says.
      dones.push_back(e.steps[i].done || i + 1 == e.steps.size());
    }
  }
  ComputeGae(rewards, values, dones, 0.0f, gamma, lambda, &advantages_, &returns_);
}

std::vector<std::vector<size_t>> RolloutBuffer::Minibatches(size_t size,
                                                            std::mt19937_64& rng) const {
  REWIRE_CHECK(size > 0);
  std::vector<size_t> order(steps_.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::vector<size_t>> out;
  for (size_t i = 0; i < order.size(); i += size) {
    out.emplace_back(order.begin() + i, order.begin() + std::min(order.size(), i + size));
  }
  return out;
}

size_t RolloutBuffer::bytes() const {
  size_t b = 0;
  for (const Episode& e : episodes_) {
    for (const RolloutStep& s : e.steps) b += s.observation.bytes();
  }
  return b;
}

double MeanOf(const std::vector<double>& v) {
  if (v.empty()) return std::nan("");
  double s = 0;
  for (double x : v) s += x;
  return s / v.size();
}

}  // namespace rewire

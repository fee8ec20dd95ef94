#include "learner/world_model.h"

#include <cmath>
#include <limits>

namespace rewire {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kActionScale = 0.25f;  // a rewrite touches a handful of nodes

double MeanOr(double sum, int64_t n) {
  return n > 0 ? sum / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

WorldModelImpl::WorldModelImpl(GnnShape shape) : shape_(shape) {
  const int64_t d = shape.hidden;
  encoder_ = register_module("encoder", GnnPolicy(shape));
  potential_ = register_module(
      "potential",
      torch::nn::Sequential(torch::nn::Linear(d + 1, d), torch::nn::Tanh(), torch::nn::Linear(d, d),
                            torch::nn::Tanh(), torch::nn::Linear(d, 1)));
  prior_ = register_parameter("prior", torch::ones({1}));
  dynamics_ = register_module("dynamics",
                              torch::nn::Sequential(torch::nn::Linear(d + kActionFeatures, d),
                                                    torch::nn::Tanh(), torch::nn::Linear(d, d)));
}

torch::Device WorldModelImpl::device() const { return encoder_->device(); }

TransitionLatents WorldModelImpl::Encode(
    const std::vector<const ObservationFeatures*>& observations,
    const std::vector<int32_t>& actions) {
  const size_t n = observations.size();
  // Each state with its chosen candidate only: the successor is encoded from that region.
  std::vector<ObservationFeatures> reduced(n);
  std::vector<const ObservationFeatures*> ptrs(n);
  std::vector<float> cost(n), cost_next(n), moved(n, 0.0f), action(n * kActionFeatures, 0.0f);
  std::vector<int64_t> rows;
  for (size_t i = 0; i < n; ++i) {
    const ObservationFeatures& o = *observations[i];
    ObservationFeatures& r = reduced[i];
    r.shapes = o.shapes;
    r.nodes = o.nodes;
    r.messages = o.messages;
    r.step_fraction = o.step_fraction;
    double pct = 0;
    for (const NodeRecord& node : o.nodes) pct += node.cost_pct;
    cost[i] = static_cast<float>(pct / 100.0);
    cost_next[i] = cost[i];
    const int32_t a = actions[i];
    if (a >= 0 && a < static_cast<int32_t>(o.candidates.size())) {
      const CandidateFeatures& cand = o.candidates[static_cast<size_t>(a)];
      r.candidates.push_back(cand);
      cost_next[i] = cost[i] - cand.reward / 100.0f;
      moved[i] = 1.0f;
      rows.push_back(static_cast<int64_t>(i));
      float* bag = action.data() + i * kActionFeatures;
      for (int32_t node : cand.removed) bag[o.nodes[static_cast<size_t>(node)].op] += kActionScale;
      for (size_t s = 0; s < cand.slot_node.size(); ++s) {
        if (cand.slot_node[s] < 0) bag[kNumOpTypes + cand.slot_record[s].op] += kActionScale;
      }
    }
    ptrs[i] = &reduced[i];
  }
  const torch::Device dev = device();
  ObservationBatch batch = MakeBatch(ptrs);
  if (!dev.is_cpu()) batch = ToDevice(batch, dev);
  const Encoding enc = encoder_->Encode(batch);
  const auto b = static_cast<int64_t>(n);
  auto vec = [&](std::vector<float>& v, std::vector<int64_t> sizes) {
    return torch::from_blob(v.data(), sizes, torch::kFloat32).clone().to(dev);
  };
  TransitionLatents t;
  t.z = enc.graph_sum / batch.obs_nodes.unsqueeze(1);
  t.z_next = t.z;
  if (!rows.empty()) {
    // One candidate per state that moved: candidate k is the k-th such state's.
    const auto idx = torch::tensor(rows, torch::kInt64).to(dev);
    const auto succ = enc.cand_sum / batch.cand_nodes.unsqueeze(1);
    t.z_next = t.z.index_copy(0, idx, succ);
  }
  t.cost = vec(cost, {b});
  t.cost_next = vec(cost_next, {b});
  t.moved = vec(moved, {b});
  t.action = vec(action, {b, kActionFeatures});
  return t;
}

torch::Tensor WorldModelImpl::Potential(const torch::Tensor& z, const torch::Tensor& cost) {
  // env.cost's return to here is 100 (1 - c): the prior, scaled by a learned weight from 1, plus
  // a learned correction.
  const auto saved = (1.0 - cost) * 100.0;
  return potential_->forward(torch::cat({z, (saved / kValueScale).unsqueeze(1)}, 1)).squeeze(1) *
             kValueScale +
         prior_ * saved;
}

torch::Tensor WorldModelImpl::Dynamics(const torch::Tensor& z, const torch::Tensor& action) {
  return z + dynamics_->forward(torch::cat({z, action}, 1));
}

std::vector<LabelledStep> LabelSteps(const Episode& episode, bool sparse) {
  std::vector<LabelledStep> out;
  const size_t n = episode.steps.size();
  double before = 0;  // return up to the state before step t
  for (size_t t = 0; t < n; ++t) {
    const RolloutStep& s = episode.steps[t];
    const double after = before + s.reward;
    const bool last = t + 1 == n;
    const bool first = t == 0;
    if (!s.observation.nodes.empty() && std::isfinite(s.reward)) {
      LabelledStep l;
      l.observation = &s.observation;
      l.action = s.action;
      l.label_before = sparse && !first ? kNan : static_cast<float>(before);
      l.label_after = sparse && !last ? kNan : static_cast<float>(after);
      out.push_back(l);
    }
    before = after;
  }
  return out;
}

WorldModelLoss ComputeWorldModelLoss(WorldModel& model, const std::vector<LabelledStep>& batch) {
  std::vector<const ObservationFeatures*> obs;
  std::vector<int32_t> actions;
  std::vector<float> labels;  // before labels, then after labels
  for (const LabelledStep& l : batch) {
    obs.push_back(l.observation);
    actions.push_back(l.action);
  }
  for (const LabelledStep& l : batch) labels.push_back(l.label_before);
  for (const LabelledStep& l : batch) labels.push_back(l.label_after);
  const TransitionLatents t = model->Encode(obs, actions);
  const auto pred =
      torch::cat({model->Potential(t.z, t.cost), model->Potential(t.z_next, t.cost_next)});
  const auto label = torch::tensor(labels).to(pred.device());
  const auto known = torch::isfinite(label);
  WorldModelLoss loss;
  if (known.any().item<bool>()) {
    loss.potential = torch::nn::functional::huber_loss(pred.masked_select(known) / kValueScale,
                                                       label.masked_select(known) / kValueScale);
  } else {
    loss.potential = pred.sum() * 0.0;
  }
  const auto predicted = model->Dynamics(t.z, t.action);
  const auto target = t.z_next.detach();
  const auto err = (predicted - target).pow(2).sum(1);
  const auto scale = target.pow(2).sum(1).mean() + 1e-6;
  loss.dynamics = (err * t.moved).sum() / t.moved.sum().clamp_min(1.0) / scale;
  return loss;
}

std::vector<float> PredictRewards(WorldModel& model, const Episode& episode) {
  torch::NoGradGuard no_grad;
  std::vector<float> out(episode.steps.size(), 0.0f);
  std::vector<const ObservationFeatures*> obs;
  std::vector<int32_t> actions;
  for (const RolloutStep& s : episode.steps) {
    obs.push_back(&s.observation);
    actions.push_back(s.action);
  }
  if (obs.empty()) return out;
  const TransitionLatents t = model->Encode(obs, actions);
  const auto r =
      (model->Potential(t.z_next, t.cost_next) - model->Potential(t.z, t.cost)) * t.moved;
  const auto cpu = r.to(torch::kCPU).contiguous();
  for (size_t i = 0; i < out.size(); ++i) out[i] = cpu.data_ptr<float>()[i];
  return out;
}

WorldModelQuality EvaluateWorldModel(WorldModel& model, const std::vector<const Episode*>& episodes,
                                     bool sparse) {
  torch::NoGradGuard no_grad;
  double reward_sum = 0, return_sum = 0, latent_sum = 0;
  int64_t reward_n = 0, return_n = 0, latent_n = 0;
  double exact_sum[3] = {0, 0, 0}, dream_sum[3] = {0, 0, 0};
  int64_t window_n[3] = {0, 0, 0};
  WorldModelQuality q;
  for (const Episode* ep : episodes) {
    std::vector<const ObservationFeatures*> obs;
    std::vector<int32_t> actions;
    std::vector<float> real;
    for (const RolloutStep& s : ep->steps) {
      if (s.observation.nodes.empty() || !std::isfinite(s.reward)) break;
      obs.push_back(&s.observation);
      actions.push_back(s.action);
      real.push_back(s.reward);
    }
    if (obs.size() != ep->steps.size() || obs.empty()) continue;  // only whole episodes
    const auto n = static_cast<int64_t>(obs.size());
    q.steps += n;
    const TransitionLatents t = model->Encode(obs, actions);
    const auto g_before = model->Potential(t.z, t.cost);
    const auto r_hat = ((model->Potential(t.z_next, t.cost_next) - g_before) * t.moved)
                           .to(torch::kCPU)
                           .contiguous();
    const float* rh = r_hat.data_ptr<float>();
    double real_return = 0, model_return = 0;
    for (int64_t i = 0; i < n; ++i) {
      real_return += real[i];
      model_return += rh[i];
      if (!sparse) {
        reward_sum += std::abs(rh[i] - real[i]);
        ++reward_n;
      }
    }
    return_sum += std::abs(model_return - real_return);
    ++return_n;
    // Dynamics, one step from every real state that moved.
    const auto predicted = model->Dynamics(t.z, t.action);
    const auto err = (predicted - t.z_next).pow(2).sum(1) / (t.z_next.pow(2).sum(1).mean() + 1e-6);
    const double moved = t.moved.sum().item<double>();
    if (moved > 0) {
      latent_sum += (err * t.moved).sum().item<double>();
      latent_n += static_cast<int64_t>(moved);
    }
    if (sparse) continue;  // k-step windows need every step's real reward
    for (int w = 0; w < 3; ++w) {
      const int64_t k = kDriftSteps[w];
      if (k > n) continue;
      std::vector<int64_t> starts;
      for (int64_t s = 0; s + k <= n; ++s) starts.push_back(s);
      const auto first = torch::tensor(starts, torch::kInt64).to(t.z.device());
      auto z = t.z.index_select(0, first);
      auto dream = torch::zeros({static_cast<int64_t>(starts.size())}, t.z.options());
      for (int64_t j = 0; j < k; ++j) {
        const auto idx = first + j;
        const auto m = t.moved.index_select(0, idx);
        const auto z_next =
            torch::where(m.unsqueeze(1) > 0, model->Dynamics(z, t.action.index_select(0, idx)), z);
        dream += (model->Potential(z_next, t.cost_next.index_select(0, idx)) -
                  model->Potential(z, t.cost.index_select(0, idx))) *
                 m;
        z = z_next;
      }
      const auto dream_cpu = dream.to(torch::kCPU).contiguous();
      for (size_t s = 0; s < starts.size(); ++s) {
        double real_k = 0, exact_k = 0;
        for (int64_t j = 0; j < k; ++j) {
          real_k += real[starts[s] + j];
          exact_k += rh[starts[s] + j];
        }
        exact_sum[w] += std::abs(exact_k - real_k);
        dream_sum[w] += std::abs(dream_cpu.data_ptr<float>()[s] - real_k);
        ++window_n[w];
      }
    }
  }
  q.reward_error = MeanOr(reward_sum, reward_n);
  q.return_error = MeanOr(return_sum, return_n);
  q.latent_error = MeanOr(latent_sum, latent_n);
  for (int w = 0; w < 3; ++w) {
    q.drift_exact[w] = MeanOr(exact_sum[w], window_n[w]);
    q.drift_latent[w] = MeanOr(dream_sum[w], window_n[w]);
  }
  return q;
}

}  // namespace rewire

// One PPO update of the rewrite policy, in the order of CleanRL's ppo.py: GAE, epochs of shuffled
// minibatches with the clipped objective, value loss and entropy bonus, target-KL early stop.
// The loop around it (rollouts, metrics, checkpoints) is LearnerRank's (learner/training.cc).

#include "learner/ppo.h"

#include <cmath>

#include "learner/data_parallel.h"
#include "learner/policy.h"

namespace rewire {

// ---------------------------------------------------------------------------- one update

StatusOr<UpdateStats> UpdatePolicy(GnnPolicy& policy, torch::optim::Optimizer& optimizer,
                                   RolloutBuffer& buffer, const PpoSection& ppo,
                                   GradientAllReducer& dp, std::mt19937_64& rng) {
  // --- advantages
  buffer.ComputeAdvantages(ppo.gamma, ppo.gae_lambda);
  const std::vector<float>& adv = buffer.advantages();
  const std::vector<float>& ret = buffer.returns();

  // --- optimise the policy and value network
  policy->train();
  double pg_loss_v = 0, v_loss_v = 0, entropy_v = 0, old_kl_v = 0, kl_v = 0;
  std::vector<double> clipfracs;
  int epochs_run = 0;
  // Every rank runs the same number of minibatches (and so of all-reduces) per epoch.
  REWIRE_ASSIGN_OR_RETURN(const int64_t minibatches,
                          GradientAllReducer::MinibatchesPerRank(
                              static_cast<int64_t>(buffer.num_steps()), ppo.minibatch_size, dp));
  // The end of every minibatch, on every rank, with or without samples (data_parallel.h): the
  // mean gradient over the ranks, clipped, then the step.
  auto step_on_mean_gradients = [&]() -> Status {
    REWIRE_RETURN_IF_ERROR(dp.AllReduceGradients(policy->parameters()));
    torch::nn::utils::clip_grad_norm_(policy->parameters(), ppo.max_grad_norm);
    optimizer.step();
    return Status::Ok();
  };
  for (int epoch = 0; epoch < ppo.update_epochs; ++epoch) {
    ++epochs_run;
    for (const std::vector<size_t>& mb : CycleMinibatches(
             buffer.Minibatches(static_cast<size_t>(ppo.minibatch_size), rng), minibatches)) {
      if (mb.empty()) {  // a rank without samples contributes zero gradients
        optimizer.zero_grad();
        REWIRE_RETURN_IF_ERROR(step_on_mean_gradients());
        continue;
      }
      std::vector<const ObservationFeatures*> obs;
      std::vector<int64_t> flat;
      std::vector<float> old_logp, old_value, mb_adv, mb_ret;
      for (size_t i : mb) {
        const RolloutStep& s = buffer.step(i);
        obs.push_back(&s.observation);
        old_logp.push_back(s.logprob);
        old_value.push_back(s.value);
        mb_adv.push_back(adv[i]);
        mb_ret.push_back(ret[i]);
      }
      const ObservationBatch batch = MakeBatch(obs);
      for (size_t k = 0; k < mb.size(); ++k)
        flat.push_back(batch.FlatAction(k, buffer.step(mb[k]).action));
      const PolicyOutput out = policy->Forward(batch);
      auto newlogp = out.logp.index_select(0, torch::tensor(flat));
      auto logratio = newlogp - torch::tensor(old_logp);
      auto ratio = logratio.exp();
      {
        torch::NoGradGuard ng;
        old_kl_v = (-logratio).mean().item<double>();
        kl_v = ((ratio - 1) - logratio).mean().item<double>();
        clipfracs.push_back(
            ((ratio - 1.0).abs() > ppo.clip_coef).to(torch::kFloat32).mean().item<double>());
      }
      auto a = torch::tensor(mb_adv);
      if (ppo.norm_adv && a.size(0) > 1) a = (a - a.mean()) / (a.std() + 1e-8);

      // Policy loss
      auto pg1 = -a * ratio;
      auto pg2 = -a * torch::clamp(ratio, 1 - ppo.clip_coef, 1 + ppo.clip_coef);
      auto pg_loss = torch::max(pg1, pg2).mean();

      // Value loss, in the value head's units (kValueScale percent of the runtime): the
      // returns are tens, the head's outputs and this loss of order one.
      auto r = torch::tensor(mb_ret) / kValueScale;
      auto v = out.value / kValueScale;
      auto v_loss = torch::Tensor();
      if (ppo.clip_vloss) {
        auto ov = torch::tensor(old_value) / kValueScale;
        auto v_unclipped = (v - r).pow(2);
        auto v_clipped = ov + torch::clamp(v - ov, -ppo.clip_coef, ppo.clip_coef);
        v_loss = 0.5 * torch::max(v_unclipped, (v_clipped - r).pow(2)).mean();
      } else {
        v_loss = 0.5 * (v - r).pow(2).mean();
      }

      auto entropy_loss = out.entropy.mean();
      auto loss = pg_loss - ppo.ent_coef * entropy_loss + v_loss * ppo.vf_coef;

      optimizer.zero_grad();
      loss.backward();
      REWIRE_RETURN_IF_ERROR(step_on_mean_gradients());
      pg_loss_v = pg_loss.item<double>();
      v_loss_v = v_loss.item<double>();
      entropy_v = entropy_loss.item<double>();
    }
    REWIRE_ASSIGN_OR_RETURN(
        kl_v, dp.AllReduceScalar(kl_v, ReduceKind::kMean));  // every rank decides alike
    if (ppo.target_kl > 0 && kl_v > ppo.target_kl) break;
  }

  // Explained variance of the acting values against the returns.
  double explained_var = std::nan("");
  {
    std::vector<double> y(ret.begin(), ret.end()), p;
    for (size_t i = 0; i < buffer.num_steps(); ++i) p.push_back(buffer.step(i).value);
    const double my = MeanOf(y);
    double var_y = 0, var_d = 0, md = 0;
    for (size_t i = 0; i < y.size(); ++i) md += (y[i] - p[i]) / y.size();
    for (size_t i = 0; i < y.size(); ++i) {
      var_y += (y[i] - my) * (y[i] - my);
      var_d += (y[i] - p[i] - md) * (y[i] - p[i] - md);
    }
    if (var_y > 0) explained_var = 1 - var_d / var_y;
  }

  UpdateStats stats;
  stats.policy_loss = pg_loss_v;
  stats.value_loss = v_loss_v;
  stats.entropy = entropy_v;
  stats.old_approx_kl = old_kl_v;
  stats.approx_kl = kl_v;
  stats.clipfrac = MeanOf(clipfracs);
  stats.explained_variance = explained_var;
  stats.epochs = epochs_run;
  return stats;
}

}  // namespace rewire

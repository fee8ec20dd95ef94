// PPO for the rewrite policy, in the order of CleanRL's ppo.py: set-up, rollouts (whole
// episodes), GAE, epochs of shuffled minibatches with the clipped objective, value loss and
// entropy bonus, target-KL early stop, metrics, checkpoint. Then evaluation of a checkpoint
// against the non-learned searches.

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "env/finish.h"
#include "env/search.h"
#include "graph/files.h"
#include "graph/json.h"
#include "graph/models/load.h"
#include "kernels/cost_backends.h"
#include "kernels/rule_verify.h"
#include "learner/agent.h"
#include "learner/data_parallel.h"
#include "learner/policy.h"
#include "learner/ppo.h"
#include "learner/trainer.h"
#include "learner/training.h"

namespace rewire {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

}  // namespace

double MeanOf(const std::vector<double>& v) {
  if (v.empty()) return std::nan("");
  double s = 0;
  for (double x : v) s += x;
  return s / v.size();
}

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

// ---------------------------------------------------------------------------- training

Status Train(const TrainConfig& c, const RunPaths& paths, bool resume,
             const std::function<void(const std::string&)>& log) {
  REWIRE_ASSIGN_OR_RETURN(
      std::unique_ptr<LearnerRank> learner,
      LearnerRank::Create(c, paths, resume ? ResumeMode::kResume : ResumeMode::kFresh, log));
  while (!learner->finished()) {
    // --- rollouts: whole episodes, one model sampled per episode
    const auto start = Clock::now();
    REWIRE_ASSIGN_OR_RETURN(std::vector<Episode> episodes,
                            learner->CollectEpisodes(c.ppo.episodes_per_update));
    const double rollout_s = std::chrono::duration<double>(Clock::now() - start).count();
    // --- advantages, the PPO epochs, metrics and checkpoint
    REWIRE_RETURN_IF_ERROR(learner->Update(std::move(episodes), rollout_s));
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------- evaluation

StatusOr<std::vector<EvalResult>> Evaluate(const TrainConfig& c, const RunPaths& paths,
                                           const std::string& checkpoint,
                                           const std::function<void(const std::string&)>& log) {
  REWIRE_RETURN_IF_ERROR(ValidateTrainConfig(c));
  SetComputeThreads(c.run.threads);
  REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<Agent> agent, Agent::Load(checkpoint, &c.gnn));
  const std::vector<ModelSpec>& specs = c.eval.models.empty() ? c.env.models : c.eval.models;
  REWIRE_ASSIGN_OR_RETURN(Resources res, LoadResources(c, paths, specs));
  const fs::path dir(c.run.dir);
  std::error_code ec;
  fs::create_directories(dir / "optimized", ec);

  std::vector<EvalResult> results;
  for (auto& [label, graph] : res.models) {
    EvalResult r;
    r.model = label;
    r.samples = c.eval.samples;
    AgentSearchOptions ao;
    ao.horizon = c.env.horizon;
    ao.max_candidates = static_cast<size_t>(c.env.max_candidates);
    ao.samples = c.eval.samples;
    ao.seed = c.run.seed;
    REWIRE_ASSIGN_OR_RETURN(AgentSearchResult found,
                            agent->Optimize(graph, res.rules, *res.cost, ao));
    r.initial_cost_ms = found.best.initial_cost_ms;
    r.greedy_policy_cost_ms = found.greedy_policy_cost_ms;
    r.sampled_best_cost_ms = found.sampled_best_cost_ms;
    r.rl_seconds = found.best.seconds;
    Graph best = std::move(found.best.best);
    if (c.eval.guided_budget > 0) {
      GuidedSearchOptions go;
      go.budget = c.eval.guided_budget;
      go.beam_width = c.eval.beam_width;
      go.expand = c.eval.expand;
      go.horizon = c.env.horizon;
      go.max_candidates = static_cast<size_t>(c.env.max_candidates);
      REWIRE_ASSIGN_OR_RETURN(SearchResult guided,
                              agent->GuidedSearch(graph, res.rules, *res.cost, go));
      r.guided_cost_ms = guided.final_cost_ms;
      r.guided_seconds = guided.seconds;
      r.guided_expansions = guided.iterations;
      if (guided.final_cost_ms < found.best.final_cost_ms) best = std::move(guided.best);
    }
    // Fold, verify and write the best graph of the policy's searches.
    std::string file = label;
    for (char& ch : file) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-') ch = '_';
    }
    FinishOptions finish;
    finish.rtol = 1e-3;
    finish.onnx_path = (dir / "optimized" / (file + ".onnx")).string();
    REWIRE_ASSIGN_OR_RETURN(FinishedGraph done,
                            FinishSearch(graph, std::move(best), *res.cost, finish));
    const Equivalence& eq = done.equivalence;
    r.verified = eq.verified;
    r.max_rel_error = eq.max_rel;
    if (eq.verified) r.onnx_path = finish.onnx_path;
    for (const std::string& b : c.eval.baselines) {
      SearchOptions so;
      so.algorithm = b;
      so.budget = c.eval.budget;
      so.seed = c.run.seed;
      so.max_candidates = static_cast<size_t>(c.env.max_candidates);
      REWIRE_ASSIGN_OR_RETURN(SearchResult sr, RunSearch(graph, res.rules, *res.cost, so));
      r.baselines.emplace_back(b, sr.final_cost_ms);
      r.baseline_seconds.emplace_back(b, sr.seconds);
    }
    if (log) {
      const double rl_best = r.sampled_best_cost_ms > 0
                                 ? std::min(r.sampled_best_cost_ms, r.greedy_policy_cost_ms)
                                 : r.greedy_policy_cost_ms;
      std::string base;
      for (const auto& [name, ms] : r.baselines) {
        base += fmt::format("  {} {:.3f}x", name, r.initial_cost_ms / ms);
      }
      std::string guided;
      if (r.guided_cost_ms > 0) {
        guided = fmt::format("  guided {:.3f}x ({} graphs, {:.1f}s)",
                             r.initial_cost_ms / r.guided_cost_ms, r.guided_expansions,
                             r.guided_seconds);
      }
      log(fmt::format(
          "{:<28} rl {:.3f}x (greedy policy {:.3f}x, best of {} samples, {:.1f}s){}{}  verified {}",
          label, r.initial_cost_ms / rl_best, r.initial_cost_ms / r.greedy_policy_cost_ms,
          r.samples, r.rl_seconds, guided, base, r.verified ? "yes" : "NO: " + eq.message));
    }
    results.push_back(std::move(r));
  }

  // eval.json: the format `rewire report` reads.
  Json rows = Json::array();
  for (const EvalResult& r : results) {
    Json baselines = Json::object(), baseline_seconds = Json::object();
    for (const auto& [name, ms] : r.baselines) baselines[name] = JsonDecimal(ms, 8);
    for (const auto& [name, s] : r.baseline_seconds) baseline_seconds[name] = JsonDecimal(s, 8);
    Json row;
    row["model"] = r.model;
    row["initial_cost_ms"] = JsonDecimal(r.initial_cost_ms, 8);
    row["greedy_policy_cost_ms"] = JsonDecimal(r.greedy_policy_cost_ms, 8);
    row["sampled_best_cost_ms"] =
        r.samples > 0 ? JsonDecimal(r.sampled_best_cost_ms, 8) : Json(nullptr);
    row["samples"] = r.samples;
    row["baselines"] = std::move(baselines);
    row["baseline_seconds"] = std::move(baseline_seconds);
    row["rl_seconds"] = JsonDecimal(r.rl_seconds, 8);
    row["guided_cost_ms"] = r.guided_cost_ms > 0 ? JsonDecimal(r.guided_cost_ms, 8) : Json(nullptr);
    row["guided_seconds"] = JsonDecimal(r.guided_seconds, 8);
    row["guided_expansions"] = r.guided_expansions;
    row["verified"] = r.verified;
    row["max_rel_error"] = JsonDecimal(r.max_rel_error, 8);
    row["onnx"] = r.onnx_path;
    rows.push_back(std::move(row));
  }
  Json js;
  js["policy"] = checkpoint;
  js["policy_version"] = agent->policy_version();
  js["cost_model"] = res.cost->Name();
  js["results"] = std::move(rows);
  REWIRE_RETURN_IF_ERROR(WriteFileAtomic((dir / "eval.json").string(), JsonText(js, 2) + "\n"));
  return results;
}

}  // namespace rewire
